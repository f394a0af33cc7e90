"""Summaries of a series whose figures are already clean (`num`, read once per frame by `facts`).

`window.stats` and `window.reversals` check every figure as they go; a window judged on every
poll re-reads the same frames, so the verdict summarises figures cleaned once instead, with the
same results. What it costs: a figure handed in here unchecked is trusted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from gpusat_tui.analysis.window import Stats

__all__ = ["clean_median", "clean_reversals", "clean_stats", "sorted_figures"]


def sorted_figures(values: Sequence[float | None]) -> list[float]:
    """The figures of ``values`` (None: missing), in ascending order. One sort where none is
    missing (most series): a None makes that sort fail, since None and a float do not
    compare, and only then are the figures picked out first (cheaper than looking for a None
    in every series). A series that starts with a None (often one the tool never gives) is
    filtered first, without the failed sort."""
    if values and values[0] is None:
        return sorted([v for v in values if v is not None])
    try:
        return sorted(values)  # type: ignore[arg-type]  # a None fails the sort: caught below
    except TypeError:
        return sorted([v for v in values if v is not None])


def clean_stats(values: Iterable[float | None]) -> Stats | None:
    """`stats` of figures already cleaned by `num` (same result, without re-checking each)."""
    items = values if isinstance(values, (list, tuple)) else list(values)
    # The sort gives the median (as `statistics.median` computes it), the min (the first of
    # equal ones, as `min` picks: the sort is stable), the sum (`fsum` is exact in any order)
    # and the max, except where the top is zero: `max` picks the first of equal ones (0.0
    # before -0.0), which the sorted list's end would not.
    ordered = sorted_figures(items)
    n = len(ordered)
    if not n:
        return None
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    top = ordered[-1]
    if not top:
        top = max(v for v in items if v is not None)
    last = items[-1]
    if last is None:
        last = next(v for v in reversed(items) if v is not None)
    return Stats(n, len(items) - n, math.fsum(ordered) / n, median, ordered[0], top, last)


def clean_median(values: Iterable[float | None]) -> float | None:
    """The median of `clean_stats`, alone (for figures of which only the median is read)."""
    present = sorted_figures(values if isinstance(values, (list, tuple)) else list(values))
    n = len(present)
    if not n:
        return None
    mid = n // 2
    return present[mid] if n % 2 else (present[mid - 1] + present[mid]) / 2


def clean_reversals(values: Sequence[float | None], min_step: float) -> int:
    """`reversals` of figures already cleaned by `num` (same count, without re-checking)."""
    count = 0
    direction = 0
    previous: float | None = None
    for figure in values:
        if figure is None:
            continue
        if previous is None:
            previous = figure
        elif abs(figure - previous) > min_step:
            step = 1 if figure > previous else -1
            if direction and step != direction:
                count += 1
            direction = step
            previous = figure
    return count
