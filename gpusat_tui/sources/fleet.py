"""The fleet view's source: every host's cards, read from a Prometheus server's HTTP API.

Each node runs ``gpusat-tui export``; Prometheus scrapes them; `FleetSource` asks Prometheus
(``/api/v1/query``) once per interval for the gpusat card series and the verdicts, and yields
the same `Frame`s as the live and replay sources: one `CardReading` per host x card, with
``host`` set, so card ids (``host/vendor:index``) stay unique across hosts while single-host
ids are unchanged. Hosts are told apart by the ``host`` label the exporter sets, else by
Prometheus' ``instance``. At start-up one ``/api/v1/query_range`` fills the charts' history.

The verdicts the exporters computed (they see the trainer, its workers and the probe, which the
fleet does not) are kept in `FleetSource.verdicts` and `FleetSource.job_verdicts`, for
`analysis.fleet.FleetTracker`; Frames stay raw figures, as everywhere else.

Nothing the server does can freeze or crash the view: each request runs in a thread with a
timeout; an unreachable or slow server, an HTTP or query error or an answer that is not what
the API documents becomes a `ToolError` (tool ``prometheus``) on that Frame and the cards are
carried over with ``stale_s`` = their age. A host whose series are gone (its exporter stopped
and Prometheus marked its series stale) keeps its cards on screen marked stale, with an error
naming it, for `FORGET_S`; then its cards are dropped with a note. Label values are cleaned of
control characters and capped before they are used (they end up on the terminal).

Cost (``benchmarks/bench_export.py``): the answer for 64 hosts x 8 cards is about 1.4 MB of
JSON per poll, parsed into a Frame in the request's thread, not the UI's.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpusat_tui.errors import GpusatError
from gpusat_tui.model import VENDORS, VERDICT_KINDS, CardReading, Frame, ToolError

__all__ = [
    "FORGET_S",
    "FleetError",
    "FleetSource",
    "PrometheusAPI",
    "RemoteVerdict",
    "frame_from_answer",
    "history_frames",
    "parse_matcher",
    "selector",
]

#: Seconds a host that stopped reporting stays on screen (marked stale) before it is dropped.
FORGET_S = 600.0
#: How many polls of history the start-up query_range asks for (the charts hold 120 points).
HISTORY_POINTS = 120
#: Longest label value kept (names, hosts); longer ones are cut with an ellipsis.
MAX_LABEL_CHARS = 64

MIB = 1024 * 1024

#: Card figures read every poll: metric -> (CardReading field, factor to its unit).
FIGURES: dict[str, tuple[str, float]] = {
    "gpusat_card_utilization_ratio": ("util_pct", 100.0),
    "gpusat_card_memory_used_bytes": ("mem_used_mib", 1.0 / MIB),
    "gpusat_card_memory_total_bytes": ("mem_total_mib", 1.0 / MIB),
    "gpusat_card_memory_used_ratio": ("mem_pct", 100.0),
    "gpusat_card_power_watts": ("power_w", 1.0),
    "gpusat_card_power_limit_watts": ("power_cap_w", 1.0),
    "gpusat_card_temperature_celsius": ("temp_c", 1.0),
    "gpusat_card_figures_age_seconds": ("stale_s", 1.0),
}
#: The figures the charts draw: all the start-up history asks for (a quarter of the points).
HISTORY_FIGURES = (
    "gpusat_card_utilization_ratio", "gpusat_card_memory_used_ratio",
    "gpusat_card_power_watts", "gpusat_card_power_limit_watts",
)

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_MATCHER = re.compile(r"^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)(.*)$")


class FleetError(GpusatError):
    """A request to Prometheus failed; ``kind`` says how (for the status line)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class RemoteVerdict:
    """A verdict as an exporter published it: kind and cause only (the figures stay there)."""

    kind: str
    cause: str | None = None


# --- PromQL ------------------------------------------------------------------------------------


