"""A trainer's data wait, step time and rates over a span, from its probe's cumulative counters.

Each publication carries running totals (batches, steps, seconds waited, seconds elapsed) and
the times of the newest batch and step. Differences of those between the first and the last
publication of a span are exact whatever happened in between: a 7 s step reads 7 s with a 1 s
publishing interval, and a burst of micro-batches (gradient accumulation, read-ahead) or an
interval without any batch does not skew the figure the way a median of per-interval rates
does. The verdict's window (`probe_ranks.ranks_of`) and ``check --json``'s whole-run figures both
come from here, so the samples/s quoted in ``why`` and in the JSON are the same kind of figure.

Publications of an older probe (no ``last_*_s``) fall back to the median of their own
per-interval figures. Pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Publication", "SpanRates", "span_rates"]


class Publication(Protocol):
    """What a probe publication must offer (`ProbeSample`, `probe_facts.ProbeFacts`)."""

    @property
    def elapsed_s(self) -> float | None: ...
    @property
    def data_wait_s(self) -> float | None: ...
    @property
    def data_wait_pct(self) -> float | None: ...
    @property
    def batches(self) -> int: ...
    @property
    def steps(self) -> int: ...
    @property
    def last_batch_s(self) -> float | None: ...
    @property
    def last_step_s(self) -> float | None: ...
    @property
    def step_ms(self) -> float | None: ...
    @property
    def batches_per_s(self) -> float | None: ...
    @property
    def samples_per_s(self) -> float | None: ...
    @property
    def batch_size(self) -> int | None: ...


@dataclass(frozen=True, slots=True)
class SpanRates:
    """Figures over one span of publications (None where the span cannot tell)."""

    #: Seconds blocked waiting for data over seconds elapsed, percent.
    wait_pct: float | None
    step_ms: float | None
    batches_per_s: float | None
    samples_per_s: float | None
    #: Seconds between the first and the last publication.
    span_s: float


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _per_s(count0: int, count1: int, t0: float | None, t1: float | None) -> float | None:
    """Events per second between two newest-event times; None where none happened."""
    if t0 is None or t1 is None or count1 <= count0 or t1 <= t0:
        return None
    return (count1 - count0) / (t1 - t0)


def span_rates(pubs: Sequence[Publication]) -> SpanRates:
    """Figures over ``pubs`` (one trainer's distinct publications, in any order)."""
    timed = sorted((p for p in pubs if p.elapsed_s is not None), key=lambda p: p.elapsed_s or 0.0)
    if not timed:
        return SpanRates(_median([p.data_wait_pct for p in pubs]),
                         _median([p.step_ms for p in pubs]),
                         _median([p.batches_per_s for p in pubs]),
                         _median([p.samples_per_s for p in pubs]), 0.0)
    first, last = timed[0], timed[-1]
    span = (last.elapsed_s or 0.0) - (first.elapsed_s or 0.0)
    wait: float | None = None
    if span > 0 and first.data_wait_s is not None and last.data_wait_s is not None:
        wait = min(100.0, max(0.0, 100.0 * (last.data_wait_s - first.data_wait_s) / span))
    else:
        wait = _median([p.data_wait_pct for p in timed])
    new_probe = last.last_batch_s is not None or last.last_step_s is not None
    if not new_probe:  # an older probe: its own per-interval figures
        return SpanRates(wait, _median([p.step_ms for p in timed]),
                         _median([p.batches_per_s for p in timed]),
                         _median([p.samples_per_s for p in timed]), span)
    batches_per_s = _per_s(first.batches, last.batches, first.last_batch_s, last.last_batch_s)
    if batches_per_s is None:
        batches_per_s = last.batches_per_s  # no new batch in the span: the probe's last figure
    steps_per_s = _per_s(first.steps, last.steps, first.last_step_s, last.last_step_s)
    if steps_per_s is not None:
        step_ms: float | None = 1000.0 / steps_per_s
    elif last.steps == 0 and batches_per_s:
        step_ms = 1000.0 / batches_per_s  # no optimizer hook fired: a step is a batch
    else:
        step_ms = last.step_ms  # a step longer than the span: the probe's last figure
    size = last.batch_size
    if batches_per_s is not None and size:
        samples_per_s: float | None = batches_per_s * size
    elif batches_per_s is not None and last.samples_per_s and last.batches_per_s:
        samples_per_s = batches_per_s * last.samples_per_s / last.batches_per_s
    else:
        samples_per_s = None
    return SpanRates(wait, step_ms, batches_per_s, samples_per_s, span)
