"""A trainer's probe figures over a whole session, across restarts of its counters.

A probe's counters (``elapsed_s``, ``data_wait_s``, ``batches``, ``steps``) only grow while the
probe runs, so the first and the last publication give the session's means (`probe_rates`). A
publication whose counters went back (a trainer that re-executed itself under the same PID and
started a new probe, or a file rewritten by something else) starts a new stretch: the
difference across the drop measures nothing. Each stretch gives its own figures and the session
weighs them by their spans, so a session that waited 80 % then 2 % reads the mean of the two,
not whatever the drop left. The cost: the time between the last publication before a drop and
the first after it is not counted (one publication interval). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusat_tui.analysis.probe_reading.probe_rates import Publication, SpanRates, span_rates

__all__ = ["SessionCounters", "went_back"]


def went_back(before: Publication, after: Publication) -> bool:
    """Whether ``after``'s counters are lower than ``before``'s: not the same counting."""
    pairs = ((before.elapsed_s, after.elapsed_s), (before.data_wait_s, after.data_wait_s),
             (before.batches, after.batches), (before.steps, after.steps))
    return any(a is not None and b is not None and b < a for a, b in pairs)


def _weighted(values: list[tuple[float | None, float]]) -> float | None:
    known = [(v, w) for v, w in values if v is not None and w > 0]
    total = sum(w for _, w in known)
    return sum(v * w for v, w in known) / total if total > 0 else None


@dataclass(slots=True)
class SessionCounters:
    """The first and last publication of each stretch of growing counters, in order."""

    stretches: list[tuple[Publication, Publication]] = field(default_factory=list)

    def add(self, pub: Publication) -> None:
        """Fold in the next distinct publication (in the order they were seen)."""
        if self.stretches and not went_back(self.stretches[-1][1], pub):
            self.stretches[-1] = (self.stretches[-1][0], pub)
        else:
            self.stretches.append((pub, pub))

    def rates(self) -> SpanRates | None:
        """The session's figures (each stretch weighed by its span), or None where no stretch
        spans any time."""
        spans = [span_rates([first, last]) for first, last in self.stretches if first is not last]
        spans = [r for r in spans if r.span_s > 0]
        if not spans:
            return None
        if len(spans) == 1:
            return spans[0]
        steps_per_s = _weighted([(1000.0 / r.step_ms if r.step_ms else None, r.span_s)
                                 for r in spans])
        return SpanRates(
            wait_pct=_weighted([(r.wait_pct, r.span_s) for r in spans]),
            step_ms=1000.0 / steps_per_s if steps_per_s else None,
            batches_per_s=_weighted([(r.batches_per_s, r.span_s) for r in spans]),
            samples_per_s=_weighted([(r.samples_per_s, r.span_s) for r in spans]),
            span_s=sum(r.span_s for r in spans),
        )
