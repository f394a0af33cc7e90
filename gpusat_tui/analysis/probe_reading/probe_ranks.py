"""The probed trainers of a window: one `Rank` per process with fresh publications, its
data-wait share, step time and throughput from the cumulative counters of its first and last
publication (`probe_rates`: exact where two publications are in the window, whatever the
publishing interval; else the publication's own figures), its allocator at both ends and its
sampled stack's shares. A process that never got a batch from a DataLoader gives no data-wait
figure (its loop reads data some other way), and publications older than
``probe_max_age_s`` are not evidence. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from gpusat_tui.analysis.probe_reading.probe_facts import ProbeFacts, probe_phase, sample_phase
from gpusat_tui.analysis.probe_reading.probe_rates import span_rates
from gpusat_tui.analysis.probe_reading.stack_shares import StackShares, stack_shares
from gpusat_tui.model import ProbeAlloc

if TYPE_CHECKING:
    from gpusat_tui.analysis.thresholds import Thresholds

__all__ = ["Rank", "WithProbes", "ranks_of"]


@dataclass
class Rank:
    """One probed trainer over the window."""

    pid: int
    rank: int | None
    card_id: str | None
    tie: str | None
    #: Data-wait share of the window, percent (None: the loop used no DataLoader).
    wait_pct: float | None
    step_ms: float | None
    samples_per_s: float | None
    batches_per_s: float | None
    span_s: float
    publications: int
    first_alloc: ProbeAlloc | None
    last_alloc: ProbeAlloc | None
    #: The DataLoader's worker processes as the probe read them; None if unknown.
    num_workers: int | None = None
    world_size: int | None = None
    #: The step's phases and the user's hottest lines over the window (`stack_shares`); None
    #: without a sampling probe.
    stack: StackShares | None = None
    #: Batches and optimizer steps counted over the window, and the phase they show.
    batches_delta: int = 0
    steps_delta: int = 0
    phase: str | None = None
    #: Why this trainer's data wait is not measured (its ``wait_pct`` is then None).
    wait_note: str | None = None
    framework: str | None = None

    @property
    def who(self) -> str:
        return f"PID {self.pid}" + (f", rank {self.rank}" if self.rank is not None else "")

    @property
    def name(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else f"PID {self.pid}"


class WithProbes(Protocol):
    """What `ranks_of` reads of a frame's facts (`facts.FrameFacts`, which is built on this
    `probe_facts.probe_facts`)."""

    @property
    def probes(self) -> tuple[ProbeFacts, ...]: ...


def ranks_of(facts: Sequence[WithProbes], th: Thresholds) -> list[Rank]:
    """Every probed trainer in the window with fresh publications, by rank then PID."""
    by_pid: dict[int, list[ProbeFacts]] = {}
    for ff in facts:
        for p in ff.probes:
            if p.age_s is not None and p.age_s > th.probe_max_age_s:
                continue
            by_pid.setdefault(p.pid, []).append(p)
    ranks: list[Rank] = []
    for pid, pubs in by_pid.items():
        # One entry per publication (a file read twice between two writes counts once).
        seen: dict[float | None, ProbeFacts] = {}
        for p in pubs:
            seen.setdefault(p.elapsed_s, p)
        distinct = list(seen.values())
        last = pubs[-1]
        figures = span_rates(distinct)
        allocs = [p.alloc for p in pubs if p.alloc is not None]
        first = min(distinct, key=lambda p: p.elapsed_s or 0.0)
        newest = max(distinct, key=lambda p: p.elapsed_s or 0.0)
        d_batches = max(0, newest.batches - first.batches)
        d_steps = max(0, newest.steps - first.steps)
        if len(distinct) >= 2:
            phase = probe_phase(d_batches, d_steps, newest.steps)
        else:
            phase = sample_phase(newest)
        ranks.append(Rank(
            pid=pid,
            rank=last.rank,
            card_id=last.card_id,
            tie=last.tie,
            # A process that never got a batch waits on nothing we time: no figure.
            # Nor one whose probe says its wait is not measured (Keras fit, data sink...).
            wait_pct=figures.wait_pct if last.batches > 0 and not last.wait_note else None,
            step_ms=figures.step_ms,
            samples_per_s=figures.samples_per_s,
            batches_per_s=figures.batches_per_s,
            span_s=figures.span_s,
            publications=len(distinct),
            first_alloc=allocs[0] if allocs else None,
            last_alloc=allocs[-1] if allocs else None,
            num_workers=last.num_workers,
            world_size=last.world_size,
            batches_delta=d_batches,
            steps_delta=d_steps,
            phase=phase,
            wait_note=last.wait_note,
            framework=last.framework,
            stack=stack_shares(first, newest),
        ))
    ranks.sort(key=lambda r: (r.rank if r.rank is not None else 1 << 30, r.pid))
    return ranks
