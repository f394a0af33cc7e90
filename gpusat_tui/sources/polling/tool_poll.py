"""One poll of one tool group: which of its tools is asked, and what a failure does to its cards.

Asking a tool is `sources.tool_queries` (or its stream's newest record, `sources.stream_poll`);
this module decides what the answer means for the session:

* a tool that never answered and refuses (or is missing, or is another vendor's tool) gives way
  to the next one of its group; the last one is kept and its errors reported every poll, unless
  it is certainly unusable;
* a failing tool's cards are carried over with ``stale_s`` = their age, so a card never blinks
  out because of one bad poll; a card missing from an otherwise good answer is dropped with a
  note;
* a called tool that times out twice in a row is backed off: asked again after 2, 4, 8, up to
  `MAX_SKIP_POLLS` polls, its error and stale cards standing in meanwhile.

The per-tool state lives in `ToolState` (`sources.tool_queries`), one per found tool.
"""

from __future__ import annotations

from collections.abc import Callable

from gpusat_tui.collectors.base import resolve_process_cards
from gpusat_tui.errors import ToolMissing
from gpusat_tui.model import CardReading, ToolError
from gpusat_tui.sources.polling.tool_queries import (
    RAW_KEEP_CHARS,
    NotOurs,
    PollResult,
    QueryFailed,
    QueryRefused,
    ToolQueries,
    ToolState,
)

__all__ = ["MAX_SKIP_POLLS", "ToolPoller"]

#: The most polls a tool that keeps hanging is left alone for (see `ToolPoller.back_off`).
MAX_SKIP_POLLS = 16


class ToolPoller:
    """Polls a source's tool groups; one per source.

    ``versions`` is the source's tool -> version map, updated in place from each answer (the
    same sharing as ``ToolQueries``' notes: the source never replaces it).
    """

    def __init__(self, queries: ToolQueries, clock: Callable[[], float],
                 versions: dict[str, str | None]) -> None:
        self.queries = queries
        self.clock = clock
        self.versions = versions

    async def poll_group(self, group: list[ToolState], tools: dict[str, str]) -> PollResult:
        """Poll the group's current tool; while none has answered yet, fall through the group.

        A tool that never answered and refuses (or is missing, or is another vendor's tool)
        gives way to the next one of its group: it leaves ``group`` and ``tools`` (the source's
        found tools). The last one of a group is kept and its errors reported every poll,
        unless it is certainly unusable (``final``: not ours, no library).
        """
        notes: list[str] = []
        while group:
            state = group[0]
            res = await self.poll_tool(state)
            if res.ok:
                state.answered = True
            give_way = res.unusable and not state.answered and (len(group) > 1 or res.final)
            if not give_way:
                res.notes = notes + res.notes
                return res
            group.pop(0)
            if state.stream is not None:
                state.stream.stop()
            tools.pop(state.spec.tool, None)
            notes.extend(res.notes)
            if not group:
                res.notes = notes
                res.cards = []
                return res
            notes.append(f"{state.spec.tool} not used ({_why(res)}); trying {group[0].spec.tool}")
        return PollResult(notes=notes)

    async def poll_tool(self, state: ToolState) -> PollResult:
        """Ask one tool once; never raises for its misbehaviour."""
        spec = state.spec
        t_read = self.clock()
        res = PollResult()
        if state.skip_polls > 0 and state.hang_error is not None:
            # Backing off a tool that keeps hanging: its error and stale cards stand.
            state.skip_polls -= 1
            res.errors.append(state.hang_error)
            res.unusable = not state.answered
            res.cards = self.carry_stale(state)
            return res
        try:
            if state.reader is not None:
                reading = await self.queries.run_reader(state)
            else:
                reading = await self.queries.run_queries(state, res)
        except ToolMissing as exc:
            res.unusable = res.final = True
            res.errors.append(ToolError(tool=spec.tool, message=str(exc), kind="missing"))
            return res
        except NotOurs as exc:
            res.unusable = res.final = True
            res.notes.append(str(exc))
            return res
        except (QueryRefused, QueryFailed) as exc:
            error = ToolError(tool=spec.tool, message=str(exc), kind=exc.kind)
            res.errors.append(error)
            if exc.kind == "timeout" and state.reader is None and state.stream is None:
                self.back_off(state, error, res)
            else:
                state.hangs = 0
            if isinstance(exc, QueryRefused) and exc.raw is not None:
                res.raw[spec.tool] = exc.raw[:RAW_KEEP_CHARS]
            # Never answered (refused, cannot start, hung): the group's next tool may do better.
            res.unusable = not state.answered
            res.cards = self.carry_stale(state)
            return res
        state.hangs = 0
        if reading.version:
            self.versions[spec.tool] = reading.version
        cards = [c if c.tool else c.model_copy(update={"tool": spec.tool}) for c in reading.cards]
        now_ids = {c.id for c in cards}
        for card_id, (old, _) in list(state.last_good.items()):
            if card_id not in now_ids:
                res.notes.append(f"card {old.id} no longer listed by {spec.tool}")
                del state.last_good[card_id]
        if state.stream_t_read is not None:
            t_read = state.stream_t_read  # when the record arrived, not when it was read
        for card in cards:
            state.last_good[card.id] = (card, t_read)
        res.cards = cards
        res.processes = resolve_process_cards(cards, reading.processes)
        res.notes.extend(n for n in reading.notes if n not in res.notes)
        if reading.raw:
            res.raw[spec.tool] = reading.raw[:RAW_KEEP_CHARS]
        res.ok = True
        return res

    @staticmethod
    def back_off(state: ToolState, error: ToolError, res: PollResult) -> None:
        """A tool that hangs again and again is asked less and less often (after 2, 4, 8, up to
        `MAX_SKIP_POLLS` polls): each call costs a process that may not even die (a wedged
        driver leaves it in D state), and a second call rarely answers when the first did not.
        The polls in between repeat its error and carry its cards, stale."""
        state.hangs += 1
        if state.hangs < 2:
            return  # once may be a slow poll: ask again next time
        skip = min(2 ** min(state.hangs - 1, 16), MAX_SKIP_POLLS)
        state.skip_polls = skip
        state.hang_error = error
        if skip < MAX_SKIP_POLLS or 2 ** (state.hangs - 2) < MAX_SKIP_POLLS:
            # Said while the wait grows; once it is at its longest, the error says enough.
            res.notes.append(
                f"{state.spec.tool} hung {state.hangs} times in a row: "
                f"asking it again after {skip} polls"
            )

    def carry_stale(self, state: ToolState) -> list[CardReading]:
        """The tool's last good cards, each with ``stale_s`` = its age now."""
        now = self.clock()
        return [
            card.model_copy(update={"stale_s": max(0.0, now - t_read)})
            for card, t_read in state.last_good.values()
        ]


def _why(res: PollResult) -> str:
    if res.errors:
        return res.errors[0].message
    if res.notes:
        return res.notes[-1]
    return "no answer"
