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
4. One sample of a thread blocked in a C call from its innermost frame, 30 frames deep: a
   plain C call (``lock.acquire``), and a stand-in of a ``jax.jit`` function (its call runs in
   C) named by a global and by a local (which, before Python 3.13, copies the frame's locals
   into its dict: a frame with 40 locals here); and the first sample at a new call site (its
   code's bytecode read, in a 2,000-line function).

The sampler thread here runs the publisher's loop (`publish._publisher`) without the
publications: the same `StackSampler.sample` at the same jittered period.
"""

from __future__ import annotations

import argparse
import dis
import functools
import random
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpusat_tui.probe.calls import call_site  # noqa: E402
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
    bench_calls(args.repeat)


class PjitFunction(functools.partial):  # type: ignore[type-arg]
    """Stands in for ``jaxlib._jax.PjitFunction``: its call runs in C."""


PjitFunction.__module__ = "jaxlib._jax"
GLOBAL_STEP: object = None


def calls_global(started: threading.Event) -> None:
    started.set()
    GLOBAL_STEP()  # type: ignore[operator]


def calls_local(started: threading.Event, step: object) -> None:
    # 40 locals, as a training loop's frame has
    v00 = v01 = v02 = v03 = v04 = v05 = v06 = v07 = v08 = v09 = list(range(10))  # noqa: F841
    v10 = v11 = v12 = v13 = v14 = v15 = v16 = v17 = v18 = v19 = {"k": 1}  # noqa: F841
    v20 = v21 = v22 = v23 = v24 = v25 = v26 = v27 = v28 = v29 = "text"  # noqa: F841
    v30 = v31 = v32 = v33 = v34 = v35 = v36 = v37 = 3.0  # noqa: F841
    started.set()
    step()  # type: ignore[operator]


def calls_plain(started: threading.Event, lock: threading.Lock) -> None:
    started.set()
    lock.acquire()


def us_per_sample(sampler: StackSampler, k: int) -> float:
    t0 = time.perf_counter()
    for _ in range(k):
        sampler.sample(0.0, False, None)
    return (time.perf_counter() - t0) / k * 1e6


def bench_calls(repeat: int) -> None:
    global GLOBAL_STEP
    lock = threading.Lock()
    lock.acquire()
    step = GLOBAL_STEP = PjitFunction(lock.acquire)
    cases = [("a plain C call", calls_plain, (lock,)), ("jax.jit via a global", calls_global, ()),
             ("jax.jit via a local", calls_local, (step,))]
    for label, target, args in cases:
        started = threading.Event()
        thread = threading.Thread(target=deep, args=(DEPTH, target, started, *args),
                                  daemon=True)
        thread.start()
        started.wait()
        sampler = StackSampler()
        sampler.thread = thread.ident
        time.sleep(0.05)  # in its call
        per_sample = min(us_per_sample(sampler, 20_000) for _ in range(repeat))
        print(f"4. one sample in {label}: {per_sample:.1f} us, phase {sampler.phase} "
              f"({sampler.where()})")
    lock.release()
    lines = "\n".join(f"    x{i} = len(str({i}))" for i in range(2000))
    scope: dict[str, object] = {}
    exec(compile(f"def big():\n{lines}\n    return step(x1)\n", "<bench>", "exec"), scope)
    code = scope["big"].__code__  # type: ignore[attr-defined]
    last = max(i.offset for i in dis.get_instructions(code) if i.opname == "CALL")
    t0 = time.perf_counter()
    call_site(code, last)
    first = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    call_site(code, last - 2)
    again = (time.perf_counter() - t0) * 1e3
    print(f"4b. the first sample at a call site of a 2,000-line function: {first:.1f} ms "
          f"(its bytecode read), at another site of it: {again:.2f} ms")


if __name__ == "__main__":
    main()