def parse_matcher(text: str) -> str:
    """``--match 'job=train'`` (also ``!=``, ``=~``, ``!~``) -> a PromQL matcher ``job="train"``.

    Raises ValueError with a plain message for anything else.
    """
    match = _MATCHER.match(text)
    if not match:
        raise ValueError(
            f"--match expects LABEL=VALUE (or LABEL!=VALUE, LABEL=~REGEX, LABEL!~REGEX), "
            f"got {text!r}"
        )
    label, op, value = match.groups()
    if label == "__name__":
        raise ValueError("--match cannot select on the metric name")
    return f"{label}{op}{json.dumps(value.strip())}"


def selector(names: Iterable[str], matchers: Sequence[str] = ()) -> str:
    """``{__name__=~"a|b", job="train"}``: one vector selector for several metrics."""
    alternatives = "|".join(re.escape(n) for n in names)
    return "{" + ", ".join([f'__name__=~"{alternatives}"', *matchers]) + "}"


#: Label that marks the busy-share series in the instant query's answer (see `instant_query`).
BUSY_LABEL = "gpusat_fleet_figure"


def instant_query(matchers: Sequence[str] = ()) -> str:
    """Every figure, the verdict series that are 1, and each card's busy share, in one query.

    The busy share is ``irate`` of the exporter's ``gpusat_card_busy_seconds_total``: the mean
    utilisation between the last two scrapes, counted at every poll of the node. The gauge
    alone, sampled once per scrape, aliases a swinging utilisation (a card bursting on every
    second poll, scraped every second poll, reads busy every time). ``or`` matches label sets,
    so the busy series get a label of their own and the verdicts carry ``kind``: nothing is
    dropped.
    """
    braces = "{" + ", ".join(matchers) + "}" if matchers else ""
    busy = (
        f'label_replace(irate(gpusat_card_busy_seconds_total{braces}[5m]), "{BUSY_LABEL}", '
        '"busy_ratio", "", "")'
    )
    return (
        f"{selector([*FIGURES, 'gpusat_exporter_last_poll_timestamp_seconds'], matchers)}"
        f" or gpusat_card_verdict{braces} == 1 or gpusat_job_verdict{braces} == 1 or {busy}"
    )


# --- HTTP ---------------------------------------------------------------------------------------


class PrometheusAPI:
    """Blocking GETs of the Prometheus HTTP API (run them in a thread)."""

    def __init__(self, base_url: str, timeout: float = 5.0) -> None:
        parsed = urllib.parse.urlsplit(base_url.strip())
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise GpusatError(
                f"--prometheus expects the server's URL, like http://prom:9090, got {base_url!r}"
            )
        self.base_url = base_url.strip().rstrip("/")
        self.timeout = float(timeout)

    def get(self, endpoint: str, params: Mapping[str, str]) -> Any:
        """``data`` of a successful answer; raises `FleetError` for everything else."""
        url = f"{self.base_url}/api/v1/{endpoint}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                body = answer.read()
        except urllib.error.HTTPError as exc:  # 400/422/503: the API still explains in JSON
            body = exc.read() if exc.fp is not None else b""
            exc.close()
            message = _api_error(body) or f"HTTP {exc.code} {exc.reason}"
            raise FleetError(message, "query" if exc.code in (400, 422) else "http") from None
        except TimeoutError:
            raise FleetError(f"no answer within {self.timeout:g} s", "timeout") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise FleetError(f"no answer within {self.timeout:g} s", "timeout") from None
            raise FleetError(f"cannot reach {self.base_url}: {reason}", "unreachable") from None
        except (OSError, ValueError) as exc:  # reset mid-answer, bad chunking...
            raise FleetError(f"request failed: {exc}", "unreachable") from None
        return decode_answer(body)


def _api_error(body: bytes) -> str | None:
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if isinstance(doc, dict) and doc.get("status") == "error":
        return f"{doc.get('errorType', 'error')}: {doc.get('error', '')}"[:300]
    return None


