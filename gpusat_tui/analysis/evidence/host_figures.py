"""The host figures tied to one card, each declared once with how a window folds it.

`HostFigures` is both one poll's figures of the processes tied to a card (`PollEvidence`) and
the window's (`HostEvidence`): each field is a figure, its default, and in its metadata the
fold that turns the polls' values into the window's (a median, a sum, the largest...), so a
figure added here is measured per poll and summarised per window with no second declaration.
What it costs: a fold must return the figure's own type (a share of two counts cannot be one:
those are `host_evidence.SHARES`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from gpusat_tui.analysis.clean_series import clean_median

__all__ = ["FOLDS", "Fold", "HostFigures"]

Fold = Callable[[Sequence[Any]], Any]


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


def _fold(fold: Fold) -> Mapping[str, Fold]:
    return {"fold": fold}


@dataclass(slots=True)
class HostFigures:
    """Figures of the processes tied to one card: of one poll, or folded over a window."""

    #: Process samples tied to the card (summed over the window's polls).
    n_process_samples: int = field(default=0, metadata=_fold(sum))
    #: Processes were seen, none of them tied to the card.
    foreign_processes: bool = field(default=False, metadata=_fold(any))
    #: The trainer's CPU and its pin-memory thread's (percent of one core, the busiest
    #: trainer per poll), and its run delay (percent of wall time waiting for a CPU).
    trainer_cpu: float | None = field(default=None, metadata=_fold(clean_median))
    pin_cpu: float | None = field(default=None, metadata=_fold(clean_median))
    trainer_delay: float | None = field(default=None, metadata=_fold(clean_median))
    #: DataLoader workers (the median of the polls that saw any).
    n_workers: int = field(default=0, metadata=_fold(_median_count))
    #: Median and sum of the workers' CPU per poll; their run delay and what they asked for
    #: (CPU % + run delay %), median worker per poll (None without run delay figures).
    worker_cpu: float | None = field(default=None, metadata=_fold(clean_median))
    worker_sum: float | None = field(default=None, metadata=_fold(clean_median))
    worker_delay: float | None = field(default=None, metadata=_fold(clean_median))
    worker_demand: float | None = field(default=None, metadata=_fold(clean_median))
    #: Bytes/s through read/write calls: the trainer's own reads and writes, and the input
    #: pipeline's reads (the workers' summed; the trainer's without workers). None where no
    #: counters were read.
    trainer_rchar: float | None = field(default=None, metadata=_fold(clean_median))
    trainer_wchar: float | None = field(default=None, metadata=_fold(clean_median))
    input_rchar: float | None = field(default=None, metadata=_fold(clean_median))
    #: The most wake-ups per second of one input-pipeline process's main thread.
    input_switches: float | None = field(default=None, metadata=_fold(clean_median))
    #: The trainer's launcher variables (its environment): world size (the largest) and rank
    #: (the first set).
    world_size: int | None = field(default=None, metadata=_fold(_largest))
    rank: int | None = field(default=None, metadata=_fold(_first))
    #: Trainers tied to the card (their workers are ``n_workers``), and every trainer and
    #: DataLoader worker on the host with their CPU summed (percent of one core): advice on
    #: free cores counts the other jobs' processes too.
    n_trainers: int = field(default=0, metadata=_fold(_median_count))
    host_trainers: int = field(default=0, metadata=_fold(_median_count))
    host_workers: int = field(default=0, metadata=_fold(_median_count))
    host_proc_cpu: float | None = field(default=None, metadata=_fold(clean_median))
    #: The trainer's threads other than its main and pin-memory threads: CPU % together and
    #: how many are busy (where tf.data or MindSpore load, in threads).
    trainer_threads_cpu: float | None = field(default=None, metadata=_fold(clean_median))
    trainer_busy_threads: int | None = field(default=None, metadata=_fold(_median_int))
    #: The tightest CPU quota over the job's trainer and workers (cores), and the share of
    #: its periods throttled (percent, the most throttled of them per poll); None where no
    #: quota was read (`host.cpu_quota`).
    quota_cores: float | None = field(default=None, metadata=_fold(clean_median))
    quota_throttled_pct: float | None = field(default=None, metadata=_fold(clean_median))


#: Each figure and how the window folds its polls' values (from `HostFigures`' fields).
FOLDS: tuple[tuple[str, Fold], ...] = tuple(
    (f.name, f.metadata["fold"]) for f in fields(HostFigures)
)
