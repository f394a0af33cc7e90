"""A training thread that has stopped: no batch, and its sampled stack the same for a while.

The probe samples the training thread's stack (`gpusat_tui.probe.sampler`) and says for how
long it has not changed. A loop that makes progress changes its stack many times a second; a
hung collective, a deadlock or a wait on a dead peer leaves it at one line. That is the
stall's evidence that other threads cannot blur: a heartbeat, a logger or a watchdog reads and
writes every second (the process's counters move), but the training thread's stack does not.
What a stack that stands still costs: a single call that legitimately runs longer than the
stall time (one 30 s kernel, a step compiled into one graph that runs a whole epoch) reads
the same; the stall rule still wants the card idle, or the wait in a collective or a device
sync, and the trainer's CPU low unless it spins in such a wait (`stall`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpusat_tui.analysis.facts import FrameFacts
    from gpusat_tui.analysis.probe_reading.probe_facts import ProbeFacts
    from gpusat_tui.analysis.thresholds import Thresholds

__all__ = ["FROZEN_MIN_S", "WAITING_PHASES", "Frozen", "frozen_stack"]

#: A stack the same for at least this long at a poll makes the poll frozen (a loop that runs
#: changes it many times a second; a probe publishes once a second).
FROZEN_MIN_S = 3.0
#: Phases in which a frozen thread waits on others (a collective that may spin the card and
#: a CPU core at 100 % while nothing moves).
WAITING_PHASES = frozenset({"collective", "sync"})
#: A batch this close to the moment the stack froze is the batch before it, not after.
_BATCH_SLACK_S = 2.0


@dataclass(frozen=True, slots=True)
class Frozen:
    """The trainers of one card at one poll, every one frozen."""

    #: Their probes (rank order as published).
    probes: tuple[ProbeFacts, ...]
    #: The shortest time any of them has stood still, seconds.
    still_s: float
    #: One of them waits in a collective or a device sync (the card it drives may spin; the
    #: others, frozen too, are where the wait comes from).
    waiting: bool


def frozen_stack(
    ff: FrameFacts, card_id: str, trainer_pids: Iterable[object], th: Thresholds
) -> Frozen | None:
    """The card's trainers at this poll if the fresh probes of every one of them (tied by the
    card or by PID) say its stack has stood still for `FROZEN_MIN_S` with no batch since;
    None when one moves, or a probe does not sample stacks."""
    pids = set(trainer_pids)
    fresh = [
        p for p in ff.probes
        if (p.card_id == card_id or p.pid in pids)
        and (p.age_s is None or p.age_s <= th.probe_max_age_s)
    ]
    if not fresh:
        return None
    for p in fresh:
        still = p.stack_still_s
        if still is None or still < FROZEN_MIN_S:
            return None
        if p.last_batch_s is not None and p.elapsed_s is not None and (
            p.elapsed_s - p.last_batch_s < still - _BATCH_SLACK_S
        ):
            return None  # a batch since the stack froze: another thread trains
    fresh.sort(key=lambda p: (p.rank if p.rank is not None else 1 << 30, p.pid))
    return Frozen(
        probes=tuple(fresh),
        still_s=min(p.stack_still_s or 0.0 for p in fresh),
        waiting=any(p.stack_phase in WAITING_PHASES for p in fresh),
    )
