"""Host evidence: which processes serve which card, and their figures over a window.

`ProcessTie` ties processes to cards (through ``ProcessSample.card_ids``; a worker inherits its
trainer's cards; without any card ids every process serves every card) and groups cards into
jobs. `host_evidence` summarises the tied processes and the host over the window (each poll's
figures, `PollEvidence`, folded into medians across polls) into a `HostEvidence`;
`EvidenceCache` computes it on demand (once for every card when no process names cards), so a
window of saturated cards never computes it at all, and each frame keeps its poll's figures
while the tie is the same. The stall rule's evidence is `stall`'s.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gpusat_tui.analysis.facts import FrameFacts, ProcFacts, clean_median

__all__ = [
    "FOLDS",
    "SHARES",
    "EvidenceCache",
    "HostEvidence",
    "PollEvidence",
    "ProcessTie",
    "fold_evidence",
    "host_evidence",
    "poll_evidence",
]


class ProcessTie:
    """Which processes count as evidence for which card (see the module docstring)."""

    def __init__(self, facts: Sequence[FrameFacts]) -> None:
        self.trainer_cards: dict[object, set[str]] = {}
        self.any_card_ids = False
        #: Each job's key -> its cards (its trainers' and those `Frame.jobs` names), in the
        #: order the jobs were first seen; and each trainer's job.
        self.job_cards: dict[str, set[str]] = {}
        self.job_of: dict[object, str] = {}
        last: object = None
        last_jobs: object = None
        for ff in facts:
            if ff.any_card_ids:
                self.any_card_ids = True
            if ff.jobs is not last_jobs and ff.jobs != last_jobs:
                last_jobs = ff.jobs
                for key, pids, job_cards in ff.jobs:
                    self.job_cards.setdefault(key, set()).update(job_cards)
                    for pid in pids:
                        self.job_of.setdefault(pid, key)
            if ff.trainer_cards is last or ff.trainer_cards == last:
                continue  # the same trainers as the poll before (most polls): nothing new
            last = ff.trainer_cards
            for pid, card_ids in ff.trainer_cards:
                self.trainer_cards.setdefault(pid, set()).update(card_ids)
        for pid, cards in self.trainer_cards.items():
            job = self.job_of.get(pid)
            if job is not None:
                self.job_cards[job].update(cards)
        # Processes are tied card by card where a job names its cards (a probe's tie where the
        # tool lists no PID), and where two or more jobs run and none names a card: then no
        # card can take another job's processes as its evidence.
        if any(self.job_cards.values()) or len(self.job_cards) >= 2:
            self.any_card_ids = True
        self._tied_sets: dict[tuple[object, ...], frozenset[str]] = {}
        self._signature: object = None

    @property
    def signature(self) -> object:
        """Everything `tied_cards` depends on: two ties with equal signatures tie every process
        to the same cards (what lets a frame keep its per-card evidence between windows)."""
        if self._signature is None:
            self._signature = _interned((
                self.any_card_ids,
                frozenset((pid, frozenset(cards)) for pid, cards in self.trainer_cards.items()),
                frozenset((key, frozenset(cards)) for key, cards in self.job_cards.items()),
                frozenset(self.job_of.items()),
            ))
        return self._signature

    def tied_cards(self, proc: ProcFacts) -> frozenset[str]:
        """The cards ``proc`` is evidence for (only meaningful when ``any_card_ids``): its own,
        its trainer's, else those its job names (each rank of a job keeps its own card)."""
        key = (proc.card_ids, proc.is_worker, proc.trainer_pid, proc.pid)
        found = self._tied_sets.get(key)
        if found is None:
            cards = set(proc.card_ids)
            if proc.is_worker:
                cards.update(self.trainer_cards.get(proc.trainer_pid, ()))
            if not cards:
                job = self.job_of.get(proc.trainer_pid if proc.is_worker else proc.pid)
                cards.update(self.job_cards.get(job, ()) if job is not None else ())
            found = self._tied_sets[key] = frozenset(cards)
        return found

    def jobs_on(self, card_id: str) -> list[str]:
        """The keys of the jobs whose trainers drive ``card_id`` (first seen first)."""
        return [key for key, cards in self.job_cards.items() if card_id in cards]

    def shared_line(self, card_id: str, own: Mapping[str, str] | None = None) -> str | None:
        """``shared by 2 jobs: plain:1, plain:2``, for a card that two or more jobs drive;
        ``own``: a job's own figure, quoted beside its key (its probe's data wait)."""
        keys = self.jobs_on(card_id)
        if len(keys) < 2:
            return None
        named = [f"{key} ({own[key]})" if own and key in own else key for key in keys]
        return (f"shared by {len(keys)} jobs: {', '.join(named)}; this card's figures are "
                "theirs together, each job's processes are its own evidence")

    def groups(self, active: Iterable[str]) -> tuple[list[list[str]], str]:
        """Cards that belong to one job, and how that was decided.

        One job seen: it takes every card (cards whose processes cannot be seen included, as
        on a single-job host). Two or more (`Frame.jobs`): only the cards of one job are
        compared: two jobs on two cards are two groups of one card (never uneven), a card two
        jobs share is in no group (its figures are both jobs' together, no one job's level),
        and where no job names a card (a tool that lists no process) no card is compared.
        Without jobs (older recordings): cards sharing a trainer, else every card as one
        job."""
        active = list(active)
        if len(self.job_cards) == 1:
            [key] = self.job_cards
            return [active], f"every card taken as {key}'s, the only job seen"
        if self.job_cards:
            if any(self.job_cards.values()):
                grouped: list[list[str]] = []
                two_jobs = {c for c in active if len(self.jobs_on(c)) > 1}
                for cards in self.job_cards.values():
                    group = [c for c in active if c in cards and c not in two_jobs]
                    if group and group not in grouped:
                        grouped.append(group)
                return grouped, "cards grouped by job (" + ", ".join(self.job_cards) + ")"
            return [], (f"{len(self.job_cards)} jobs on this host and none tied to a card: "
                        "cards are not compared")
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
def _interned(signature: tuple[object, ...]) -> tuple[object, ...]:
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
    #: The trainer's own share of samples in disk-sleep (``dstate_frac`` is the input
    #: pipeline's: the workers', or the trainer's when it has none).
    trainer_dstate_frac: float | None = None
    #: Bytes/s through read/write calls, medians across polls: the trainer's own reads and
    #: writes, and the input pipeline's reads (the workers' summed; the trainer's without
    #: workers). None where no counters were read.
    trainer_rchar: float | None = None
    trainer_wchar: float | None = None
    input_rchar: float | None = None
    #: The most wake-ups per second of one input-pipeline process's main thread, median
    #: across polls.
    input_switches: float | None = None
    #: The trainer's launcher variables (its environment): world size and rank.
    world_size: int | None = None
    rank: int | None = None
    #: Trainers tied to the card (their workers are ``n_workers``), and every trainer and
    #: DataLoader worker on the host with their CPU summed (percent of one core), medians
    #: across polls: advice on free cores counts the other jobs' processes too.
    n_trainers: int = 0
    host_trainers: int = 0
    host_workers: int = 0
    host_proc_cpu: float | None = None
    #: The trainer's threads other than its main and pin-memory threads: CPU % together and
    #: how many are busy, medians across polls (where tf.data or MindSpore load, in threads).
    trainer_threads_cpu: float | None = None
    trainer_busy_threads: int | None = None
    #: The tightest CPU quota over the job's trainer and workers (cores), and the share of
    #: its periods throttled (percent, the most throttled of them per poll): medians across
    #: polls; None where no quota was read (`host.cpu_quota`).
    quota_cores: float | None = None
    quota_throttled_pct: float | None = None
    #: The starving cause found from this evidence, per set of `causes.starving_cause`'s
    #: arguments (the cards of a window that share this evidence share the finding).
    causes: dict[tuple[object, ...], tuple[Any, ...]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    @property
    def has_processes(self) -> bool:
        return self.n_process_samples > 0

    @property
    def distributed(self) -> bool:
        """The trainer is one rank of several (world size > 1, or a rank set without one)."""
        return (self.world_size or 0) > 1 or (self.world_size is None and self.rank is not None)


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
    #: Input-pipeline processes (the workers; the trainer without workers) with a state, and
    #: how many of them in disk-sleep; the same of the trainers.
    states: int
    d_states: int
    trainer_states: int = 0
    trainer_d_states: int = 0
    trainer_rchar: float | None = None
    trainer_wchar: float | None = None
    input_rchar: float | None = None
    input_switches: float | None = None
    world_size: int | None = None
    rank: int | None = None
    #: Trainers tied to the card; every trainer and DataLoader worker on the host (of any
    #: job) and their CPU summed: the cores other jobs take, for advice on free cores.
    n_trainers: int = 0
    host_trainers: int = 0
    host_workers: int = 0
    host_proc_cpu: float | None = None
    threads_cpu: float | None = None
    busy_threads: int | None = None
    quota_cores: float | None = None
    throttled_pct: float | None = None


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
    t_states = t_d_states = 0
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
        elif p.is_trainer and p.state is not None:
            t_states += 1
            t_d_states += p.state == "disk-sleep"
    trainers = [p for p in tied if p.is_trainer]
    inputs = [p for p in tied if p.is_worker] if n_workers else trainers
    if not n_workers:
        states, d_states = t_states, t_d_states
    sizes = [p.world_size for p in trainers if p.world_size is not None]
    ranks = [p.rank for p in trainers if p.rank is not None]
    threads = [p for p in trainers if p.threads_cpu is not None]
    busiest = max(threads, key=lambda p: p.threads_cpu or 0.0) if threads else None
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
        trainer_states=t_states,
        trainer_d_states=t_d_states,
        trainer_rchar=_summed(p.rchar for p in trainers),
        trainer_wchar=_summed(p.wchar for p in trainers),
        input_rchar=_summed(p.rchar for p in inputs),
        input_switches=max(
            (p.switches for p in inputs if p.switches is not None), default=None
        ),
        world_size=max(sizes) if sizes else None,
        rank=ranks[0] if ranks else None,
        n_trainers=len(trainers),
        host_trainers=sum(1 for p in procs if p.is_trainer),
        host_workers=sum(1 for p in procs if p.is_worker),
        host_proc_cpu=_summed(p.cpu for p in procs if p.is_trainer or p.is_worker),
        threads_cpu=busiest.threads_cpu if busiest is not None else None,
        busy_threads=busiest.busy_threads if busiest is not None else None,
        quota_cores=min(quotas) if (quotas := [
            p.quota_cores for p in tied if p.quota_cores is not None
        ]) else None,
        throttled_pct=max(held) if (held := [
            p.throttled_pct for p in tied if p.throttled_pct is not None
        ]) else None,
    )


