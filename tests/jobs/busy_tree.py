"""A stand-in training job whose CPU load a test chooses: who burns, and for how long.

`fake_tree.py` can make its workers spin, but its trainer always waits in ``waitpid``; a
host-bound job is the opposite (the trainer's main thread pegged, the workers idle), and a step
change needs workers that stop burning part-way. This script does both, without torch:

* ``--workers N``: children renamed ``pt_data_worker`` with ``prctl(PR_SET_NAME)``, as torch does;
* ``--worker-burn-s S``: each worker spins for ``S`` seconds from its start, then sleeps (``-1``:
  never spins, ``inf``: spins until the end); models "input-bound, then num_workers raised";
* ``--stop-file PATH``: workers stop spinning as soon as PATH exists (a test touches it at the
  poll where its scenario changes, which a fixed ``--worker-burn-s`` cannot hit reliably);
* ``--trainer-burn``: the trainer's main thread spins (a training loop doing Python work);
* ``--alternate-s S``: the workers and the trainer take turns, each turn 0.5 to ``S`` seconds
  long (seeded): input-bound and host-bound evidence in runs of a few polls, as on a shared host.

It prints the worker PIDs (space-separated) on one line once they exist. Everything exits after
``--max-s``, on SIGTERM, or (workers) as soon as the trainer is gone, so a crashed test leaves
nothing behind for long.
"""

from __future__ import annotations

import argparse
import bisect
import os
import random
import sys
import time

from tests.jobs.fake_tree import fork_workers, kill_workers, kill_workers_on_sigterm, say

#: How long one spin or nap lasts: short, so a worker notices its trainer is gone quickly.
SLICE_S = 0.05


def spin(seconds: float) -> None:
    """Busy-loop for ``seconds`` of wall time (one core at ~100 % when it gets the CPU)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def turns(alternate_s: float, start: float, seed: int = 7) -> list[float]:
    """Ends of the turns (monotonic times) from ``start``: the workers burn in even turns,
    the trainer in odd ones. The same seed gives every process of the tree the same turns."""
    rng = random.Random(seed)
    ends, t = [], start
    for _ in range(int(3600 / 0.5)):
        t += rng.uniform(0.5, max(alternate_s, 0.5))
        ends.append(t)
    return ends


def workers_turn(ends: list[float], now: float) -> bool:
    return bisect.bisect(ends, now) % 2 == 0


def worker(burn_s: float, deadline: float, parent: int, stop_file: str | None = None,
           ends: list[float] | None = None) -> None:
    """Spin for ``burn_s`` seconds (or until ``stop_file`` exists), then nap; end at
    ``deadline`` or when the parent dies. With ``ends`` (`turns`): spin in the workers' turns."""
    burn_until = time.monotonic() + burn_s
    while time.monotonic() < deadline and os.getppid() == parent:
        if ends is not None:
            if workers_turn(ends, time.monotonic()):
                spin(SLICE_S)
            else:
                time.sleep(SLICE_S)
            continue
        if stop_file is not None and burn_until > 0 and os.path.exists(stop_file):
            burn_until = 0.0
        if time.monotonic() < burn_until:
            spin(SLICE_S)
        else:
            time.sleep(SLICE_S * 4)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-burn-s", type=float, default=-1.0, metavar="SECONDS",
                        help="seconds each worker spins before it idles (-1: idle, inf: always)")
    parser.add_argument("--stop-file", default=None, metavar="PATH",
                        help="workers stop spinning once this file exists")
    parser.add_argument("--trainer-burn", action="store_true",
                        help="the trainer's main thread spins")
    parser.add_argument("--alternate-s", type=float, default=None, metavar="SECONDS",
                        help="workers and trainer spin by turns of 0.5 to SECONDS each")
    parser.add_argument("--max-s", type=float, default=30.0)
    args = parser.parse_args(argv)
    deadline = time.monotonic() + args.max_s
    ends = None if args.alternate_s is None else turns(args.alternate_s, time.monotonic())
    me = os.getpid()
    children = fork_workers(
        args.workers, lambda: worker(args.worker_burn_s, deadline, me, args.stop_file, ends)
    )
    kill_workers_on_sigterm(children)
    say(" ".join(str(c) for c in children))
    while time.monotonic() < deadline:
        if args.trainer_burn or (ends is not None and not workers_turn(ends, time.monotonic())):
            spin(SLICE_S)
        else:
            time.sleep(SLICE_S * 4)
        # Reap workers that ended (a dead worker must vanish, not linger as a zombie).
        while children:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                children.clear()
                break
            if pid == 0:
                break
            if pid in children:
                children.remove(pid)
    kill_workers(children)
    return 0


if __name__ == "__main__":
    sys.exit(main())