def decode_answer(body: bytes) -> Any:
    """``data`` of an API answer, or `FleetError` (``query`` or ``parse``)."""
    try:
        doc = json.loads(body)
    except ValueError:
        raise FleetError("the answer is not JSON (is this a Prometheus server?)", "parse") from None
    if not isinstance(doc, dict) or "status" not in doc:
        raise FleetError("the answer is not a Prometheus API answer", "parse")
    if doc["status"] != "success":
        raise FleetError(_api_error(body) or "the query failed", "query")
    data = doc.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise FleetError("the answer has no result list", "parse")
    return data


# --- answers -> Frames --------------------------------------------------------------------------


def clean_label(value: object) -> str:
    """A label value fit for the terminal: no control or format characters, capped."""
    text = "".join(
        ch if unicodedata.category(ch)[0] != "C" else " " for ch in str(value)
    ).strip()
    if len(text) > MAX_LABEL_CHARS:
        text = text[: MAX_LABEL_CHARS - 1] + "…"
    return text


def _number(text: object) -> float | None:
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if value == value and abs(value) != float("inf") else None


def host_of(labels: Mapping[str, str]) -> str:
    """The host a series belongs to: the exporter's ``host`` label, else ``instance``."""
    return clean_label(labels.get("host") or labels.get("instance") or "?") or "?"


#: (host, vendor, index, instance): the instance is "" for a whole card, so keys sort.
_CardKey = tuple[str, str, int, str]

#: What a part of a card (a MIG instance) may be called in a card id (`CardReading.instance`).
_INSTANCE = re.compile(r"[A-Za-z0-9_.-]{1,32}")


def _card_key(labels: Mapping[str, str], notes: dict[str, None]) -> _CardKey | None:
    """Which card a series is for. The parts of one card (MIG instances) share its index: the
    exporter's ``card`` label tells them apart (``nvidia:0/mig1``)."""
    vendor = labels.get("vendor")
    host = host_of(labels)
    if vendor not in VENDORS:
        notes.setdefault(f"{host}: unknown vendor {clean_label(vendor)!r} skipped", None)
        return None
    try:
        index = int(labels.get("index", ""))
    except ValueError:
        notes.setdefault(f"{host}: card without a numeric index skipped", None)
        return None
    card = str(labels.get("card") or "")
    _, whole, instance = card.rpartition(f"{vendor}:{index}")
    if not whole or not instance:
        return host, vendor, index, ""
    instance = instance[1:] if instance.startswith("/") else ""
    if not _INSTANCE.fullmatch(instance):
        notes.setdefault(
            f"{host}: card {clean_label(card)!r} is not vendor:index/instance, skipped", None
        )
        return None
    return host, vendor, index, instance


def _key_id(key: _CardKey) -> str:
    """The id the `CardReading` of ``key`` has (``host/vendor:index[/instance]``)."""
    host, vendor, index, instance = key
    return f"{host}/{vendor}:{index}/{instance}" if instance else f"{host}/{vendor}:{index}"


@dataclass
class FleetAnswer:
    """One instant query, read: cards per key, verdicts, hosts seen."""

    cards: dict[_CardKey, CardReading]
    verdicts: dict[str, RemoteVerdict]
    job_verdicts: dict[str, RemoteVerdict]
    notes: list[str]
    #: Card id -> mean utilisation (0..1) between the last two scrapes, from the counter.
    busy: dict[str, float] = field(default_factory=dict)


