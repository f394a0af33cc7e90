"""The rank the probes show out of line with the others (`straggler`): by data wait where one
rank waits on its DataLoader while the rest wait for it in the collective, else by step time.
Pure."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpusat_tui.analysis.probe_reading.probe_ranks import Rank

if TYPE_CHECKING:
    from gpusat_tui.analysis.thresholds import Thresholds

__all__ = ["Straggler", "straggler"]


@dataclass(frozen=True)
class Straggler:
    """The rank the probes show out of line, and how."""

    rank: Rank
    #: The lines that say so (the job's ``why``).
    lines: list[str]
    #: "data-wait": it waits on its DataLoader while the others, in lock-step, wait for it in
    #: the collective; "step": it steps slower (ranks that do not step in lock-step).
    basis: str


def straggler(ranks: Sequence[Rank], th: Thresholds) -> Straggler | None:
    """The rank out of line with the others, and the lines that say so; None if none is.

    First by data wait: one rank waits on its DataLoader while the others (waiting in the
    collective for it) do not; where every rank waits on data, none is singled out. Else by
    step time, for ranks that do not step in lock-step.
    """
    waits = [r for r in ranks if r.wait_pct is not None]
    if len(waits) >= 2:
        worst = max(waits, key=lambda r: r.wait_pct or 0.0)
        others = [r for r in waits if r is not worst]
        base = statistics.median(r.wait_pct or 0.0 for r in others)
        wait = worst.wait_pct or 0.0
        # The others must not be input-bound themselves: ranks that all wait on their data
        # split a synchronised step's slack between data wait and the collective at random,
        # so equal ranks read 60 % and 40 % as often as not; that is input-bound everywhere,
        # not one rank holding the rest back.
        if (wait >= th.data_wait_starving_pct and wait - base >= th.straggler_wait_gap_pct
                and base < th.data_wait_starving_pct):
            names = ", ".join(r.name for r in others)
            return Straggler(worst, basis="data-wait", lines=[
                f"{worst.name} (PID {worst.pid}"
                + (f", {worst.card_id}" if worst.card_id else "")
                + f") waits {wait:.0f} % of the window on its DataLoader while {names} "
                f"wait{'s' if len(others) == 1 else ''} {base:.0f} %: measured in the "
                "trainers; the others spend that time waiting for it in the collective",
            ])
    steps = [r for r in ranks if r.step_ms is not None]
    if len(steps) >= 2:
        worst = max(steps, key=lambda r: r.step_ms or 0.0)
        others = [r for r in steps if r is not worst]
        base = statistics.median(r.step_ms or 0.0 for r in others)
        if base > 0 and (worst.step_ms or 0.0) >= th.straggler_step_ratio * base:
            return Straggler(worst, basis="step", lines=[
                f"{worst.name} (PID {worst.pid}) steps in {worst.step_ms:,.0f} ms while "
                f"{', '.join(r.name for r in others)} take {base:,.0f} ms: measured in the "
                "trainers",
            ])
    return None
