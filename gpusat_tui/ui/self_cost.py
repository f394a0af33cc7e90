"""The dashboard's own costs: the CPU figure it shows for itself, and its start-up heap."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

#: Frames shown before the start-up heap is frozen (`settle_heap`): imports, the first
#: layouts and the verdict windows' first frames are behind it by then.
FREEZE_HEAP_AFTER = 3


def settle_heap() -> None:
    """Collect once, then move every object alive to the collector's permanent generation.

    The ~80,000 objects of start-up (modules, the widget tree, the stylesheet) live as long as
    the app, yet each full collection walked them all again: measured at 60-80 ms per full
    collection, one every ~25 s in the 160×50 overview, plus the young collections. Frozen,
    they are never traversed again; what the app allocates afterwards is collected as usual.
    Cost: one collection at start-up (~20 ms), and start-up garbage the first collection
    missed (none is known) would be kept for good.
    """
    gc.collect()
    gc.freeze()


def process_cpu_sampler(
    cpu: Callable[[], float] = time.process_time, clock: Callable[[], float] = time.monotonic
) -> Callable[[], float | None]:
    """CPU % of this process (all its threads) since the previous call; None on the first.

    From ``time.process_time`` (the kernel's exact per-process count), not psutil's figure,
    which moves in 10 ms clock ticks: at ~1 % of a core over 5 s that is ±0.2 % of noise.
    """
    last: list[float] = [cpu(), clock()]

    def sample() -> float | None:
        now_cpu, now = cpu(), clock()
        (was_cpu, was), last[:] = last, [now_cpu, now]
        if now <= was:
            return None
        return max(0.0, 100.0 * (now_cpu - was_cpu) / (now - was))

    return sample


#: Seconds of steady running the first own-CPU figure is measured over.
CPU_FIRST_FIGURE_S = 2.0


class OwnCpuFigure:
    """The CPU figure the status line shows for the dashboard: its steady cost.

    Its first interval starts once start-up is behind (`start`: the first frames drawn, the
    heap frozen); until then the status line shows "…". Measured from launch, the first
    figure read 7 % for a dashboard that then costs 0.5-1 %. An injected sampler (tests)
    answers at once.
    """

    def __init__(self, sampler: Callable[[], float | None] | None = None) -> None:
        self.sampler = sampler
        self.injected = sampler is not None
        #: Whether the first interval has started (`start`); nothing to start without one.
        self.started = True

    def measure_steady(self, sampler: Callable[[], float | None]) -> None:
        """Measure with ``sampler`` (`process_cpu_sampler`), from `start` on."""
        self.sampler = sampler
        self.started = False

    def start(self) -> bool:
        """Start the first interval now; False where it had started already."""
        if self.started or self.sampler is None:
            return False
        self.started = True
        self.sampler()  # the share since launch: start-up, not what the dashboard costs
        return True
