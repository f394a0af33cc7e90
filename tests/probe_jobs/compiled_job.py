"""Real, tiny training loops whose step is one compiled call, for the probe's phase tests (run
under ``gpusat-tui run``).

``--framework``:

- ``jax``: a Grain ``DataLoader`` (no worker processes: the source's sleep is in ``next()``),
  a ``jax.jit`` step (a value-and-grad of a few dense layers, then SGD) called from the loop's
  own line, and ``float(loss)`` after it (JAX dispatches asynchronously: the float waits for
  the step);
- ``tf``: a custom loop over ``tf.data`` (eager ``next``), a ``tf.function`` step with a
  ``GradientTape`` and a Keras optimizer, then ``float(loss)``;
- ``keras``: ``model.fit`` (TensorFlow backend) on arrays: the whole step is Keras' compiled
  train function;
- ``mindspore-graph``: a ``TrainOneStepCell`` in graph mode over a ``GeneratorDataset``'s
  tuple iterator, then ``loss.asnumpy()``;
- ``mindspore-jit``: PyNative mode, a ``mindspore.jit`` step around ``value_and_grad`` and the
  optimizer, then ``loss.asnumpy()``.

Known by construction: the data source sleeps ``--sleep-ms`` per batch inside the loop's own
``next()`` (not ``keras``), the step's compute dominates the rest (``--size`` wide layers,
``--depth`` deep, on a batch of 256 rows), and the loop does nothing else. Prints
``READY <pid>`` after ``--warm`` steps (the compilation done), trains until stdin closes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from stop_signal import stop_when_stdin_closes

ROWS = 256


class Source:
    """Random access; each batch sleeps ``sleep_s`` in all (spread over its records)."""

    def __init__(self, sleep_s: float, batch: int, width: int) -> None:
        self.sleep_s, self.batch, self.width = sleep_s, batch, width

    def __len__(self) -> int:
        return 10_000_000

    def __getitem__(self, i: int) -> np.ndarray:
        if self.sleep_s:
            time.sleep(self.sleep_s / self.batch)
        return np.full(self.width, 0.01, dtype=np.float32)


def jax_loop(args: argparse.Namespace, source: Source) -> Iterator[float]:
    import grain.python as gp
    import jax
    import jax.numpy as jnp
    from absl import flags

    flags.FLAGS.mark_as_parsed()
    loader = gp.DataLoader(
        data_source=source,
        sampler=gp.IndexSampler(len(source), shard_options=gp.NoSharding(), shuffle=False,
                                num_epochs=1, seed=0),
        operations=[gp.Batch(source.batch)], worker_count=0,
        read_options=gp.ReadOptions(num_threads=1, prefetch_buffer_size=1))
    batches = iter(loader)
    ws = [jnp.eye(args.size) * 0.5 for _ in range(args.depth)]
    base = jnp.ones((ROWS, args.size))

    def loss_fn(ws: list[Any], x: Any) -> Any:
        for w in ws:
            x = jnp.tanh(x @ w)
        return jnp.mean(x ** 2)

    @jax.jit
    def train_step(ws: list[Any], batch: Any) -> tuple[list[Any], Any]:
        loss, grads = jax.value_and_grad(loss_fn)(ws, base * jnp.mean(batch))
        return [w - 0.01 * g for w, g in zip(ws, grads, strict=True)], loss

    while True:
        batch = next(batches)
        ws, loss = train_step(ws, batch)
        yield float(loss)


def tf_loop(args: argparse.Namespace, source: Source) -> Iterator[float]:
    import tensorflow as tf

    def slow(i: Any) -> np.ndarray:
        return np.stack([source[int(i)] for _ in range(source.batch)])

    ds = tf.data.Dataset.range(10_000_000).map(
        lambda i: tf.numpy_function(slow, [i], tf.float32), num_parallel_calls=1)
    batches = iter(ds)
    ws = [tf.Variable(tf.eye(args.size) * 0.5) for _ in range(args.depth)]
    base = tf.ones((ROWS, args.size))
    opt = tf.keras.optimizers.SGD(0.01)

    @tf.function
    def train_step(batch: Any) -> Any:
        with tf.GradientTape() as tape:
            x = base * tf.reduce_mean(batch)
            for w in ws:
                x = tf.tanh(x @ w)
            loss = tf.reduce_mean(x ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, ws), ws, strict=True))
        return loss

    while True:
        batch = next(batches)
        loss = train_step(batch)
        yield float(loss)


def keras_fit(args: argparse.Namespace, on_step: Callable[[], bool]) -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    layers: list[Any] = [keras.Input((args.size,))]
    layers += [keras.layers.Dense(args.size, activation="tanh") for _ in range(args.depth)]
    model = keras.Sequential([*layers, keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.full((ROWS * 64, args.size), 0.01, dtype=np.float32)
    y = np.zeros((ROWS * 64, 1), dtype=np.float32)

    class Steps(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: object = None) -> None:
            if on_step():
                self.model.stop_training = True

    model.fit(x, y, batch_size=ROWS, epochs=1_000_000, verbose=0, callbacks=[Steps()])


def mindspore_loop(args: argparse.Namespace, source: Source) -> Iterator[float]:
    import mindspore as ms
    import mindspore.dataset as msds
    from mindspore import Tensor, nn

    graph = args.framework == "mindspore-graph"
    ms.set_context(mode=ms.GRAPH_MODE if graph else ms.PYNATIVE_MODE)

    class Gen:
        def __len__(self) -> int:
            return len(source)

        def __getitem__(self, i: int) -> tuple[np.ndarray]:
            return (source[i],)

    ds = msds.GeneratorDataset(Gen(), ["x"], shuffle=False, num_parallel_workers=1,
                               python_multiprocessing=False).batch(source.batch)
    batches = ds.create_tuple_iterator(num_epochs=1, output_numpy=True)
    cells: list[Any] = []
    for _ in range(args.depth):
        cells += [nn.Dense(args.size, args.size), nn.Tanh()]
    net = nn.SequentialCell([*cells, nn.Dense(args.size, 1)])
    opt = nn.SGD(net.trainable_params(), 0.01)
    loss_fn = nn.MSELoss()
    base = np.full((ROWS, args.size), 0.01, dtype=np.float32)
    target = Tensor(np.zeros((ROWS, 1), np.float32))

    if graph:
        step = nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)
        step.set_train()

        def train_step(x: Any) -> Any:
            return step(x, target)
    else:
        def forward(x: Any) -> Any:
            return loss_fn(net(x), target)

        grad_fn = ms.value_and_grad(forward, None, opt.parameters)

        @ms.jit
        def train_step(x: Any) -> Any:
            loss, grads = grad_fn(x)
            opt(grads)
            return loss

    while True:
        (batch,) = next(batches)
        loss = train_step(Tensor(base * batch.mean()))
        yield float(loss.asnumpy())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", required=True)
    ap.add_argument("--sleep-ms", type=float, default=10.0)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=300.0)
    args = ap.parse_args()
    source = Source(args.sleep_ms / 1000, args.batch, args.size)
    stop = stop_when_stdin_closes()
    deadline = time.monotonic() + args.max_seconds
    n = 0

    def on_step() -> bool:
        """Count a step; True: stop."""
        nonlocal n
        n += 1
        if n == args.warm:
            print(f"READY {os.getpid()}", flush=True)
        return stop.is_set() or time.monotonic() > deadline

    if args.framework == "keras":
        keras_fit(args, on_step)
    else:
        loops = {"jax": jax_loop, "tf": tf_loop, "mindspore-graph": mindspore_loop,
                 "mindspore-jit": mindspore_loop}
        for _ in loops[args.framework](args, source):
            if on_step():
                break
    print(f"DONE {n}", flush=True)
    sys.stdout.flush()
    os._exit(0)  # pipelines' threads: no lingering at exit


if __name__ == "__main__":
    sys.exit(main())
