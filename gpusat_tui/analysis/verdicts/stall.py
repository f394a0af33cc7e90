"""A stalled card: memory held, nothing running on it or on its host side, for how long.

`stall_run` walks back from a card's latest fresh reading over the polls that show no work
anywhere (`StallPoll`: the card idle with its memory held, the processes tied to it, by
`process_tie.ProcessTie`, near 0 % CPU and making no progress: no batch counted by a probe, their
counters flat (`progress`); without counters, none in disk wait, which could be a slow write)
and sums them up in a `Stall`. A process in disk wait whose counters are flat is stuck on
storage: that is a stall (a checkpoint that never finishes), and the `Stall` says so. What a
frame shows is kept with it (`FrameFacts.memo`) while the tie and the lines are the same: a
stalled job's polls are read again by every window on every poll.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

from gpusat_tui.analysis.clean_series import clean_median
from gpusat_tui.analysis.facts import CardFacts, FrameFacts, ProcFacts
from gpusat_tui.analysis.outside_stacks.outside_stack import OutsideStack
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.verdicts.progress import poll_progress, probe_batches
from gpusat_tui.analysis.verdicts.stack_stall import Frozen, frozen_stack

if TYPE_CHECKING:
    from gpusat_tui.analysis.evidence.process_tie import ProcessTie
    from gpusat_tui.analysis.probe_reading.probe_facts import ProbeFacts
    from gpusat_tui.model import StackDump

__all__ = ["Stall", "StallPoll", "stall_lines", "stall_run"]


@dataclass(frozen=True)
class Stall:
    """How long a card has held its memory with nothing running on it or on its host side."""

    #: Seconds from the first to the last poll of the stall (the latest fresh reading).
    seconds: float
    #: The stall reaches back to the first reading in the history given: it may be longer.
    open_start: bool
    polls: int
    mem_pct: float | None
    #: Trainer PIDs tied to the card during the stall (for ``py-spy dump --pid``).
    trainer_pids: tuple[object, ...]
    n_workers: int
    #: Highest CPU % of any tied process during the stall.
    max_cpu: float
    #: psutil states seen on the trainer(s) ("stopped": a paused process).
    trainer_states: tuple[str, ...]
    iowait: float | None
    #: Polls of the stall whose progress counters were read (all flat), and whose fresh
    #: probe counted no batch.
    counter_polls: int = 0
    probe_polls: int = 0
    #: A tied process sat in disk wait with flat counters: stuck on storage.
    stuck_io: bool = False
    #: The poll before the stall gave no CPU figures of the trainer (the monitor's first
    #: poll, a baseline): it may have begun earlier, nothing showed work.
    after_blank: bool = False
    #: Polls of the stall at which every trainer's sampled stack stood still with no batch
    #: (`stack_stall`); when all were, ``seconds`` is at least the newest still time.
    frozen_polls: int = 0
    #: The newest poll's frozen trainers (where each one waits), rank order; () if none.
    frozen: tuple[ProbeFacts, ...] = ()
    #: Other threads read and wrote (the counters moved) while the training thread stood
    #: still: a heartbeat, a logger or a watchdog, not progress.
    busy_threads: bool = False
    #: Trainers with no probe whose stack was dumped from outside during the stall (py-spy),
    #: or whose dump failed (``error``: the tool missing, ptrace refused), PID order.
    outside: tuple[OutsideStack, ...] = ()


class StallPoll(NamedTuple):
    """One poll that shows no work on the card or on its host side."""

    #: Highest CPU % of a process tied to the card.
    cpu: float
    n_workers: int
    #: The tied trainers' PIDs, and their states (where given), in process order.
    trainer_pids: tuple[object, ...]
    trainer_states: tuple[str, ...]
    #: Progress counters were read (and are flat); a fresh probe counted no batch; a tied
    #: process waits on storage with flat counters.
    counters: bool = False
    probe: bool = False
    stuck_io: bool = False
    #: The trainer is tied to the card but no CPU figure was read (a baseline poll): neither
    #: work nor a stall.
    blank: bool = False
    #: The counters moved a little (`Progress.marginal`): a blip, as a CPU figure a little
    #: over the line is.
    blip: bool = False
    #: Every trainer's sampled stack stood still with no batch (`stack_stall.frozen_stack`).
    frozen: Frozen | None = None
    #: The counters moved, but the training thread's stack did not: other threads' work.
    busy_threads: bool = False
    #: The tied trainers' newest stack dumps read from outside: (PID, rank, dump).
    dumps: tuple[tuple[int, int | None, StackDump], ...] = ()
    #: Every trainer (no probe) has a recent outside dump whose main thread stood still
    #: (`StackDump.still_since`): since when, the earliest; None otherwise.
    still_since: float | None = None


#: A poll with the trainer tied but no CPU figures yet.
_BLANK = StallPoll(cpu=0.0, n_workers=0, trainer_pids=(), trainer_states=(), blank=True)


def stall_lines(th: Thresholds) -> tuple[float, ...]:
    """Every line `stall_run` reads of the thresholds: equal lines, equal stalls."""
    return (th.idle_util_pct, th.held_vram_pct, th.held_vram_mib, th.iowait_high_pct,
            th.stall_cpu_pct, th.progress_io_bps, th.progress_syscalls_per_s,
            th.progress_switches_per_s, th.probe_max_age_s)


def _stalled_polls(
    facts: Sequence[FrameFacts], card_id: str, tie: ProcessTie, th: Thresholds
) -> Iterator[tuple[FrameFacts, CardFacts, StallPoll | None]]:
    """Newest first, each frame with a fresh reading of the card, that reading, and what it
    shows of a stall (`_stall_poll`). What a frame shows is kept in it while the tie and the
    lines it reads are the same: a stalled job's polls are read again by every window on
    every poll."""
    key = ("stall", card_id)
    lines = stall_lines(th)
    signature = tie.signature
    for ff in reversed(facts):
        reading = ff.fresh.get(card_id)
        if reading is None:
            continue
        kept = ff.memo.get(key)
        if kept is not None and (kept[0] is signature or kept[0] == signature) and (
            kept[1] == lines
        ):
            poll = kept[2]
        else:
            poll = _stall_poll(ff, card_id, tie, th)
            ff.memo[key] = (signature, lines, poll)
        yield ff, reading, poll


def _stall_poll(
    ff: FrameFacts, card_id: str, tie: ProcessTie, th: Thresholds
) -> StallPoll | None:
    """What this poll shows of a stall, or None when it shows work somewhere (or no process
    evidence)."""
    reading = ff.cards[card_id]
    busy = reading.util is None or reading.util > th.idle_util_pct
    if busy and not ff.probes:
        return None
    if reading.mem_pct is not None:
        if reading.mem_pct < th.held_vram_pct:
            return None
    elif reading.mem_used is None or reading.mem_used < th.held_vram_mib:
        return None
    if tie.any_card_ids:
        tied = [p for p in ff.procs if card_id in tie.tied_cards(p)]
    else:
        tied = list(ff.procs)
    trainers = [p for p in tied if p.is_trainer]
    if not trainers:
        return None  # no process evidence: a stall cannot be told from waiting for input
    frozen = frozen_stack(ff, card_id, (p.pid for p in trainers), th) if ff.probes else None
    # A busy card is a stall only while every trainer is frozen and one of them waits in a
    # collective or a device sync (a collective that spins the card with no batch moving).
    spinning = frozen is not None and frozen.waiting
    if busy and not spinning:
        return None
    figures = [p.cpu for p in tied if p.cpu is not None]
    figures += [p.pin for p in tied if p.pin is not None]
    if not figures and frozen is None:
        return _BLANK
    cpu = max(figures, default=0.0)
    # Up to 3x the line is a blip the caller may let pass (see `stall_run`), not work.
    if cpu > 3 * th.stall_cpu_pct and not spinning:
        return None
    batches = probe_batches(ff, card_id, (p.pid for p in trainers), th)
    if batches is not None and batches > 0 and frozen is None:
        return None  # the probe counts batches: the job runs, whatever the card says
    still_since = _still_outside(trainers, ff.t, th) if frozen is None and not batches \
        else None
    progress = poll_progress(tied)
    moving = progress.moving(th)
    blip = False
    if moving and frozen is None and still_since is None:
        if not progress.marginal(th):
            return None
        blip = True  # the caller lets one such poll pass between quiet ones (`stall_run`)
    waiting = [p for p in tied if p.state == "disk-sleep"]
    if moving is None and frozen is None and still_since is None and (
        waiting or (ff.iowait is not None and ff.iowait >= th.iowait_high_pct)
    ):
        return None  # without counters a disk wait may be a slow write making progress
    still = frozen is not None or still_since is not None
    return StallPoll(
        cpu=cpu,
        n_workers=sum(p.is_worker for p in tied),
        trainer_pids=tuple(p.pid for p in trainers),
        trainer_states=tuple(p.state for p in trainers if p.state),
        counters=moving is not None and not (moving and still),
        probe=batches is not None or frozen is not None,
        stuck_io=bool(waiting),
        blip=blip,
        frozen=frozen,
        busy_threads=bool(moving) and still,
        dumps=tuple((p.pid, p.rank, p.dump) for p in trainers
                    if p.dump is not None and isinstance(p.pid, int)) if frozen is None else (),
        still_since=still_since,
    )


def _still_outside(trainers: Sequence[ProcFacts], t: float | None,
                   th: Thresholds) -> float | None:
    """Since when every trainer's main thread has stood still by its outside dumps
    (`StackDump.still_since`), the earliest; None unless each has a recent such dump (a quiet
    trainer is dumped again every stall time: an older dump says nothing of now)."""
    since: list[float] = []
    for p in trainers:
        dump = p.dump
        if dump is None or dump.error is not None or dump.still_since is None or t is None \
                or t - dump.t > _STILL_DUMP_AGE * th.stall_min_s:
            return None
        since.append(dump.still_since)
    return min(since, default=None)


def stall_run(
    facts: Sequence[FrameFacts], card_id: str, tie: ProcessTie, th: Thresholds
) -> Stall | None:
    """The stall that ends at the card's latest fresh reading, however short; None if that
    reading shows work (or no evidence). ``th`` are the card's (vendor) thresholds."""
    last_t: float | None = None
    first_t: float | None = None
    polls = 0
    trainers: dict[object, None] = {}
    states: dict[str, None] = {}
    workers = 0
    max_cpu = 0.0
    mems: list[float] = []
    iowaits: list[float] = []
    reached_first = True
    blip = False
    after_blank = False
    run: list[StallPoll] = []
    for ff, reading, found in _stalled_polls(facts, card_id, tie, th):
        if found is None or ff.t is None or found.blank:
            reached_first = False
            after_blank = found is not None and found.blank
            break
        # One poll a little above the line (a timer thread, a log flush, CPU time counted in
        # 10 ms ticks or a few wake-ups over a short poll) does not end a stall; two in a
        # row, or the latest poll, do.
        spins = found.frozen is not None and found.frozen.waiting
        if (found.cpu > th.stall_cpu_pct and not spins) or found.blip:
            if blip or last_t is None:
                reached_first = False
                break
            blip = True
        else:
            blip = False
        if last_t is None:
            last_t = ff.t
        first_t = ff.t
        run.append(found)
        if reading.mem_pct is not None:
            mems.append(reading.mem_pct)
        if ff.iowait is not None:
            iowaits.append(ff.iowait)
    if run:
        polls = len(run)
        max_cpu = max(max_cpu, *(p.cpu for p in run))
        workers = max(p.n_workers for p in run)
        trainers = dict.fromkeys(pid for p in run for pid in p.trainer_pids)
        states = dict.fromkeys(state for p in run for state in p.trainer_states)
    if last_t is None or first_t is None:
        return None
    seconds = max(0.0, last_t - first_t)
    frozen_polls = sum(p.frozen is not None for p in run)
    newest = run[0].frozen
    if newest is not None and frozen_polls == len(run) and newest.still_s > seconds:
        # The probes saw the stack stand still for longer than the polls show.
        seconds, reached_first = newest.still_s, False
    since = run[0].still_since
    if since is not None and last_t - since > seconds:
        # Two outside dumps saw the main thread stand still for longer than the polls show
        # (its other threads' reads and writes ended the run of quiet polls).
        seconds, reached_first = last_t - since, False
    return Stall(
        seconds=seconds,
        open_start=reached_first,
        polls=polls,
        mem_pct=clean_median(mems),
        trainer_pids=tuple(trainers),
        n_workers=workers,
        max_cpu=max_cpu,
        trainer_states=tuple(states),
        iowait=clean_median(iowaits),
        counter_polls=sum(p.counters for p in run),
        probe_polls=sum(p.probe for p in run),
        stuck_io=any(p.stuck_io for p in run),
        after_blank=after_blank,
        frozen_polls=frozen_polls,
        frozen=newest.probes if newest is not None else (),
        busy_threads=any(p.busy_threads for p in run),
        outside=_outside(run[0], first_t, last_t, seconds),
    )


#: A dump this much older than the stall's first poll was taken before it (where the thread
#: stood while it still worked): not shown. Polls and dumps are not taken at one instant.
_DUMP_SLACK_S = 2.0
#: An outside dump that says the main thread stands still counts this many stall times after
#: it was read (the next one is due after one: `sources.polling.outside_stacks`).
_STILL_DUMP_AGE = 1.5


def _outside(
    newest: StallPoll, first_t: float, last_t: float, seconds: float
) -> tuple[OutsideStack, ...]:
    """The newest poll's outside dumps that tell where the stall stands (taken during it),
    and the failed ones (which say why there is none)."""
    out = []
    for pid, rank, dump in newest.dumps:
        if dump.error is None and dump.still_since is None and dump.t < first_t - _DUMP_SLACK_S:
            continue
        found = OutsideStack.of(pid, rank, dump, last_t)
        out.append(replace(found, stack_still_s=seconds) if found.error is None else found)
    return tuple(out)
