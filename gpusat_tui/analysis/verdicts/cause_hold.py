"""The cause holds still until the evidence does (the dashboard's first seconds).

A live job's first polls are start-up: workers forking, the dataset opening, the first
kernels compiling. Judged on them, one job read host-bound, then light-kernels, then
input-bound within its first 30 s. So a cause is shown only once the evidence window has been
filled, or earlier where the trainer's probe has measured a span (its data wait decides, and
it is stable); a probe that has started but not yet timed a batch is waited for, and the why
says what the cause waits on. Costs: the first ``window_s`` of a session show ``STARVING``
without its cause. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusat_tui.analysis.probe_reading.probe_facts import ProbeFacts
from gpusat_tui.model import Verdict

__all__ = ["HOLD_CAUSE_MAX", "CauseHold", "hold_cause"]

#: No cause is held back once this many evidence windows of polls are in (a probe waiting for
#: its first batch holds it longest): past it a caller need not ask.
HOLD_CAUSE_MAX = 2.0


class CauseHold:
    """What one key's probes say about its cause: measured (2+ publications that timed
    batches), or a probe still waiting for its first batch (its PID)."""

    def __init__(self, probes: Sequence[ProbeFacts]) -> None:
        timed: dict[int, set[float | None]] = {}
        waiting: set[int] = set()
        for p in probes:
            if p.batches > 0:
                timed.setdefault(p.pid, set()).add(p.elapsed_s)
            else:
                waiting.add(p.pid)
        self.measured = any(len(times) >= 2 for times in timed.values())
        self.waiting = sorted(waiting - set(timed))


def hold_cause(
    verdict: Verdict, gathered_s: float, window_s: float, probes: Sequence[ProbeFacts]
) -> Verdict:
    """``verdict`` without its cause (and saying why) while the evidence is not in yet:
    ``gathered_s`` seconds of polls of ``window_s``; ``probes``: this key's publications in
    the window. A probe waiting for its first batch holds the cause up to twice the window."""
    if verdict.cause is None:
        return verdict
    hold = CauseHold(probes)
    if hold.measured:
        return verdict
    if hold.waiting and gathered_s < HOLD_CAUSE_MAX * window_s:
        pids = ", ".join(str(pid) for pid in hold.waiting[:3])
        line = (f"cause not named yet: waiting for the probe's first figures (PID {pids}), "
                f"{gathered_s:.0f} s in")
    elif gathered_s < window_s:
        line = (f"cause not named yet: named after {window_s:.0f} s of polls, "
                f"{gathered_s:.0f} s so far (the first, taken while a job starts, mislead)")
    else:
        return verdict
    return verdict.model_copy(update={"cause": None, "why": [line, *verdict.why]})
