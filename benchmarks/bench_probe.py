#!/usr/bin/env python3
"""What the probe costs inside a trainer, and what reading its files costs the monitor.

Run by hand (``python benchmarks/bench_probe.py``); prints figures, best of ``--repeat`` runs:

1. Per batch, the hook alone: ``_BaseDataLoaderIter.__next__`` wrapped vs not, around an
   iterator that returns a ready tensor (so only the probe's own work is timed), with the
   1-in-64 slow path (batch size, device) included. Target: <= 2 us added per batch.
2. Per batch, a real ``DataLoader`` (num_workers=0, batch of one small tensor): probe on vs
   off in the same process. DataLoader's own cost is tens of microseconds, so this figure is
   noisy; it shows the hook's cost in context.
3. Per optimizer step: the global post hook, on vs off (SGD on one small parameter).
4. Publishing (on the probe's daemon thread, once a second): one snapshot + write + rename.
5. Reading (the monitor, once a poll): `ProbeReader.sample` with 1 and with 8 probe files.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    return min(fn() for _ in range(repeat))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--dir", default=None, help="where to publish (default: the temp dir)")
    args = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="bench-probe-", dir=args.dir)
    os.environ["GPUSAT_PROBE_DIR"] = folder
    os.environ["GPUSAT_PROBE_INTERVAL"] = "60"  # the thread stays out of the timings

    import torch
    from torch.utils.data import DataLoader

    from gpusat_tui.probe import enable, publish, state, timing

    torch.set_num_threads(1)
    assert enable()
    st = state.STATE
    batch = torch.ones(8, 4)
    n = args.n

    def bare_next(self: object) -> torch.Tensor:
        return batch

    wrapped = timing.wrap_next(bare_next)

    def timed(fn) -> float:  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        for _ in range(n):
            fn(None)
        return (time.perf_counter() - t0) / n * 1e6

    wrapped(None)  # first batch: starts the (idle) publisher thread
    t_bare = best(lambda: timed(bare_next), args.repeat)
    t_wrapped = best(lambda: timed(wrapped), args.repeat)
    print(f"1. hook per batch: {t_wrapped - t_bare:.3f} us added "
          f"({t_bare:.3f} us bare call, {t_wrapped:.3f} us wrapped), n={n:,}")

    # The iterator-protocol adapters (Grain, tf.data, MindSpore: `iter_hooks`) time the
    # outermost next() of the main thread; a pipeline's nested iterators (Grain chains one
    # per transformation, tf.data's numpy iterator over its OwnedIterator) each pay a thread
    # and depth check. Paddle's adapter is `wrap_next` itself (figure 1).
    outer = timing.wrap_outer_next(bare_next, "grain")
    t_outer = best(lambda: timed(outer), args.repeat)
    print(f"1b. Grain/tf.data/MindSpore hook per batch: {t_outer - t_bare:.3f} us added "
          f"({t_outer:.3f} us wrapped)")
    inner = timing.wrap_outer_next(bare_next, "grain")

    def chained_next(self: object) -> torch.Tensor:
        for _ in range(4):
            inner(None)
        return batch


    def bare_chain(self: object) -> torch.Tensor:
        for _ in range(4):
            bare_next(None)
        return batch

    chained = timing.wrap_outer_next(chained_next, "grain")
    t_chain_bare = best(lambda: timed(bare_chain), args.repeat)
    t_chain = best(lambda: timed(chained), args.repeat)
    print(f"1c. the same with 4 nested iterators under it (a Grain pipeline): "
          f"{t_chain - t_chain_bare:.3f} us added per batch")

    loader = DataLoader([torch.ones(4)] * 20_000, batch_size=1)

    def epoch(on: bool) -> float:
        st.on = on
        t0 = time.perf_counter()
        count = 0
        for _ in loader:
            count += 1
        st.on = True
        return (time.perf_counter() - t0) / count * 1e6

    epoch(True)  # warm-up
    runs = [(epoch(False), epoch(True)) for _ in range(args.repeat)]  # interleaved
    t_off, t_on = min(r[0] for r in runs), min(r[1] for r in runs)
    print(f"2. real DataLoader per batch: {t_on:.2f} us with the probe, {t_off:.2f} us without "
          f"({t_on - t_off:+.2f} us; noisy: DataLoader's own cost dominates)")

    param = torch.nn.Parameter(torch.zeros(4))
    opt = torch.optim.SGD([param], lr=0.1)
    param.grad = torch.zeros(4)

    def steps(on: bool, k: int = 50_000) -> float:
        st.on = on
        t0 = time.perf_counter()
        for _ in range(k):
            opt.step()
        st.on = True
        return (time.perf_counter() - t0) / k * 1e6

    steps(True)  # warm-up
    runs = [(steps(False), steps(True)) for _ in range(args.repeat)]
    s_off, s_on = min(r[0] for r in runs), min(r[1] for r in runs)
    print(f"3. optimizer step hook: {s_on - s_off:+.2f} us per step "
          f"({s_on:.2f} vs {s_off:.2f} us per SGD step)")

    # Keras: the train-batch-end callback counts a step (`trainer_hooks`): one count_step.
    def keras_steps(k: int = 200_000) -> float:
        t0 = time.perf_counter()
        for _ in range(k):
            timing.count_step(None, "keras")
        return (time.perf_counter() - t0) / k * 1e6

    print(f"3b. Keras fit: train-batch-end callback hook {best(keras_steps, args.repeat):.3f} us "
          "per step (the count alone; no data-wait figure there)")

    def publishes(k: int = 2000) -> float:
        t0 = time.perf_counter()
        for _ in range(k):
            publish.publish_now()
        return (time.perf_counter() - t0) / k * 1e6

    print(f"4. one publication (snapshot + write + rename, daemon thread, 1/s): "
          f"{best(publishes, args.repeat):.1f} us; file "
          f"{os.path.getsize(st.path or '')} bytes")

    from gpusat_tui.host.probes.probe_files import ProbeReader
    from gpusat_tui.model import CardReading

    cards = [CardReading(vendor="nvidia", index=i) for i in range(8)]
    reader = ProbeReader(dirs=[folder])
    path = Path(st.path or "")
    data = path.read_bytes()

    def reads(k: int = 2000) -> float:
        t0 = time.perf_counter()
        for _ in range(k):
            reader.sample(cards)
        return (time.perf_counter() - t0) / k * 1e6

    one = best(reads, args.repeat)
    # Seven more files of live Python processes (the monitor accepts a probe file only from a
    # process that can have written it): 8 ranks' worth.
    import subprocess

    children = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
                for _ in range(7)]
    extra = []
    for child in children:
        pid = child.pid
        p = Path(folder) / f"probe-{pid}.json"
        p.write_bytes(data.replace(f'"pid":{os.getpid()}'.encode(), f'"pid":{pid}'.encode())
                      .replace(b'"start_ticks":', b'"start_ticks":null,"x":'))
        extra.append(p)
    assert len(reader.sample(cards)[0]) == 8, "the extra probe files were not all accepted"
    eight = best(reads, args.repeat)
    print(f"5. monitor read per poll: {one:.1f} us for 1 probe file, {eight:.1f} us for "
          f"{1 + len(extra)} ({eight / (1 + len(extra)):.1f} us per file)")
    for p in extra:
        p.unlink()
    for child in children:
        child.kill()
        child.wait()
    state.disable()


if __name__ == "__main__":
    main()
