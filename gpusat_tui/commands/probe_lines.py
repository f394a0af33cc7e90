"""How ``check`` and ``report`` write one probed rank: who it is, its figures over the run,
and its sampled stack, in words (from its `CheckProbe`, so both say the same)."""

from __future__ import annotations

from gpusat_tui.analysis.probe_reading.probe_words import (
    NO_BATCH,
    allocator_words,
    figures,
    lines_words,
    phases_words,
    place_words,
    step_words,
    throughput_words,
    wait_words,
)
from gpusat_tui.commands.check_schema import CheckProbe

__all__ = ["probe_line", "probe_who", "stack_lines"]


def probe_line(probe: CheckProbe) -> str:
    """``data wait 43 % · step 182 ms · 1,240 samples/s`` over the run: from the cumulative
    counters where two publications were seen, else the means of the publications'."""
    run = probe.run
    wait = run.data_wait_pct if run is not None else probe.data_wait_pct.mean
    step = run.step_ms if run is not None else probe.step_ms.mean
    samples = run.samples_per_s if run is not None else probe.samples_per_s.mean
    batches = run.batches_per_s if run is not None else probe.batches_per_s.mean
    alloc = probe.alloc
    return figures((
        # The probe's note outranks a figure: it says the figure is not the wait.
        wait_words(None if probe.data_wait_note else wait, note=probe.data_wait_note),
        step_words(step),
        throughput_words(samples, batches),
        allocator_words(alloc.allocated_bytes.last, alloc.reserved_bytes.last,
                        alloc.alloc_retries) if alloc is not None else None,
    )) or NO_BATCH


#: A stack that has not moved for this long is said so.
STILL_SHOWN_S = 5.0


def stack_lines(probe: CheckProbe) -> list[str]:
    """The sampled stack of one trainer over the run, in words: the step's phases, the
    hottest user lines, and where it is now (with how long it has not moved, from 5 s)."""
    stack = probe.stack
    if stack is None:
        return []
    run = probe.run
    step = run.step_ms if run is not None else probe.step_ms.mean
    out = [phases_words(step, stack.phases_pct)]
    out.append(lines_words((u.file, u.line, u.function, u.pct) for u in stack.user_lines))
    if stack.still_s is not None and stack.still_s >= STILL_SHOWN_S:
        place = place_words(stack.where, stack.line)
        out.append(f"now {place}, not moved for {stack.still_s:.0f} s")
    return [line for line in out if line]


def probe_who(pid: int, probe: CheckProbe) -> str:
    """``PID 4242 rank 1/8 → nvidia:1`` (with "(guess)" when the card tie is one)."""
    who = f"PID {pid}"
    if probe.rank is not None:
        who += f" rank {probe.rank}" + (f"/{probe.world_size}" if probe.world_size else "")
    if probe.card_id:
        who += f" → {probe.card_id}" + (" (guess)" if probe.tie == "guess" else "")
    return who
