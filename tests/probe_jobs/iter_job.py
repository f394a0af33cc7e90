"""A real, tiny training loop over Grain (with a JAX step), tf.data or MindSpore's dataset
iterators, for the probe tests (run under ``gpusat-tui run``).

As `paddle_job.py`: the data source sleeps ``--sleep-ms`` per batch, each step busy-waits to
``--compute-ms`` (after a real jitted JAX step for Grain). With ``--workers 1`` one worker
(a Grain or MindSpore worker process; tf.data's prefetch thread) prepares batches while the
step runs, so the loop waits (S - C) / S where S > C. The job records its own time in next()
to ``--marks``. Prints ``READY <pid>`` after ``--warm`` steps, trains until stdin closes.

``--burn``: the data source busy-waits its time instead of sleeping (CPU work, holding the GIL)
and the step sleeps its time (as a step on an accelerator does, the trainer's thread waiting):
a pipeline whose threads peg their cores while the "card" idles.

``--framework``: grain (``grain.DataLoader``), grain-dataset (``MapDataset`` ->
``mp_prefetch``), tf (eager ``for batch in ds``), tf-numpy (``as_numpy_iterator``),
mindspore (``create_tuple_iterator``), mindspore-dict (``create_dict_iterator``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
from stop_signal import stop_when_stdin_closes


class Source:
    """Random access, each record sleeps its share of a batch."""

    def __init__(self, sleep_s: float, batch: int, burn: bool = False) -> None:
        self.sleep_s = sleep_s
        self.batch = batch
        self.burn = burn

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> np.ndarray:
        if self.sleep_s:
            pause(self.sleep_s / self.batch, self.burn)
        return np.ones(8, dtype=np.float32)


def pause(seconds: float, burn: bool) -> None:
    """Sleep, or busy-wait (CPU work) with ``burn``."""
    if not burn:
        time.sleep(seconds)
        return
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def grain_batches(args: argparse.Namespace) -> Iterator[Any]:
    import grain.python as gp
    from absl import flags

    flags.FLAGS.mark_as_parsed()  # grain's worker processes read absl flags (no app.run here)
    source = Source(args.sleep_ms / 1000, args.batch, args.burn)
    # One reading thread (``--read-threads``): Grain's default, 16 threads reading a batch's
    # records in parallel, makes a batch take a record's time, not the batch's, so the loop is
    # not input-bound as constructed (-1: Grain's defaults, to show it).
    read_options = (gp.ReadOptions() if args.read_threads < 0 else
                    gp.ReadOptions(num_threads=args.read_threads, prefetch_buffer_size=1))
    if args.framework == "grain":
        loader = gp.DataLoader(
            data_source=source,
            sampler=gp.IndexSampler(len(source), shard_options=gp.NoSharding(), shuffle=False,
                                    num_epochs=1, seed=0),
            operations=[gp.Batch(args.batch)], worker_count=args.workers,
            worker_buffer_size=1, read_options=read_options,
        )
        return iter(loader)
    ds = gp.MapDataset.source(source).batch(args.batch).to_iter_dataset(read_options)
    if args.workers:
        ds = ds.mp_prefetch(gp.MultiprocessingOptions(num_workers=args.workers,
                                                      per_worker_buffer_size=1))
    return iter(ds)


def tf_batches(args: argparse.Namespace) -> Iterator[Any]:
    import tensorflow as tf

    sleep_s = args.sleep_ms / 1000

    def slow(x: Any) -> Any:
        if sleep_s:
            pause(sleep_s, args.burn)
        return np.ones((args.batch, 8), dtype=np.float32)

    ds = tf.data.Dataset.range(1_000_000).map(
        lambda x: tf.numpy_function(slow, [x], tf.float32), num_parallel_calls=1)
    if args.workers:
        ds = ds.prefetch(1)
    if args.framework == "tf-numpy":
        return ds.as_numpy_iterator()
    return iter(ds)


def mindspore_batches(args: argparse.Namespace) -> Iterator[Any]:
    import mindspore.dataset as msds

    # A record sleeps (or burns) its share of a batch.
    source = Source(args.sleep_ms / 1000, args.batch, args.burn)

    class Gen:
        def __len__(self) -> int:
            return 1_000_000

        def __getitem__(self, i: int) -> tuple[np.ndarray]:
            return (source[i],)

    ds = msds.GeneratorDataset(Gen(), ["x"], shuffle=False,
                               num_parallel_workers=max(1, args.workers),
                               # MindSpore forks worker processes only for more
                               # than one worker; one runs in its C++ pipeline's threads.
                               python_multiprocessing=args.workers > 1,
                               max_rowsize=1)
    ds = ds.batch(args.batch)
    if args.framework == "mindspore-dict":
        return ds.create_dict_iterator(num_epochs=1, output_numpy=True)
    return ds.create_tuple_iterator(num_epochs=1, output_numpy=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", required=True)
    ap.add_argument("--sleep-ms", type=float, default=0.0)
    ap.add_argument("--compute-ms", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--marks", default=None)
    ap.add_argument("--burn", action="store_true")
    ap.add_argument("--read-threads", type=int, default=1)
    args = ap.parse_args()
    if args.framework.startswith("grain"):
        import jax
        import jax.numpy as jnp

        step_fn = jax.jit(lambda w, x: w - 0.01 * jnp.mean(x @ w))
        weights = jnp.ones((8, 1))
        batches = grain_batches(args)
    elif args.framework.startswith("tf"):
        step_fn, weights = None, None
        batches = tf_batches(args)
    else:
        step_fn, weights = None, None
        batches = mindspore_batches(args)
    stop = stop_when_stdin_closes()
    deadline = time.monotonic() + args.max_seconds
    marks: list[tuple[float, float]] = []
    n = 0
    while not stop.is_set() and time.monotonic() < deadline:
        entered = time.time()
        try:
            batch = next(batches)
        except StopIteration:
            break
        marks.append((entered, time.time()))
        end = time.perf_counter() + args.compute_ms / 1000
        if step_fn is not None:
            weights = step_fn(weights, np.asarray(batch)).block_until_ready()
        if args.burn:
            time.sleep(max(0.0, end - time.perf_counter()))
        while time.perf_counter() < end:
            pass
        n += 1
        if n == args.warm:
            print(f"READY {os.getpid()}", flush=True)
    if args.marks:
        with open(args.marks, "w") as f:
            json.dump(marks, f)
    print(f"DONE {n}", flush=True)
    import multiprocessing
    import signal

    # MindSpore's SIGCHLD handler reads a killed worker as a crash and sends this process
    # SIGTERM (seen as exit -15 in CI, a race between the kill and os._exit): neither
    # matters once the loop is done.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for child in multiprocessing.active_children():  # the pipelines' worker processes
        child.kill()
    os._exit(0)  # pipelines' worker processes and threads: no lingering at exit


if __name__ == "__main__":
    sys.exit(main())
