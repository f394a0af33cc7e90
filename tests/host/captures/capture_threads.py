"""Capture a real trainer's per-thread /proc text while its input pipeline runs in threads.

    /path/to/python tests/host/captures/capture_threads.py tf.data OUTDIR
    /path/to/python tests/host/captures/capture_threads.py mindspore OUTDIR

Runs a small input pipeline whose map is CPU work (tf.data: ``map(num_parallel_calls=2)``;
MindSpore: ``GeneratorDataset.map(num_parallel_workers=2)``, threads), iterates it from the main
thread, and copies ``/proc/self/stat`` and every ``/proc/self/task/<tid>/{stat,comm}`` into
OUTDIR/t0 and OUTDIR/t1, laid out as under ``/proc/<pid>/`` (so `ProcfsReader(root=...)` reads
them), with the wall time between the two in OUTDIR/meta.json. Run by hand; the tests read the
copies.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def snapshot(dest: Path) -> None:
    pid = os.getpid()
    base = dest / str(pid)
    (base / "task").mkdir(parents=True)
    (base / "stat").write_bytes(Path("/proc/self/stat").read_bytes())
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = Path(f"/proc/self/task/{tid}/stat").read_bytes()
            comm = Path(f"/proc/self/task/{tid}/comm").read_bytes()
        except OSError:
            continue
        (base / "task" / tid).mkdir()
        (base / "task" / tid / "stat").write_bytes(stat)
        (base / "task" / tid / "comm").write_bytes(comm)


def tfdata_batches():  # type: ignore[no-untyped-def]
    import tensorflow as tf

    ds = tf.data.Dataset.range(10**7).map(
        lambda x: tf.cast(x, tf.float32) + tf.reduce_sum(tf.sort(tf.random.uniform([20000]))),
        num_parallel_calls=2,
    ).batch(8).prefetch(2)
    return iter(ds), tf.__version__


def mindspore_batches():  # type: ignore[no-untyped-def]
    import mindspore
    import mindspore.dataset as msds

    def gen():  # type: ignore[no-untyped-def]
        for i in range(10**7):
            yield (np.full((4,), i, dtype=np.float32),)

    def work(x):  # type: ignore[no-untyped-def]
        np.sort(np.random.rand(100000))
        return x

    ds = msds.GeneratorDataset(gen, ["x"], shuffle=False)
    ds = ds.map(operations=[work], input_columns=["x"], num_parallel_workers=2).batch(8)
    return ds.create_tuple_iterator(num_epochs=1), mindspore.__version__


def main() -> int:
    which, out = sys.argv[1], Path(sys.argv[2])
    it, version = tfdata_batches() if which == "tf.data" else mindspore_batches()
    for _ in range(30):
        next(it)
    snapshot(out / "t0")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 2.0:
        next(it)
    elapsed = time.monotonic() - t0
    snapshot(out / "t1")
    meta = {"framework": which, "version": version, "pid": os.getpid(), "elapsed_s": elapsed,
            "clock_ticks": os.sysconf("SC_CLK_TCK")}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(json.dumps(meta))
    os._exit(0)  # the pipelines' threads would keep the interpreter alive


if __name__ == "__main__":
    sys.exit(main())
