"""One refresh of the fleet view: the summary queries and the rows on screen, asked at once,
then the ranked groups' cards.

The summary's queries (`view_queries`) and the figures of the rows the list told (`FleetView`)
go out together, each in its own daemon thread; the page's problem cards, jobs and gone hosts
(`view_ranks.group_queries`) follow once ``ranks`` has named the groups. Only the
first refresh, which knows no row's place yet, asks for the rows after that (the worst first:
the rows the list opens on).
The Frame holds the rows' cards and the `FleetSummary`; a failed query is said (a ``prometheus``
`ToolError` naming it) and the last summary and rows are carried, the rows marked stale.
Memory: the last summary, the rows' cards and the places of this refresh's cards, all
replaced each refresh.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from gpusat_tui.analysis.fleet_triage import summary_triage
from gpusat_tui.model import CardReading, FleetSummary, Frame, JobContext, ToolError
from gpusat_tui.sources.fleet_view.fleet_answers import (
    RemoteVerdict,
    card_reading,
    frame_from_answer,
    group_by_job,
)
from gpusat_tui.sources.fleet_view.view_queries import (
    Place,
    ViewAnswer,
    read_view,
    rows_query,
    view_queries,
)
from gpusat_tui.sources.fleet_view.view_ranks import group_queries, read_ranks
from gpusat_tui.sources.fleet_view.view_request import FleetView

__all__ = ["FIRST_ROWS", "MAX_ROWS", "ViewPoll"]

T = TypeVar("T")

#: Rows the first refresh fetches before the list has said what it shows (a tall pane's).
FIRST_ROWS = 48
#: Most rows whose figures one refresh asks for, whatever the list says.
MAX_ROWS = 256
#: Queries without which there is no summary: their failure carries the last one.
_ESSENTIAL = ("counts", "ranks", "problems")


class Asker(Protocol):
    """What the poll needs of `FleetSource`."""

    clock: Callable[[], float]
    matchers: list[str]
    view: FleetView | None
    verdicts: dict[str, RemoteVerdict]
    job_verdicts: dict[str, RemoteVerdict]
    jobs: list[JobContext]

    async def get(
        self, endpoint: str, params: Mapping[str, str], read: Callable[[Any], T]
    ) -> T: ...

    def request_error(self, exc: Exception) -> ToolError: ...

    def history_errors(self) -> list[ToolError]: ...

    def next_seq(self) -> int: ...

    def set_failing(self, kind: str | None, hosts: int | None = None) -> None: ...


def _data(data: Any) -> Any:
    return data


def first_rows(summary: FleetSummary, jobs: Sequence[JobContext], rows: int) -> list[str]:
    """The ids of the rows the list opens on: its first ``rows`` problem cards, worst first."""
    result = summary_triage(summary, jobs)
    return [i for group in result.groups for i in group.card_ids][:rows]


class ViewPoll:
    """The view's refresh for one `FleetSource` (see the module docstring)."""

    def __init__(self, source: Asker) -> None:
        self.source = source
        self.summary = FleetSummary()
        self.places: dict[str, Place] = {}
        self.rows: dict[str, tuple[CardReading, float]] = {}

    async def _ask(self, queries: Mapping[str, str]) -> dict[str, Any]:
        """name -> the answer's data, or the exception it raised."""
        results = await asyncio.gather(
            *(self.source.get("query", {"query": q}, _data) for q in queries.values()),
            return_exceptions=True,
        )
        return dict(zip(queries, results, strict=True))

    def _error(self, name: str, exc: BaseException) -> ToolError:
        error = self.source.request_error(exc if isinstance(exc, Exception) else Exception(exc))
        return error.model_copy(update={"message": f"{name} query: {error.message}"})

    async def poll(self) -> Frame:
        source = self.source
        t = source.clock()
        view = source.view
        request = view.request() if view is not None else None
        assert request is not None
        queries = view_queries(request, source.matchers)
        rows = list(request.rows[:MAX_ROWS]) if request.told else []
        asked_rows = rows_query(rows, self.places, source.matchers) if rows else None
        if asked_rows is not None:
            queries = {**queries, "rows": asked_rows}
        got = await self._ask(queries)
        ranks = got.get("ranks")
        if not isinstance(ranks, BaseException):
            got.update(await self._ask(group_queries(read_ranks(ranks), request,
                                                     source.matchers)))
        errors: list[ToolError] = []
        kinds_said: set[str] = set()
        for name, result in got.items():
            if isinstance(result, BaseException):
                error = self._error(name, result)
                if error.kind not in kinds_said:  # a server down fails them all: said once
                    kinds_said.add(error.kind)
                    errors.append(error)
        now = source.clock()
        answer: ViewAnswer | None = None
        if not any(isinstance(got.get(n), BaseException) for n in _ESSENTIAL):
            answer = read_view(
                {n: r for n, r in got.items() if not isinstance(r, BaseException)}, now
            )
            if not request.told:  # the first refresh: the worst rows, asked now
                rows = first_rows(answer.summary, answer.jobs, FIRST_ROWS)
                asked_rows = rows_query(rows, answer.places, source.matchers)
                if asked_rows is not None:
                    more = await self._ask({"rows": asked_rows})
                    got.update(more)
                    if isinstance(more["rows"], BaseException):
                        errors.append(self._error("rows", more["rows"]))
        failing = errors[0].kind if errors else None
        source.set_failing(failing)
        notes: list[str] = []
        if answer is not None:
            self.summary = answer.summary
            self.places = answer.places
            source.verdicts = answer.verdicts
            source.job_verdicts = answer.job_verdicts
            source.jobs = answer.jobs
            notes.extend(answer.notes)
            source.set_failing(failing, answer.summary.hosts)
            if not answer.summary.cards:
                notes.append(
                    "Prometheus has no gpusat series"
                    + (f" matching {', '.join(source.matchers)}" if source.matchers else "")
                    + ": is gpusat-tui export running and scraped?"
                )
        fetched = got.get("rows")
        fresh: dict[str, CardReading] = {}
        if fetched is not None and not isinstance(fetched, BaseException):
            read = frame_from_answer(fetched)
            fresh = {key_card.id: key_card for key_card in read.cards.values()}
            notes.extend(read.notes)
        cards = self._cards(rows, fresh, answer, now)
        errors.extend(source.history_errors())
        if answer is not None:  # the server's and the history's first: the status line's
            errors.extend(
                ToolError(tool=host, kind="stale",
                          message=f"no figures for {age:.0f} s (exporter down or not scraped)")
                for host, age in sorted(answer.down_hosts.items())
            )
        return Frame(
            t=t, seq=source.next_seq(), cards=group_by_job(cards, source.jobs), errors=errors,
            notes=notes, jobs=source.jobs, fleet=self.summary,
        )

    def _cards(
        self, rows: Sequence[str], fresh: Mapping[str, CardReading], answer: ViewAnswer | None,
        now: float,
    ) -> list[CardReading]:
        """The rows' cards: fresh figures, a down card from its last figures (or none) marked
        with its age, a row this refresh could not read carried stale. Rows no longer shown
        are forgotten."""
        kept: dict[str, tuple[CardReading, float]] = {}
        shown: list[CardReading] = []
        for card_id in rows:
            card = fresh.get(card_id)
            down = answer.down.get(card_id) if answer is not None else None
            last = self.rows.get(card_id)
            if card is not None:
                kept[card_id] = (card, now)
                shown.append(card)
            elif down is not None:
                key, age = down
                base = last[0] if last is not None else card_reading(key, {})
                kept[card_id] = (base, last[1] if last is not None else now)
                shown.append(base.model_copy(update={"stale_s": age}))
            elif last is not None:
                card, at = last
                kept[card_id] = last
                age = max(0.0, now - at) + (card.stale_s or 0.0)
                shown.append(card.model_copy(update={"stale_s": max(age, 1.0)}))
        self.rows = kept
        return shown
