"""One tool's queries on one poll, and what its answers become: a `ToolReading`, or why not.

`sources.live` decides *when* a tool is asked and `sources.tool_poll` what a failure means for
its cards (back-off, stale carrying, the group's next tool); this module asks it. An in-process
reader (NVML) runs in a thread with the timeout; an executable is run by
`sources.procs.run_tool`, checked for being another vendor's tool of the same name, for its exit
status, then parsed and vetted. What goes wrong is one of three exceptions: `QueryFailed` (no
answer), `QueryRefused` (an answer not understood), `NotOurs` (someone else's tool). A refused
required query goes down its fallback chain, and the first link that answers replaces it for the
session (a note says so).

Per-card enrichments (``Query(per_card=True)``: npu-smi's ``-t usages -i N``, one call per card,
~27 ms per poll for 8 cards) run only every ``enrich_every`` polls (`options.DEFAULT_ENRICH_EVERY`):
in between, their last figures are merged again as they were, not marked stale, since the
card's required view (the figures the verdict reads) is fresh on every poll. The cost of the
choice: an enrichment-only figure (AIVector %, say) can be up to ``enrich_every - 1`` polls old.
Process-list queries (``Query(process_list=True)``: nvidia-smi ``--query-compute-apps``,
rocm-smi / hy-smi ``--showpids``) are throttled the same way, their last list standing in: a
poll then costs one tool call instead of two, and a new trainer is tied to its card at most
``enrich_every - 1`` polls late. A refused enrichment is dropped for the session.

One `ToolQueries` serves all of a source's tools: what is per tool lives in `ToolState`, passed
in on each call, and the runner keeps only the source's settings, the `vet_reading` keys said
this session, and a reference to the source's pending notes (where a fallback's note goes). The
cost: the per-tool state travels as an argument, and the source drains that shared notes list
in place (a copy and a clear per poll) instead of swapping it for a new one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gpusat_tui.collectors.base import (
    Query,
    ToolReading,
    ToolSpec,
    card_args,
    merge_cards,
    vet_reading,
)
from gpusat_tui.errors import ParseError, ToolMissing
from gpusat_tui.model import CardProcess, CardReading, ToolError
from gpusat_tui.sources.polling.procs import (
    MAX_OUTPUT_BYTES,
    CallTimedOut,
    OutputTooLarge,
    ToolFailed,
    ToolRefused,
    run_tool,
)
from gpusat_tui.sources.polling.stream_poll import StreamPoll

__all__ = [
    "RAW_KEEP_CHARS",
    "NotOurs",
    "PollResult",
    "QueryFailed",
    "QueryRefused",
    "ToolQueries",
    "ToolState",
]

#: How much raw output of a failed parse is kept on the Frame (for bug reports).
RAW_KEEP_CHARS = 4096


# --- per-tool session state ------------------------------------------------------------------


@dataclass
class PollResult:
    """What polling one tool once produced."""

    cards: list[CardReading] = field(default_factory=list)
    processes: list[CardProcess] = field(default_factory=list)
    errors: list[ToolError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    raw: dict[str, str] = field(default_factory=dict)
    #: True when the required queries answered and parsed.
    ok: bool = False
    #: The tool is not usable at all (missing, refused, not ours): try the group's next tool.
    unusable: bool = False
    #: ...and certainly never will be (another vendor's tool, no library): drop it even when
    #: it is the last of its group.
    final: bool = False


@dataclass
class ToolState:
    spec: ToolSpec
    exe: str
    required: list[Query]
    optional: list[Query]
    answered: bool = False
    #: card id -> (last good reading, clock time it was read)
    last_good: dict[str, tuple[CardReading, float]] = field(default_factory=dict)
    #: The in-process reader this source uses (``spec.new_reader(enrich_every)`` or
    #: ``spec.reader``); None for executables.
    reader: Callable[[], ToolReading] | None = None
    #: A thread still running an in-process reader that timed out.
    busy_reader: asyncio.Future[ToolReading] | None = None
    #: Polls left before the per-card enrichments run again (0: on this poll).
    enrich_wait: int = 0
    #: (query name, card index) -> that query's last good reading of that card, merged again
    #: on the polls the enrichments are skipped.
    enriched: dict[tuple[str, int], CardReading] = field(default_factory=dict)
    #: Polls left before the process-list queries run again (0: on this poll).
    process_wait: int = 0
    #: Timeouts in a row, polls still to skip because of them, and the error those repeat.
    hangs: int = 0
    skip_polls: int = 0
    hang_error: ToolError | None = None
    #: Query name -> that process-list query's last answer, used again while it is skipped.
    process_last: dict[str, ToolReading] = field(default_factory=dict)
    #: The stream in use (it replaces the required queries; `sources.stream_poll`), and when
    #: the record this poll read arrived.
    stream: StreamPoll | None = None
    stream_t_read: float | None = None


def _size(n: int) -> str:
    if n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n % 1024 == 0:
        return f"{n >> 10} KiB"
    return f"{n} bytes"


def _first_line(text: str, limit: int = 160) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:limit]
    return ""


#: The tool answered but not with anything we understand (non-zero exit or ParseError).
QueryRefused = ToolRefused
#: The tool did not answer (timeout, overflow, cannot start, a stream gone quiet).
QueryFailed = ToolFailed


class NotOurs(Exception):
    """The executable answered, but it is another vendor's tool of the same name."""


