"""One poll's figures of the processes tied to one card (`poll_evidence`): the `HostFigures`
the window folds, and the counts its disk-sleep shares are taken from. Pure."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpusat_tui.analysis.evidence.host_figures import HostFigures
from gpusat_tui.analysis.facts import ProcFacts

__all__ = ["PollEvidence", "poll_evidence"]


@dataclass(slots=True)
class PollEvidence(HostFigures):
    """One poll's figures of the processes tied to one card (`host_evidence` folds them)."""

    #: Input-pipeline processes (the workers; the trainer without workers) with a state, and
    #: how many of them in disk-sleep; the same of the trainers.
    states: int = 0
    d_states: int = 0
    trainer_states: int = 0
    trainer_d_states: int = 0


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
        n_process_samples=len(tied),
        foreign_processes=bool(procs) and not tied,
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
        trainer_threads_cpu=busiest.threads_cpu if busiest is not None else None,
        trainer_busy_threads=busiest.busy_threads if busiest is not None else None,
        quota_cores=min(quotas) if (quotas := [
            p.quota_cores for p in tied if p.quota_cores is not None
        ]) else None,
        quota_throttled_pct=max(held) if (held := [
            p.throttled_pct for p in tied if p.throttled_pct is not None
        ]) else None,
    )


def _summed(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None
