"""Host evidence: which processes serve which card, and their figures over a window.

`ProcessTie` ties processes to cards (through ``ProcessSample.card_ids``; a worker inherits its
trainer's cards; without any card ids every process serves every card) and groups cards into
jobs. `host_evidence` summarises the tied processes and the host over the window (medians
across polls) into a `HostEvidence`; `EvidenceCache` computes it on demand, once per distinct
set of tied processes, so a window of saturated cards never computes it at all.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from gpusat_tui.analysis.facts import CardFacts, FrameFacts, ProcFacts, clean_median
from gpusat_tui.analysis.thresholds import Thresholds

__all__ = [
    "EvidenceCache",
    "HostEvidence",
    "PollEvidence",
    "ProcessTie",
    "Stall",
    "StallPoll",
    "fold_evidence",
    "host_evidence",
    "poll_evidence",
    "stall_lines",
    "stall_run",
]


class ProcessTie:
    """Which processes count as evidence for which card (see the module docstring)."""

    def __init__(self, facts: Sequence[FrameFacts]) -> None:
        self.trainer_cards: dict[object, set[str]] = {}
        self.any_card_ids = False
        last: object = None
        for ff in facts:
            if ff.any_card_ids:
                self.any_card_ids = True
            if ff.trainer_cards is last or ff.trainer_cards == last:
                continue  # the same trainers as the poll before (most polls): nothing new
            last = ff.trainer_cards
            for pid, card_ids in ff.trainer_cards:
                self.trainer_cards.setdefault(pid, set()).update(card_ids)
        self._tied_sets: dict[tuple[tuple[str, ...], bool, object], frozenset[str]] = {}
        self._signature: object = None

    @property
    def signature(self) -> object:
        """Everything `tied_cards` depends on: two ties with equal signatures tie every process
        to the same cards (what lets a frame keep its per-card evidence between windows)."""
        if self._signature is None:
            self._signature = _interned((
                self.any_card_ids,
                frozenset((pid, frozenset(cards)) for pid, cards in self.trainer_cards.items()),
            ))
        return self._signature

    def tied_cards(self, proc: ProcFacts) -> frozenset[str]:
        """The cards ``proc`` is evidence for (only meaningful when ``any_card_ids``)."""
        key = (proc.card_ids, proc.is_worker, proc.trainer_pid)
        found = self._tied_sets.get(key)
        if found is None:
            cards = set(proc.card_ids)
            if proc.is_worker:
                cards.update(self.trainer_cards.get(proc.trainer_pid, ()))
            found = self._tied_sets[key] = frozenset(cards)
        return found

    def groups(self, active: Iterable[str]) -> tuple[list[list[str]], str]:
        """Cards that belong to one job, and how that was decided."""
        active = list(active)
        parent = {c: c for c in active}

        def find(c: str) -> str:
            while parent[c] != c:
                c = parent[c]
            return c

        shared = False
        for cards in self.trainer_cards.values():
            members = [c for c in cards if c in parent]
            for other in members[1:]:
                parent[find(other)] = find(members[0])
                shared = True
        if not shared:
            return [active], "all cards holding memory are taken as one job"
        groups: dict[str, list[str]] = {}
        for c in active:
            groups.setdefault(find(c), []).append(c)
        return list(groups.values()), "cards grouped by the trainer process that drives them"


@functools.lru_cache(maxsize=64)
def _interned(signature: tuple[bool, frozenset[object]]) -> tuple[bool, frozenset[object]]:
    """One object for equal signatures (the first seen), so that a frame's kept evidence is
    matched by identity, not by comparing the trainers again at every poll of every window.
    Bounded: a job's trainers change rarely."""
    return signature


class EvidenceCache:
    """Host evidence of one window, computed on demand and shared between cards.

    The evidence depends on the card only through which processes are tied to it: without card
    ids every process serves every card (one computation for all cards). Only a ``starving``
    verdict reads it, so a window of saturated cards never computes it at all. Each frame keeps
    its own part (`PollEvidence`, in `FrameFacts.memo`) while the tie is the same, so the
    tracker, which judges windows of the same frames on every poll, summarises each poll once.
    """

    def __init__(self, facts: Sequence[FrameFacts], tie: ProcessTie) -> None:
        self._facts = facts
        self._tie = tie
        self._by_card: dict[str | None, HostEvidence] = {}

    def __call__(self, card_id: str) -> HostEvidence:
        tie = self._tie
        key = card_id if tie.any_card_ids else None
        found = self._by_card.get(key)
        if found is None:
            signature = tie.signature
            memo_key = ("evidence", key)
            polls: list[PollEvidence] = []
            for ff in self._facts:
                kept = ff.memo.get(memo_key)
                if kept is not None and (kept[0] is signature or kept[0] == signature):
                    polls.append(kept[1])
                    continue
                tied = (
                    [p for p in ff.procs if card_id in tie.tied_cards(p)]
                    if tie.any_card_ids else ff.procs
                )
                poll = poll_evidence(ff.procs, tied)
                ff.memo[memo_key] = (signature, poll)
                polls.append(poll)
            found = self._by_card[key] = fold_evidence(self._facts, polls)
        return found