def frame_from_answer(data: Mapping[str, Any]) -> FleetAnswer:
    """Read the `instant_query` result into cards and verdicts. Pure; never raises on odd
    series (they are skipped, with a note when it tells the user something)."""
    figures: dict[_CardKey, dict[str, Any]] = {}
    verdicts: dict[str, RemoteVerdict] = {}
    jobs: dict[str, RemoteVerdict] = {}
    busy: dict[str, float] = {}
    notes: dict[str, None] = {}
    for series in data.get("result", []):
        if not isinstance(series, dict):
            continue
        labels = series.get("metric")
        value = series.get("value")
        if not isinstance(labels, dict) or not isinstance(value, list) or len(value) != 2:
            continue
        name = labels.get("__name__")
        if name == "gpusat_job_verdict":
            kind = labels.get("kind")
            if kind in VERDICT_KINDS and _number(value[1]) == 1.0:
                jobs.setdefault(host_of(labels), RemoteVerdict(kind, labels.get("cause") or None))
            continue
        if name == "gpusat_exporter_last_poll_timestamp_seconds":
            continue
        key = _card_key(labels, notes)
        if key is None:
            continue
        if labels.get(BUSY_LABEL) == "busy_ratio":
            share = _number(value[1])
            if share is not None:
                busy.setdefault(_key_id(key), share)
            continue
        if name == "gpusat_card_verdict":
            kind = labels.get("kind")
            if kind in VERDICT_KINDS and _number(value[1]) == 1.0:
                verdicts.setdefault(_key_id(key), RemoteVerdict(kind, labels.get("cause") or None))
            continue
        target = FIGURES.get(str(name))
        if target is None:
            continue
        entry = figures.setdefault(key, {
            "name": clean_label(labels["name"]) if labels.get("name") else None,
            "uuid": clean_label(labels["uuid"]) if labels.get("uuid") else None,
        })
        field, factor = target
        number = _number(value[1])
        entry.setdefault(field, None if number is None else number * factor)
    cards = {key: _reading(key, entry) for key, entry in sorted(figures.items())}
    return FleetAnswer(cards, verdicts, jobs, list(notes), busy)


def _reading(key: _CardKey, entry: dict[str, Any]) -> CardReading:
    host, vendor, index, instance = key
    values = dict(entry)
    if not values.get("stale_s"):
        values["stale_s"] = None  # 0 = fresh on the exporter
    return CardReading(vendor=vendor, index=index, instance=instance or None,  # type: ignore[arg-type]
                       host=host, tool="prometheus", **values)