class ToolQueries:
    """Runs one tool's queries (`run_queries`) or in-process reader (`run_reader`) per call."""

    def __init__(
        self,
        timeout: float,
        enrich_every: int,
        clock: Callable[[], float],
        notes: list[str],
    ) -> None:
        self.timeout = timeout
        #: Per-card enrichments and process lists run on one poll in this many.
        self.enrich_every = enrich_every
        self.clock = clock
        #: The source's pending notes (the next Frame takes them): shared, appended to only.
        self.notes = notes
        #: Keys of the notes `vet_reading` already gave (each said once per session).
        self.vetted: set[str] = set()

    async def run_reader(self, state: ToolState) -> ToolReading:
        spec = state.spec
        assert state.reader is not None
        if state.busy_reader is not None and not state.busy_reader.done():
            raise QueryFailed(f"{spec.tool} is still busy with an earlier poll", "timeout")
        future = asyncio.ensure_future(asyncio.to_thread(state.reader))
        state.busy_reader = future
        try:
            # A thread cannot be killed: on timeout it is left to finish and not restarted
            # until it has (see busy_reader).
            reading = await asyncio.wait_for(asyncio.shield(future), self.timeout)
            rejected = [(c.id, c.rejected) for c in reading.cards if c.rejected]
            if vet_reading(reading, spec.tool, expect_cards=True, said=self.vetted):
                # No text to keep from a library: the refused values stand in for it.
                reading.raw = f"{spec.tool} (in-process) refused figures: {rejected!r}"
            return reading
        except TimeoutError:
            raise QueryFailed(
                f"{spec.tool} did not answer within {self.timeout:.1f} s", "timeout"
            ) from None
        except (ToolMissing, asyncio.CancelledError):
            raise
        except ParseError as exc:
            raise QueryRefused(f"{spec.tool}: {exc}", "parse") from None
        except Exception as exc:
            raise QueryFailed(f"{spec.tool} failed: {type(exc).__name__}: {exc}", "other") from None

    async def _call(self, state: ToolState, query: Query, args: Sequence[str]) -> ToolReading:
        """Run one query and parse it.

        `QueryFailed`: no answer. `QueryRefused`: an answer not understood."""
        tool = state.spec.tool
        try:
            result = await run_tool([state.exe, *args], self.timeout, MAX_OUTPUT_BYTES)
        except CallTimedOut:
            raise QueryFailed(
                f"{tool} did not answer within {self.timeout:.1f} s; killed", "timeout"
            ) from None
        except OutputTooLarge:
            raise QueryFailed(
                f"{tool} printed more than {_size(MAX_OUTPUT_BYTES)}; killed", "parse"
            ) from None
        except PermissionError as exc:
            raise QueryFailed(f"cannot run {state.exe}: {exc.strerror}", "denied") from None
        except OSError as exc:
            raise QueryFailed(f"cannot run {state.exe}: {exc.strerror or exc}", "missing") from None
        identify = state.spec.identify
        if identify is not None and not state.answered and not query.optional:
            # Before the exit status: Intel's xpu-smi may answer Kunlunxin's argv with its own
            # usage text and a non-zero status, and that must read as "not ours", not "broken".
            text = result.stdout if result.returncode == 0 else result.stdout + result.stderr
            if not identify(text):
                raise NotOurs(self._not_ours_message(state, query, text))
        if result.returncode != 0:
            detail = _first_line(result.stderr) or _first_line(result.stdout)
            status = (
                f"was killed by signal {-result.returncode}"
                if result.returncode < 0
                else f"exited with status {result.returncode}"
            )
            message = f"{tool} {' '.join(args)} {status}".replace("  ", " ")
            raise QueryRefused(
                f"{message}: {detail}" if detail else message, "exit",
                raw=result.stdout + result.stderr,
            )
        try:
            reading = query.parse(result.stdout)
        except ParseError as exc:
            raise QueryRefused(f"{tool}: {exc}", "parse", raw=result.stdout) from None
        except Exception as exc:  # a parser bug must not take the poll down either
            raise QueryRefused(
                f"{tool}: parser failed ({type(exc).__name__}: {exc})", "parse",
                raw=result.stdout,
            ) from None
        # Impossible figures, a card listed twice, no card at all: noted, and the text kept.
        if vet_reading(reading, tool, expect_cards=not query.optional, said=self.vetted):
            reading.raw = result.stdout[:RAW_KEEP_CHARS]
        return reading

    def _not_ours_message(self, state: ToolState, query: Query, text: str) -> str:
        spec = state.spec
        what = ""
        try:
            query.parse(text)
        except Exception as exc:  # the parser's words name what answered (e.g. Intel)
            what = str(exc)
        if not what:
            what = f"its output starts {_first_line(text, 80)!r}"
        return f"{state.exe} is not {spec.vendor}'s {spec.tool}: {what}; ignored"

    async def _run_required(self, state: ToolState, index: int) -> ToolReading:
        query = state.required[index]
        try:
            return await self._call(state, query, query.args)
        except QueryRefused as refused:
            if query.fallback is None:
                raise
            # Down the fallback chain (nvidia-smi: csv with clock-event reasons, with the old
            # throttle-reason name, without either, the table): the first that answers
            # replaces the refused query for the whole session.
            fallback: Query | None = query.fallback
            said = refused.raw if refused.raw is not None else str(refused)
            while fallback is not None:
                if fallback.only_after is not None and fallback.only_after not in said:
                    fallback = fallback.fallback  # not what this link is for
                    continue
                try:
                    reading = await self._call(state, fallback, fallback.args)
                except QueryFailed:
                    raise refused from None
                except QueryRefused as again:
                    said = again.raw if again.raw is not None else str(again)
                    fallback = fallback.fallback
                    continue
                state.required[index] = fallback
                self.notes.append(
                    f"{state.spec.tool} refused {query.name} ({refused}); using {fallback.name}"
                )
                return reading
            raise refused from None

    async def run_queries(self, state: ToolState, res: PollResult) -> ToolReading:
        plain_optional = [q for q in state.optional if not q.per_card]
        per_card = [q for q in state.optional if q.per_card]
        reused: list[ToolReading] = []
        if any(q.process_list for q in plain_optional):
            if state.process_wait > 0 and state.answered:
                # Throttled: the process lists read a few polls ago stand in.
                state.process_wait -= 1
                reused = [
                    state.process_last[q.name]
                    for q in plain_optional
                    if q.process_list and q.name in state.process_last
                ]
                plain_optional = [q for q in plain_optional if not q.process_list]
            else:
                state.process_wait = self.enrich_every - 1
        state.stream_t_read = None
        stream_reading: ToolReading | None = None
        if state.stream is not None:
            may_fall_back = bool(state.required) and not state.answered
            stream_reading = await state.stream.read(res.notes, may_fall_back)
            if stream_reading is not None:
                state.stream_t_read = self.clock() - state.stream.age
            else:  # the loop mode was refused: back to one call per poll, for the session
                state.stream = None
        required_calls = (
            [] if stream_reading is not None
            else [self._run_required(state, i) for i in range(len(state.required))]
        )
        if stream_reading is not None:
            # The record is read already: only the optional calls (if any) run, without a
            # task standing in for it (one task and loop turn less a poll).
            optional_out = await asyncio.gather(
                *(self._call(state, q, q.args) for q in plain_optional), return_exceptions=True
            )
            required_out: list[ToolReading | BaseException] = [stream_reading]
        elif state.spec.identify is not None and not state.answered:
            # Until the tool has shown it is ours, ask nothing else of it (a look-alike tool
            # of another vendor gets exactly one call).
            required_out = await asyncio.gather(*required_calls, return_exceptions=True)
            for out in required_out:
                if isinstance(out, BaseException):
                    raise out
            optional_out = await asyncio.gather(
                *(self._call(state, q, q.args) for q in plain_optional), return_exceptions=True
            )
        else:
            outcomes = await asyncio.gather(
                *required_calls,
                *(self._call(state, q, q.args) for q in plain_optional),
                return_exceptions=True,
            )
            required_out = outcomes[: len(required_calls)]
            optional_out = outcomes[len(required_calls):]
        for out in required_out:
            if isinstance(out, BaseException):
                raise out
        readings = [out for out in required_out if isinstance(out, ToolReading)]
        cards: list[CardReading] = []
        processes: list[CardProcess] = []
        version: str | None = None
        notes: list[str] = []
        raw: list[str] = []
        for reading in readings:
            cards = reading.cards if not cards else merge_cards(cards, reading.cards)
            processes.extend(reading.processes)
            notes.extend(reading.notes)
            version = version or reading.version
            raw.extend([reading.raw] if reading.raw else [])
        for query, out in zip(plain_optional, optional_out, strict=True):
            if isinstance(out, ToolReading):
                cards = merge_cards(cards, out.cards)
                processes.extend(out.processes)
                notes.extend(out.notes)
                version = version or out.version
                raw.extend([out.raw] if out.raw else [])
                if query.process_list:
                    state.process_last[query.name] = ToolReading(processes=list(out.processes))
            else:
                state.process_last.pop(query.name, None)
                self._optional_failed(state, query, out, res)
        for reading in reused:
            processes.extend(reading.processes)
        if per_card and cards and state.enrich_wait > 0:
            # Throttled: merge each query's last good per-card figures as they were.
            state.enrich_wait -= 1
            for query in per_card:
                carried = [c for (name, _), c in state.enriched.items() if name == query.name]
                if carried:
                    cards = merge_cards(cards, carried)
        elif per_card and cards:
            state.enrich_wait = self.enrich_every - 1
            state.enriched = {}
            jobs: list[tuple[Query, int, tuple[str, ...]]] = []
            for query in per_card:
                for card in cards:
                    try:
                        jobs.append((query, card.index, card_args(query.args, card)))
                    except (KeyError, IndexError, ValueError):
                        continue  # this card lacks what the query needs (no chip id, say)
            per_out = await asyncio.gather(
                *(self._call(state, q, args) for q, _, args in jobs),
                return_exceptions=True,
            )
            failed: set[str] = set()
            for (query, idx, _), out in zip(jobs, per_out, strict=True):
                if isinstance(out, ToolReading):
                    # The per-card text does not know its card: the index is the one we asked.
                    extra = [c.model_copy(update={"index": idx}) for c in out.cards[:1]]
                    cards = merge_cards(cards, extra)
                    if extra:
                        state.enriched[(query.name, idx)] = extra[0]
                    processes.extend(out.processes)
                    notes.extend(out.notes)
                    raw.extend([out.raw] if out.raw else [])
                elif query.name not in failed:
                    failed.add(query.name)
                    self._optional_failed(state, query, out, res)
        return ToolReading(cards=cards, processes=processes, version=version, notes=notes,
                           raw="\n".join(raw))

    def _optional_failed(
        self, state: ToolState, query: Query, exc: BaseException, res: PollResult
    ) -> None:
        """A refused enrichment is dropped for the session (one note); a hang is an error."""
        if isinstance(exc, asyncio.CancelledError):
            raise exc
        tool = state.spec.tool
        if isinstance(exc, QueryRefused):
            if query in state.optional:
                state.optional.remove(query)
                res.notes.append(f"{tool} refused {query.name} ({exc}); not asked again")
        elif isinstance(exc, QueryFailed):
            res.errors.append(ToolError(tool=tool, message=str(exc), kind=exc.kind))
        else:
            raise exc