@dataclass
class HostEvidence:
    """Host figures tied to one card, summarised over the window (medians across polls)."""

    n_process_samples: int = 0
    trainer_cpu: float | None = None
    pin_cpu: float | None = None
    n_workers: int = 0
    worker_cpu: float | None = None
    worker_sum: float | None = None
    dstate_frac: float | None = None
    iowait: float | None = None
    host_cpu: float | None = None
    cpu_count: int | None = None
    foreign_processes: bool = False
    #: Run delay (percent of wall time waiting for a CPU), medians across polls: of the
    #: workers (median worker per poll), and of the trainer. None where not measured.
    worker_delay: float | None = None
    trainer_delay: float | None = None
    #: What the workers asked for: CPU % + run delay %, median worker per poll, median across
    #: polls (None without run delay figures).
    worker_demand: float | None = None

    @property
    def has_processes(self) -> bool:
        return self.n_process_samples > 0


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


class PollEvidence(NamedTuple):
    """One poll's figures of the processes tied to one card (`host_evidence` folds them)."""

    n_tied: int
    #: Processes were seen at this poll, none of them tied to the card.
    foreign: bool
    trainer_cpu: float | None
    pin_cpu: float | None
    trainer_delay: float | None
    n_workers: int
    #: Median and sum of the workers' CPU, medians of their run delay and demand.
    worker_cpu: float | None
    worker_sum: float | None
    worker_delay: float | None
    worker_demand: float | None
    #: Processes with a state, and how many of them in disk-sleep.
    states: int
    d_states: int


def poll_evidence(procs: Sequence[ProcFacts], tied: Sequence[ProcFacts]) -> PollEvidence:
    """The figures of one poll's ``tied`` processes (``procs``: every process of the poll)."""
    t_cpu = [p.cpu for p in tied if p.is_trainer and p.cpu is not None]
    pins = [p.pin for p in tied if p.is_trainer and p.pin is not None]
    t_delay = [p.run_delay for p in tied if p.is_trainer and p.run_delay is not None]
    n_workers = 0
    states = 0
    d_states = 0
    w_cpu: list[float] = []
    w_delay: list[float] = []
    w_demand: list[float] = []
    for p in tied:
        if p.is_worker:
            n_workers += 1
            if p.cpu is not None:
                w_cpu.append(p.cpu)
                if p.run_delay is not None:
                    w_delay.append(p.run_delay)
                    w_demand.append(p.cpu + p.run_delay)
        if p.state is not None:
            states += 1
            d_states += p.state == "disk-sleep"
    return PollEvidence(
        n_tied=len(tied),
        foreign=bool(procs) and not tied,
        trainer_cpu=max(t_cpu) if t_cpu else None,
        pin_cpu=max(pins) if pins else None,
        trainer_delay=max(t_delay) if t_delay else None,
        n_workers=n_workers,
        worker_cpu=statistics.median(w_cpu) if w_cpu else None,
        worker_sum=sum(w_cpu) if w_cpu else None,
        worker_delay=statistics.median(w_delay) if w_delay else None,
        worker_demand=statistics.median(w_demand) if w_delay else None,
        states=states,
        d_states=d_states,
    )