def history_frames(data: Mapping[str, Any]) -> list[Frame]:
    """Frames from a ``query_range`` answer over `HISTORY_FIGURES`, one per step, oldest first.

    Only what the charts draw; a card missing at a step is missing from that Frame.
    """
    points: dict[float, dict[_CardKey, dict[str, Any]]] = {}
    names: dict[_CardKey, dict[str, Any]] = {}
    notes: dict[str, None] = {}
    for series in data.get("result", []):
        if not isinstance(series, dict) or not isinstance(series.get("values"), list):
            continue
        labels = series.get("metric")
        if not isinstance(labels, dict):
            continue
        target = FIGURES.get(str(labels.get("__name__")))
        key = _card_key(labels, notes) if target is not None else None
        if key is None or target is None:
            continue
        names.setdefault(key, {
            "name": clean_label(labels["name"]) if labels.get("name") else None,
            "uuid": clean_label(labels["uuid"]) if labels.get("uuid") else None,
        })
        field, factor = target
        for pair in series["values"]:
            if not isinstance(pair, list) or len(pair) != 2:
                continue
            t = _number(pair[0])
            number = _number(pair[1])
            if t is None:
                continue
            cards = points.setdefault(t, {})
            cards.setdefault(key, dict(names[key]))[field] = (
                None if number is None else number * factor
            )
    frames = []
    for seq, t in enumerate(sorted(points)):
        cards = [_reading(key, entry) for key, entry in sorted(points[t].items())]
        frames.append(Frame(t=t, seq=seq, cards=cards))
    return frames


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
    ) -> None:
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
        self.tools: dict[str, str] = {"prometheus": self.api.base_url}
        self.versions: dict[str, str | None] = {}
        self._seen: dict[_CardKey, _Seen] = {}
        self._forgotten: set[str] = set()
        self._seq = 0
        self._closed = False
        self._hosts = 0
        #: How the last request failed ("unreachable", "timeout"...), None when it answered.
        self._failing: str | None = None

    @property
    def label(self) -> str:
        """``fleet prom:9090 · 64 hosts``, and how the server failed while it does: the status
        line shows this first, before the list of stale cards."""
        server = urllib.parse.urlsplit(self.api.base_url).netloc or self.api.base_url
        hosts = f" · {self._hosts} hosts" if self._hosts else ""
        failing = f" · server {self._failing}" if self._failing else ""
        return f"fleet {server}{hosts}{failing}"

    async def _get(self, endpoint: str, params: Mapping[str, str]) -> Any:
        # The thread's own timeout bounds the wait; this one is the backstop should a server
        # trickle bytes forever (the thread then finishes on its own, nothing waits on it).
        return await asyncio.wait_for(
            asyncio.to_thread(self.api.get, endpoint, params), self.timeout * 2 + 1.0
        )

    async def _history(self) -> list[Frame]:
        end = self.clock()
        step = max(self.interval, 1.0)
        params = {
            "query": selector(HISTORY_FIGURES, self.matchers),
            "start": f"{end - step * (HISTORY_POINTS - 1):.3f}",
            "end": f"{end:.3f}",
            "step": f"{step:g}",
        }
        data = await self._get("query_range", params)
        return await asyncio.to_thread(history_frames, data)

    async def poll_once(self) -> Frame:
        """Ask once; never raises for the server's misbehaviour."""
        t = self.clock()
        errors: list[ToolError] = []
        notes: list[str] = []
        answer: FleetAnswer | None = None
        try:
            data = await self._get("query", {"query": instant_query(self.matchers)})
            answer = await asyncio.to_thread(frame_from_answer, data)
        except FleetError as exc:
            errors.append(ToolError(tool="prometheus", message=str(exc), kind=exc.kind))
        except TimeoutError:
            errors.append(ToolError(
                tool="prometheus", message=f"no answer within {self.timeout * 2 + 1:g} s",
                kind="timeout",
            ))
        except Exception as exc:  # an answer no test foresaw: say so, keep the view alive
            errors.append(ToolError(
                tool="prometheus", message=f"unreadable answer: {type(exc).__name__}: {exc}",
                kind="parse",
            ))
        now = self.clock()
        self._failing = errors[0].kind if errors else None
        if answer is not None:
            notes.extend(answer.notes)
            for key, card in answer.cards.items():
                self._seen[key] = _Seen(card, now)
                self._forgotten.discard(key[0])
            self.verdicts = answer.verdicts
            self.job_verdicts = answer.job_verdicts
            self.busy = answer.busy
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
        frame = Frame(t=t, seq=self._seq, cards=cards, errors=errors, notes=notes)
        self._seq += 1
        return frame

    async def frames(self) -> AsyncIterator[Frame]:
        """The start-up history first (as fast as it comes), then one poll per interval."""
        if self.history:
            try:
                past = await self._history()
            except Exception:  # no history is no reason to stop: the first poll says what is wrong
                past = []
            for frame in past:
                if self._closed:
                    return
                yield frame.model_copy(update={"seq": self._seq})
                self._seq += 1
        next_start = time.monotonic()
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


def build_fleet(url: str, matches: Sequence[str] = (), interval: float = 1.0) -> tuple[Any, Any]:
    """(source, tracker) of the fleet view, for the app. Raises `GpusatError` on a bad URL or
    ``--match`` (one clear message, no TUI)."""
    from gpusat_tui.analysis.fleet import FleetTracker

    try:
        source = FleetSource(url, matches, interval=interval)
    except ValueError as exc:
        raise GpusatError(str(exc)) from None
    tracker = FleetTracker(
        lambda: source.verdicts, lambda: source.job_verdicts, busy=lambda: source.busy
    )
    return source, tracker
