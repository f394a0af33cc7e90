"""Host evidence: which processes serve which card, and their figures over a window.

`ProcessTie` ties processes to cards (through ``ProcessSample.card_ids``; a worker inherits its
trainer's cards; without any card ids every process serves every card) and groups cards into
jobs. `host_evidence` summarises the tied processes and the host over the window (medians
across polls) into a `HostEvidence`; `EvidenceCache` computes it on demand, once per distinct
set of tied processes, so a window of saturated cards never computes it at all.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpusat_tui.analysis.facts import FrameFacts, ProcFacts

__all__ = ["EvidenceCache", "HostEvidence", "ProcessTie", "host_evidence"]


class ProcessTie:
    """Which processes count as evidence for which card (see the module docstring)."""

    def __init__(self, facts: Sequence[FrameFacts]) -> None:
        self.trainer_cards: dict[object, set[str]] = {}
        self.any_card_ids = False
        for ff in facts:
            for proc in ff.procs:
                if proc.card_ids:
                    self.any_card_ids = True
                    if proc.is_trainer:
                        self.trainer_cards.setdefault(proc.pid, set()).update(proc.card_ids)
        self._tied_sets: dict[tuple[tuple[str, ...], bool, object], frozenset[str]] = {}

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


class EvidenceCache:
    """Host evidence of one window, computed on demand and shared between cards.

    The evidence depends on the card only through which processes are tied to it: without card
    ids every process serves every card (one computation for all cards), and with them cards
    tied to the same processes share one. Only a ``starving`` verdict reads it, so a window of
    saturated cards never computes it at all.
    """

    def __init__(self, facts: Sequence[FrameFacts], tie: ProcessTie) -> None:
        self._facts = facts
        self._tie = tie
        self._tied: list[list[frozenset[str]]] | None = None
        self._distinct: list[frozenset[str]] = []
        self._by_key: dict[object, HostEvidence] = {}

    def __call__(self, card_id: str) -> HostEvidence:
        if not self._tie.any_card_ids:
            key: object = None
            tied_sets = None
        else:
            if self._tied is None:
                self._tied = [[self._tie.tied_cards(p) for p in ff.procs] for ff in self._facts]
                self._distinct = list({s for sets in self._tied for s in sets})
            # Cards in the same distinct tie sets are tied to exactly the same processes.
            key = frozenset(i for i, s in enumerate(self._distinct) if card_id in s)
            tied_sets = self._tied
        found = self._by_key.get(key)
        if found is None:
            found = self._by_key[key] = host_evidence(self._facts, card_id, tied_sets)
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

    @property
    def has_processes(self) -> bool:
        return self.n_process_samples > 0


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def host_evidence(
    facts: Sequence[FrameFacts],
    card_id: str,
    tied_sets: Sequence[Sequence[frozenset[str]]] | None,
) -> HostEvidence:
    """``tied_sets[i][j]``: the cards process j of frame i serves; None: every process serves
    every card (no card ids anywhere in the window)."""
    ev = HostEvidence()
    trainer_cpus: list[float] = []
    pin_cpus: list[float] = []
    worker_counts: list[int] = []
    worker_meds: list[float] = []
    worker_sums: list[float] = []
    d_states = 0
    states = 0
    iowaits: list[float] = []
    host_cpus: list[float] = []
    for i, ff in enumerate(facts):
        procs = ff.procs
        if tied_sets is None:
            tied: Sequence[ProcFacts] = procs
        else:
            tied = [p for p, s in zip(procs, tied_sets[i], strict=True) if card_id in s]
        if procs and not tied:
            ev.foreign_processes = True
        ev.n_process_samples += len(tied)
        t_cpu = [p.cpu for p in tied if p.is_trainer and p.cpu is not None]
        if t_cpu:
            trainer_cpus.append(max(t_cpu))
        pins = [p.pin for p in tied if p.is_trainer and p.pin is not None]
        if pins:
            pin_cpus.append(max(pins))
        n_workers = 0
        w_cpu: list[float] = []
        for p in tied:
            if p.is_worker:
                n_workers += 1
                if p.cpu is not None:
                    w_cpu.append(p.cpu)
            if p.state is not None:
                states += 1
                d_states += p.state == "disk-sleep"
        if n_workers:
            worker_counts.append(n_workers)
        if w_cpu:
            worker_meds.append(statistics.median(w_cpu))
            worker_sums.append(sum(w_cpu))
        if ff.iowait is not None:
            iowaits.append(ff.iowait)
        if ff.host_cpu is not None:
            host_cpus.append(ff.host_cpu)
        if ff.cpu_count is not None:
            ev.cpu_count = ff.cpu_count
    ev.trainer_cpu = _median(trainer_cpus)
    ev.pin_cpu = _median(pin_cpus)
    ev.n_workers = round(statistics.median(worker_counts)) if worker_counts else 0
    ev.worker_cpu = _median(worker_meds)
    ev.worker_sum = _median(worker_sums)
    ev.dstate_frac = d_states / states if states else None
    ev.iowait = _median(iowaits)
    ev.host_cpu = _median(host_cpus)
    return ev