def fold_evidence(facts: Sequence[FrameFacts], polls: Sequence[PollEvidence]) -> HostEvidence:
    """The window's `HostEvidence` from each poll's figures (``polls[i]`` of ``facts[i]``):
    medians across polls, host figures from the frames."""
    ev = HostEvidence()
    if polls:
        (
            n_tied, foreign, trainer_cpu, pin_cpu, trainer_delay, n_workers, worker_cpu,
            worker_sum, worker_delay, worker_demand, states, d_states,
        ) = zip(*polls, strict=True)
        ev.n_process_samples = sum(n_tied)
        ev.foreign_processes = any(foreign)
        ev.trainer_cpu = clean_median(trainer_cpu)
        ev.pin_cpu = clean_median(pin_cpu)
        counts = [n for n in n_workers if n]
        ev.n_workers = round(statistics.median(counts)) if counts else 0
        ev.worker_cpu = clean_median(worker_cpu)
        ev.worker_sum = clean_median(worker_sum)
        ev.dstate_frac = sum(d_states) / sum(states) if sum(states) else None
        ev.worker_delay = clean_median(worker_delay)
        ev.worker_demand = clean_median(worker_demand)
        ev.trainer_delay = clean_median(trainer_delay)
    for ff in reversed(facts):
        if ff.cpu_count is not None:
            ev.cpu_count = ff.cpu_count
            break
    ev.iowait = clean_median([ff.iowait for ff in facts])
    ev.host_cpu = clean_median([ff.host_cpu for ff in facts])
    return ev


def host_evidence(
    facts: Sequence[FrameFacts],
    card_id: str,
    tied_sets: Sequence[Sequence[frozenset[str]]] | None,
) -> HostEvidence:
    """``tied_sets[i][j]``: the cards process j of frame i serves; None: every process serves
    every card (no card ids anywhere in the window)."""
    polls = []
    for i, ff in enumerate(facts):
        procs = ff.procs
        if tied_sets is None:
            tied: Sequence[ProcFacts] = procs
        else:
            tied = [p for p, s in zip(procs, tied_sets[i], strict=True) if card_id in s]
        polls.append(poll_evidence(procs, tied))
    return fold_evidence(facts, polls)


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


class StallPoll(NamedTuple):
    """One poll that shows no work on the card or on its host side."""

    #: Highest CPU % of a process tied to the card.
    cpu: float
    n_workers: int
    #: The tied trainers' PIDs, and their states (where given), in process order.
    trainer_pids: tuple[object, ...]
    trainer_states: tuple[str, ...]


def stall_lines(th: Thresholds) -> tuple[float, ...]:
    """Every line `stall_run` reads of the thresholds: equal lines, equal stalls."""
    return (th.idle_util_pct, th.held_vram_pct, th.held_vram_mib, th.iowait_high_pct,
            th.stall_cpu_pct)


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
        yield ff, reading, poll  # type: ignore[misc]


def _stall_poll(
    ff: FrameFacts, card_id: str, tie: ProcessTie, th: Thresholds
) -> StallPoll | None:
    """What this poll shows of a stall, or None when it shows work somewhere (or no process
    evidence)."""
    reading = ff.cards[card_id]
    if reading.util is None or reading.util > th.idle_util_pct:
        return None
    if reading.mem_pct is not None:
        if reading.mem_pct < th.held_vram_pct:
            return None
    elif reading.mem_used is None or reading.mem_used < th.held_vram_mib:
        return None
    if ff.iowait is not None and ff.iowait >= th.iowait_high_pct:
        return None
    if tie.any_card_ids:
        tied = [p for p in ff.procs if card_id in tie.tied_cards(p)]
    else:
        tied = list(ff.procs)
    figures = [p.cpu for p in tied if p.cpu is not None]
    figures += [p.pin for p in tied if p.pin is not None]
    if not figures or not any(p.is_trainer for p in tied):
        return None  # no process evidence: a stall cannot be told from waiting for input
    # Up to 3x the line is a blip the caller may let pass (see `stall_run`), not work.
    if max(figures) > 3 * th.stall_cpu_pct or any(p.state == "disk-sleep" for p in tied):
        return None
    trainers = [p for p in tied if p.is_trainer]
    return StallPoll(
        cpu=max(figures),
        n_workers=sum(p.is_worker for p in tied),
        trainer_pids=tuple(p.pid for p in trainers),
        trainer_states=tuple(p.state for p in trainers if p.state),
    )


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
    run: list[StallPoll] = []
    for ff, reading, found in _stalled_polls(facts, card_id, tie, th):
        if found is None or ff.t is None:
            reached_first = False
            break
        # One poll a little above the line (a timer thread, a log flush, CPU time counted in
        # 10 ms ticks over a short poll) does not end a stall; two in a row, or the latest
        # poll, do.
        if found.cpu > th.stall_cpu_pct:
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
    return Stall(
        seconds=max(0.0, last_t - first_t),
        open_start=reached_first,
        polls=polls,
        mem_pct=_median(mems),
        trainer_pids=tuple(trainers),
        n_workers=workers,
        max_cpu=max_cpu,
        trainer_states=tuple(states),
        iowait=_median(iowaits),
    )
