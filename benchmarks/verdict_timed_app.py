"""The dashboard with its verdict tracker's CPU counted: run by ``bench_verdict.py --share``.

    python benchmarks/verdict_timed_app.py COUNT_FILE [gpusat-tui arguments]

Wraps `VerdictTracker.push`, ``explain`` and ``window_ranks`` (whatever tree is first on
``PYTHONPATH``) so that the CPU time of the thread running each call is added up, and writes
the running total in nanoseconds to COUNT_FILE after every call (one ``pwrite`` of a few bytes),
then runs ``python -m gpusat_tui`` as usual. The bench reads the file beside the process's own
CPU to give the verdict's share of it.
"""

from __future__ import annotations

import functools
import os
import runpy
import sys
import time
from collections.abc import Callable
from typing import Any


def main() -> None:
    from gpusat_tui.analysis.verdicts import tracker

    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    total = [0]

    def counted(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.thread_time_ns()
            try:
                return method(*args, **kwargs)
            finally:
                total[0] += time.thread_time_ns() - start
                os.pwrite(fd, f"{total[0]:020d}".encode(), 0)

        return wrapper

    cls = tracker.VerdictTracker
    for name in ("push", "explain", "window_ranks"):
        setattr(cls, name, counted(getattr(cls, name)))
    sys.argv = ["gpusat-tui", *sys.argv[2:]]
    runpy.run_module("gpusat_tui", run_name="__main__")


if __name__ == "__main__":
    main()
