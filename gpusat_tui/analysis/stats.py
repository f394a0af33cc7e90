"""Streaming run statistics (mean/min/max/last) in constant memory.

`check` may run for hours at 1 Hz and `report` reads day-long recordings: keeping every figure
to average it at the end would grow without bound, so each series is folded as it arrives.
``None`` (a figure the tool did not give, or a stale carried-over card) is skipped, so ``last``
is the last *good* figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class RunningStats:
    """mean/min/max/last of the good figures seen so far."""

    count: int = 0
    total: float = 0.0
    min: float | None = None
    max: float | None = None
    last: float | None = None

    def add(self, value: float | None) -> None:
        """Fold one figure in; None and non-finite figures are not figures."""
        if value is None:
            return
        value = float(value)
        if not math.isfinite(value):
            return
        self.count += 1
        self.total += value
        self.min = value if self.min is None else min(self.min, value)
        self.max = value if self.max is None else max(self.max, value)
        self.last = value

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def as_dict(self) -> dict[str, float | None]:
        """The ``STATS`` shape of ``check --json``."""
        return {"mean": self.mean, "min": self.min, "max": self.max, "last": self.last}
