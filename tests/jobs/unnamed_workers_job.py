"""A trainer whose data workers keep the name ``python`` (as torchdata's, Paddle's, MindSpore's
and Grain's do), started by ``multiprocessing`` with a given start method, beside a helper
subprocess that loads no data. Prints ``READY <trainer> <worker pids...>`` then waits for its
stdin to close.

Usage: unnamed_workers_job.py START N
"""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys
import time


def worker_loop(stop: object) -> None:
    # A data worker: produce "batches" until told to stop (never renamed).
    while not stop.is_set():  # type: ignore[attr-defined]
        time.sleep(0.01)


def main() -> int:
    start, n = sys.argv[1], int(sys.argv[2])
    ctx = mp.get_context(start)
    stop = ctx.Event()  # a semaphore: spawn and forkserver also start the resource tracker
    procs = [ctx.Process(target=worker_loop, args=(stop,), daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    helper = subprocess.Popen(["sleep", "600"])  # a child that is no worker
    print("READY", os.getpid(), *(p.pid for p in procs), flush=True)
    sys.stdin.read()
    stop.set()
    for p in procs:
        p.join(10)
    helper.kill()
    helper.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