def _summed(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _median_count(counts: Sequence[int]) -> int:
    """The median of the polls that saw any (a poll between two process scans sees none)."""
    seen = [n for n in counts if n]
    return round(statistics.median(seen)) if seen else 0


def _median_int(values: Sequence[int | None]) -> int | None:
    seen = [n for n in values if n is not None]
    return round(statistics.median(seen)) if seen else None


def _largest(values: Sequence[int | None]) -> int | None:
    seen = [n for n in values if n is not None]
    return max(seen) if seen else None


def _first(values: Sequence[int | None]) -> int | None:
    return next((v for v in values if v is not None), None)


Fold = Callable[[Sequence[Any]], Any]

#: How each poll's figure (a `PollEvidence` field) becomes the window's (a `HostEvidence`
#: field): one row per figure, run by `fold_evidence`. A figure added to `PollEvidence` needs
#: its row here (tests/analysis/test_evidence_folds.py holds the three together).
FOLDS: tuple[tuple[str, str, Fold], ...] = (
    ("n_tied", "n_process_samples", sum),
    ("foreign", "foreign_processes", any),
    ("trainer_cpu", "trainer_cpu", clean_median),
    ("pin_cpu", "pin_cpu", clean_median),
    ("trainer_delay", "trainer_delay", clean_median),
    ("n_workers", "n_workers", _median_count),
    ("worker_cpu", "worker_cpu", clean_median),
    ("worker_sum", "worker_sum", clean_median),
    ("worker_delay", "worker_delay", clean_median),
    ("worker_demand", "worker_demand", clean_median),
    ("trainer_rchar", "trainer_rchar", clean_median),
    ("trainer_wchar", "trainer_wchar", clean_median),
    ("input_rchar", "input_rchar", clean_median),
    ("input_switches", "input_switches", clean_median),
    ("world_size", "world_size", _largest),
    ("rank", "rank", _first),
    ("n_trainers", "n_trainers", _median_count),
    ("host_trainers", "host_trainers", _median_count),
    ("host_workers", "host_workers", _median_count),
    ("host_proc_cpu", "host_proc_cpu", clean_median),
    ("threads_cpu", "trainer_threads_cpu", clean_median),
    ("busy_threads", "trainer_busy_threads", _median_int),
    ("quota_cores", "quota_cores", clean_median),
    ("throttled_pct", "quota_throttled_pct", clean_median),
)
#: Shares over the window's samples, not medians: (part, whole, `HostEvidence` field).
SHARES: tuple[tuple[str, str, str], ...] = (
    ("d_states", "states", "dstate_frac"),
    ("trainer_d_states", "trainer_states", "trainer_dstate_frac"),
)


def fold_evidence(facts: Sequence[FrameFacts], polls: Sequence[PollEvidence]) -> HostEvidence:
    """The window's `HostEvidence` from each poll's figures (``polls[i]`` of ``facts[i]``):
    each figure folded across polls by its row of `FOLDS` and `SHARES`, host figures from the
    frames."""
    ev = HostEvidence()
    if polls and not any(poll[0] for poll in polls):
        # No process tied to the card at any poll (a host without a trainer, or one seen
        # only through the tool): every process figure is missing, only `foreign` can be set.
        ev.foreign_processes = any(poll.foreign for poll in polls)
    elif polls:
        columns = dict(zip(PollEvidence._fields, zip(*polls, strict=True), strict=True))
        for poll_field, ev_field, fold in FOLDS:
            setattr(ev, ev_field, fold(columns[poll_field]))
        for part, whole, ev_field in SHARES:
            total = sum(columns[whole])
            setattr(ev, ev_field, sum(columns[part]) / total if total else None)
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
