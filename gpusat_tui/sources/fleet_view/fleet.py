"""The fleet view's source: every host's cards, read from a Prometheus server's HTTP API.

Each node runs ``gpusat-tui export``; Prometheus scrapes them; `FleetSource` asks Prometheus
(``/api/v1/query``) once per interval for the gpusat card series and the verdicts (with a
`FleetView`, the dashboard's: only the fleet's summary and the rows on screen, `view_poll`), and
yields
the same `Frame`s as the live and replay sources: one `CardReading` per host x card, with
``host`` set, so card ids (``host/vendor:index``) stay unique across hosts while single-host
ids are unchanged. Hosts are told apart by the ``host`` label the exporter sets, else by
Prometheus' ``instance``. At start-up one ``/api/v1/query_range`` fills the charts' history of
the cards the list opens on (the worst first: `fleet_answers.history_selector`), never the whole
fleet's;
when it is refused, cut (over the size limit) or fails, every Frame says so (a ``prometheus``
`ToolError`) until live polls have filled the charts.

The verdicts the exporters computed (they see the trainer, its workers and the probe, which the
fleet does not) are kept in `FleetSource.verdicts` and `FleetSource.job_verdicts`, for
`analysis.fleet.FleetTracker`; Frames stay raw figures, as everywhere else.

Nothing the server does can freeze, crash or hold open the view: each request runs in a daemon
thread (`daemon_call`) with a deadline over the whole request, body included
(`prometheus_api`), so a server that trickles its answer costs one poll ``timeout`` seconds
and never delays the exit; an unreachable or slow server, an HTTP or query error or an answer
that is not what the API documents becomes a `ToolError` (tool ``prometheus``) on that Frame
and the cards are carried over with ``stale_s`` = their age. A host whose series are gone (its
exporter stopped and Prometheus marked its series stale) keeps its cards on screen marked
stale, with an error naming it, for `FORGET_S`; then its cards are dropped with a note. What is
asked and how the answers become cards is `fleet_answers` (pure); the HTTP API and its errors,
`prometheus_api`.

Cost (``benchmarks/bench_export.py``): the answer for 64 hosts x 8 cards is about 1.4 MB of
JSON per poll, parsed into a Frame in the request's thread, not the UI's.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from gpusat_tui.errors import GpusatError
from gpusat_tui.model import CardReading, Frame, JobContext, ToolError
from gpusat_tui.sources.fleet_view.daemon_call import in_daemon_thread
from gpusat_tui.sources.fleet_view.fleet_answers import (
    CardKey,
    FleetAnswer,
    RemoteVerdict,
    frame_from_answer,
    group_by_job,
    history_frames,
    history_selector,
    instant_query,
)
from gpusat_tui.sources.fleet_view.prometheus_api import FleetError, PrometheusAPI, parse_matcher
from gpusat_tui.sources.fleet_view.view_poll import ViewPoll
from gpusat_tui.sources.fleet_view.view_request import FleetView

__all__ = ["FORGET_S", "FleetSource", "build_fleet"]

T = TypeVar("T")

#: Seconds a host that stopped reporting stays on screen (marked stale) before it is dropped.
FORGET_S = 600.0
#: How many polls of history the start-up query_range asks for (the charts hold 120 points).
HISTORY_POINTS = 120


# --- the source ---------------------------------------------------------------------------------


@dataclass
class _Seen:
    card: CardReading
    at: float


class FleetSource:
    """Yields one Frame per interval with every host's cards (see the module docstring)."""

    def __init__(
        self,
        url: str,
        matchers: Sequence[str] = (),
        interval: float = 1.0,
        timeout: float | None = None,
        *,
        api: PrometheusAPI | None = None,
        clock: Callable[[], float] = time.time,
        history: bool = True,
        forget_s: float = FORGET_S,
        view: FleetView | None = None,
    ) -> None:
        """``view``: what the dashboard shows (`FleetView`); with it each refresh asks for the
        fleet's summary and the rows on screen (`view_poll`), without it for every card (what
        ``check`` and a script want)."""
        self.interval = float(interval)
        self.timeout = float(timeout) if timeout is not None else min(max(2.0, interval), 10.0)
        self.api = api or PrometheusAPI(url, self.timeout)
        self.matchers = [parse_matcher(m) for m in matchers]
        self.clock = clock
        self.history = history
        self.forget_s = float(forget_s)
        #: Latest verdict of every card / of every host's job, as the exporters published it.
        self.verdicts: dict[str, RemoteVerdict] = {}
        self.job_verdicts: dict[str, RemoteVerdict] = {}
        #: Latest busy share (0..1, from the exporters' counters) of every card.
        self.busy: dict[str, float] = {}
        self.jobs: list[JobContext] = []
        self.tools: dict[str, str] = {"prometheus": self.api.base_url}
        self.versions: dict[str, str | None] = {}
        self._seen: dict[CardKey, _Seen] = {}
        self._forgotten: set[str] = set()
        self._seq = 0
        self._closed = False
        self._hosts = 0
        #: How the last request failed ("unreachable", "timeout"...), None when it answered.
        self._failing: str | None = None
        #: Why the start-up history is missing (refused, cut, failed), and how many polls
        #: have said so: it is said until live polls have filled the charts.
        self._history_error: ToolError | None = None
        self._history_said = 0
        self.view = view
        self._view_poll = ViewPoll(self) if view is not None else None

    @property
    def label(self) -> str:
        """``fleet prom:9090 · 64 hosts``, and how the server failed while it does: the status
        line shows this first, before the list of stale cards."""
        server = urllib.parse.urlsplit(self.api.base_url).netloc or self.api.base_url
        hosts = f" · {self._hosts} hosts" if self._hosts else ""
        failing = f" · server {self._failing}" if self._failing else ""
        return f"fleet {server}{hosts}{failing}"

    def next_seq(self) -> int:
        seq, self._seq = self._seq, self._seq + 1
        return seq

    def history_errors(self) -> list[ToolError]:
        """The start-up history's failure, said until live polls have filled the charts."""
        if self._history_error is None or self._history_said >= HISTORY_POINTS:
            return []
        self._history_said += 1
        return [self._history_error]

    def set_failing(self, kind: str | None, hosts: int | None = None) -> None:
        self._failing = kind
        if hosts is not None:
            self._hosts = hosts

    async def get(
        self, endpoint: str, params: Mapping[str, str], read: Callable[[Any], T]
    ) -> T:
        """``read(data)`` of one request, both in a daemon thread (the answer is parsed off the
        event loop); the view's poll (`view_poll`) asks through it too. The request's deadline
        bounds the wait; this one is the backstop, should anything else in the thread hang
        (the thread is then dropped, nothing waits on it)."""
        def request() -> T:
            return read(self.api.get(endpoint, params))

        return await asyncio.wait_for(
            in_daemon_thread(request, name="gpusat-prometheus"), self.timeout * 2 + 1.0
        )

    def request_error(self, exc: Exception, what: str = "") -> ToolError:
        """The `ToolError` a failed request shows: refused, cut, timed out or unreadable,
        never swallowed. ``what`` names the request when it is not the poll's."""
        if isinstance(exc, FleetError):
            message, kind = str(exc), exc.kind
        elif isinstance(exc, TimeoutError):
            message, kind = f"no answer within {self.timeout * 2 + 1:g} s", "timeout"
        else:  # an answer no test foresaw: say so, keep the view alive
            message, kind = f"unreadable answer: {type(exc).__name__}: {exc}", "parse"
        if what:
            message = f"{what}{message}; the charts start empty"
        return ToolError(tool="prometheus", message=message, kind=kind)

    async def _history(self, first: Frame) -> list[Frame]:
        """The charts' past for the cards the list opens on (`history_selector`), one point
        per poll up to the first poll's time."""
        end = first.t
        step = max(self.interval, 1.0)
        kinds = {card_id: verdict.kind for card_id, verdict in self.verdicts.items()}
        params = {
            "query": history_selector(first, kinds, self.matchers),
            "start": f"{end - step * (HISTORY_POINTS - 1):.3f}",
            "end": f"{end:.3f}",
            "step": f"{step:g}",
        }
        past = await self.get("query_range", params, history_frames)
        return [frame for frame in past if frame.t < end]

    async def poll_once(self) -> Frame:
        """Ask once; never raises for the server's misbehaviour."""
        if self._view_poll is not None:
            return await self._view_poll.poll()
        t = self.clock()
        errors: list[ToolError] = []
        notes: list[str] = []
        answer: FleetAnswer | None = None
        try:
            answer = await self.get(
                "query", {"query": instant_query(self.matchers)}, frame_from_answer
            )
        except Exception as exc:
            errors.append(self.request_error(exc))
        now = self.clock()
        self._failing = errors[0].kind if errors else None
        if self._history_error is not None and self._history_said < HISTORY_POINTS:
            # Said until live polls have filled the charts the history should have filled.
            errors.append(self._history_error)
            self._history_said += 1
        if answer is not None:
            notes.extend(answer.notes)
            for key, card in answer.cards.items():
                self._seen[key] = _Seen(card, now)
                self._forgotten.discard(key[0])
            self.verdicts = answer.verdicts
            self.job_verdicts = answer.job_verdicts
            self.busy = answer.busy
            self.jobs = answer.jobs
            if not answer.cards and not self._seen:
                notes.append(
                    "Prometheus has no gpusat series"
                    + (f" matching {', '.join(self.matchers)}" if self.matchers else "")
                    + ": is gpusat-tui export running and scraped?"
                )
        cards: list[CardReading] = []
        stale_hosts: dict[str, float] = {}
        for key, seen in sorted(self._seen.items()):
            fresh = answer is not None and key in answer.cards
            if fresh:
                cards.append(seen.card)
                continue
            age = max(0.0, now - seen.at) + (seen.card.stale_s or 0.0)
            if answer is not None and age > self.forget_s:
                del self._seen[key]
                if key[0] not in self._forgotten:
                    self._forgotten.add(key[0])
                    notes.append(f"{key[0]}: no figures for {age:.0f} s, dropped from the view")
                continue
            cards.append(seen.card.model_copy(update={"stale_s": age}))
            if answer is not None:
                stale_hosts[key[0]] = max(stale_hosts.get(key[0], 0.0), age)
        for host, age in stale_hosts.items():
            errors.append(ToolError(
                tool=host, kind="stale",
                message=f"no figures for {age:.0f} s (exporter down or not scraped)",
            ))
        self._hosts = len({key[0] for key in self._seen})
        jobs = self.jobs
        frame = Frame(t=t, seq=self._seq, cards=group_by_job(cards, jobs), errors=errors,
                      notes=notes, jobs=jobs)
        self._seq += 1
        return frame

    async def frames(self) -> AsyncGenerator[Frame, None]:
        """The start-up history first, then one poll per interval. The first poll is asked
        before the history (it says which cards the list opens on) and yielded after it."""
        next_start = time.monotonic()
        if self.history:
            first = await self.poll_once()
            self._seq = first.seq
            try:
                past = await self._history(first) if first.cards else []
            except Exception as exc:  # no history is no reason to stop, nor to keep quiet
                past = []
                self._history_error = self.request_error(exc, "start-up history: ")
                self._history_said += 1
                first = first.model_copy(update={"errors": [*first.errors, self._history_error]})
            for frame in [*past, first]:
                if self._closed:
                    return
                yield frame.model_copy(update={"seq": self._seq})
                self._seq += 1
            next_start += self.interval
        try:
            while not self._closed:
                yield await self.poll_once()
                next_start += self.interval
                now = time.monotonic()
                if next_start <= now:
                    next_start = now
                else:
                    await asyncio.sleep(next_start - now)
        finally:
            self._closed = True

    async def aclose(self) -> None:
        """Stop. A request in flight ends on its own timeout; nothing waits for it."""
        self._closed = True


def build_fleet(
    url: str, matches: Sequence[str] = (), interval: float = 1.0, *, view: bool = True
) -> tuple[Any, Any]:
    """(source, tracker) of the fleet view, for the app. Raises `GpusatError` on a bad URL or
    ``--match`` (one clear message, no TUI). ``view``: the source asks only for what the
    dashboard shows (`FleetView`); False: every card (``check``)."""
    from gpusat_tui.analysis.fleet import FleetTracker

    try:
        source = FleetSource(url, matches, interval=interval, view=FleetView() if view else None)
    except ValueError as exc:
        raise GpusatError(str(exc)) from None
    tracker = FleetTracker(
        lambda: source.verdicts, lambda: source.job_verdicts, busy=lambda: source.busy
    )
    tracker.view = source.view
    return source, tracker
