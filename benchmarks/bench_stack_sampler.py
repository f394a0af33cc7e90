#!/usr/bin/env python3
"""What the probe's stack sampler costs a trainer (`gpusat_tui.probe.sampler`).

Run by hand (``python benchmarks/bench_stack_sampler.py``); prints:

1. One sample of a 30-frame stack (another thread blocked 30 calls deep): the time the
   sampler holds the GIL per sample, best of ``--repeat``.
2. A CPU-bound pure-Python loop (30 calls deep, as a training loop's innermost frames are)
   with the sampler sampling it at the default rate and without, interleaved in one run
   (``--rounds`` pairs): how much slower the loop runs, the median of the pairs. The sampler
   takes the GIL at every sample, so the loop waits for the sample and for the hand-over.
3. The sampler thread's own CPU time over that run, as a share of one core.

The sampler thread here runs the publisher's loop (`publish._publisher`) without the
publications: the same `StackSampler.sample` at the same jittered period.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpusat_tui.probe.sampler import DEFAULT_HZ, StackSampler  # noqa: E402

DEPTH = 30


def deep(n: int, fn, *args):  # type: ignore[no-untyped-def]
    """``fn(*args)`` called ``n`` frames deep."""
    if n <= 1:
        return fn(*args)
    return deep(n - 1, fn, *args)


def spin(k: int) -> int:
    total = 0
    for i in range(k):
        total += i * i % 7
    return total


class Sampling:
    """A thread sampling the main thread at ``hz`` (jittered) while ``on`` is set."""

    def __init__(self, hz: float) -> None:
        self.sampler = StackSampler()
        self.period = 1.0 / hz
        self.on = threading.Event()
        self.stop = threading.Event()
        self.cpu = 0.0
        self.held = 0.0
        self.main = threading.main_thread().ident
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        jitter = random.Random(1).random
        while not self.stop.is_set():
            self.on.wait()
            t0 = time.thread_time()
            while self.on.is_set() and not self.stop.wait(self.period * (0.5 + jitter())):
                t = time.perf_counter()
                self.sampler.sample(t, False, self.main)
                self.held += time.perf_counter() - t
            self.cpu += time.thread_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--work", type=int, default=2_000_000, help="loop iterations per run")
    ap.add_argument("--hz", type=float, default=DEFAULT_HZ)
    args = ap.parse_args()

    # 1. one sample of a blocked 30-frame stack
    started, release = threading.Event(), threading.Event()

    def blocked() -> None:
        started.set()
        release.wait()

    other = threading.Thread(target=deep, args=(DEPTH, blocked), daemon=True)
    other.start()
    started.wait()
    sampler = StackSampler()
    sampler.thread = other.ident
    k = 20_000

    def samples() -> float:
        t0 = time.perf_counter()
        for _ in range(k):
            sampler.sample(0.0, False, None)
        return (time.perf_counter() - t0) / k * 1e6

    per_sample = min(samples() for _ in range(args.repeat))
    print(f"1. one sample of a {len(sampler.frames)}-frame stack: {per_sample:.1f} us "
          f"(at {args.hz:g} Hz: {per_sample * args.hz / 1e4:.3f} % of a core)")
    release.set()

    # 2. and 3. a CPU-bound loop with and without sampling, interleaved
    sampling = Sampling(args.hz)
    deep(DEPTH, spin, args.work // 10)  # warm-up

    cpu_pairs: list[float] = []

    def run(on: bool) -> tuple[float, float]:
        if on:
            sampling.on.set()
        t0, c0 = time.perf_counter(), time.thread_time()
        deep(DEPTH, spin, args.work)
        wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
        sampling.on.clear()
        return wall, cpu

    pairs = []
    walls_on = 0.0
    for i in range(args.rounds):
        if i % 2:
            off, on = run(False), run(True)
        else:
            on, off = run(True), run(False)
        walls_on += on[0]
        pairs.append(100.0 * (on[0] - off[0]) / off[0])
        cpu_pairs.append(100.0 * (on[1] - off[1]) / off[1])
    sampling.stop.set()
    sampling.on.set()
    sampling.thread.join()
    low, _, high = statistics.quantiles(pairs, n=4)
    print(f"2. CPU-bound pure-Python loop, {args.rounds} interleaved pairs of "
          f"{args.work:,} iterations: {statistics.median(pairs):+.2f} % slower with sampling "
          f"at {args.hz:g} Hz (median; quartiles {low:+.2f} / {high:+.2f} %), "
          f"{sampling.sampler.samples} samples")
    low, _, high = statistics.quantiles(cpu_pairs, n=4)
    print(f"2b. the loop's own CPU time (thread_time: what other processes' load does not "
          f"blur): {statistics.median(cpu_pairs):+.2f} % with sampling "
          f"(quartiles {low:+.2f} / {high:+.2f} %)")
    print(f"2c. the GIL held by the sampler (its samples' time over the loop's wall time): "
          f"{100.0 * sampling.held / walls_on:.3f} %")
    print(f"3. the sampler thread's CPU: {100.0 * sampling.cpu / walls_on:.3f} % of one core "
          f"while sampling")


if __name__ == "__main__":
    main()
