#!/usr/bin/env python3
"""What one stack dump read from outside costs (`sources.polling.outside_stacks`).

Run by hand (``python benchmarks/bench_py_spy_dump.py``, with py-spy installed:
``pip install '.[pyspy]'``); prints, over ``--runs`` dumps of a real hung job
(`tests/jobs/hung_job.py`, two threads):

1. the wall time of ``py-spy dump --pid PID --json`` as the monitor runs it (an upper bound on
   how long the target is paused: py-spy pauses it only while it reads its stacks);
2. py-spy's own CPU time per dump (its user + system time, from ``getrusage`` of children).

The monitor takes at most one dump per trainer a minute, and only of a trainer that looks
stalled or pegged.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.outside_helpers import hung_job, py_spy_path  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    exe = py_spy_path()
    if exe is None:
        sys.exit("py-spy is not installed (pip install '.[pyspy]')")
    walls: list[float] = []
    cpus: list[float] = []
    with hung_job() as job:
        for _ in range(args.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([exe, "dump", "--pid", str(job.pid), "--json"],
                           capture_output=True, check=True)
            walls.append(1000 * (time.perf_counter() - start))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(1000 * (after.ru_utime + after.ru_stime
                                - before.ru_utime - before.ru_stime))
    for name, values in (("wall", walls), ("cpu", cpus)):
        q = statistics.quantiles(values, n=4)
        print(f"{name} ms per dump: median {statistics.median(values):.1f}, "
              f"quartiles {q[0]:.1f}-{q[2]:.1f}, max {max(values):.1f}")


if __name__ == "__main__":
    main()
