"""A real, tiny Keras 3 ``model.fit`` (TensorFlow backend) for the probe tests: a tf.data
input whose map sleeps ``--sleep-ms`` per batch. The iterator runs inside the compiled train
function, so the probe must say the data wait is not measured (never a figure) and take the
step time from the train-batch-end callbacks. Prints ``READY <pid>`` from a callback after
``--warm`` batches; trains until stdin closes."""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras
import numpy as np
import tensorflow as tf
from stop_signal import stop_when_stdin_closes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sleep-ms", type=float, default=0.0)
    ap.add_argument("--warm", type=int, default=3)
    args = ap.parse_args()
    sleep_s = args.sleep_ms / 1000

    def slow(x: object) -> np.ndarray:
        if sleep_s:
            time.sleep(sleep_s)
        return np.ones((4, 8), dtype=np.float32)

    ds = tf.data.Dataset.range(100_000).map(
        lambda x: tf.numpy_function(slow, [x], tf.float32)).map(
        lambda x: (tf.ensure_shape(x, (4, 8)), tf.zeros((4, 1))))
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    stop = stop_when_stdin_closes()

    class Ready(keras.callbacks.Callback):
        n = 0

        def on_train_batch_end(self, batch: int, logs: object = None) -> None:
            Ready.n += 1
            if Ready.n == args.warm:
                print(f"READY {os.getpid()}", flush=True)
            if stop.is_set():
                self.model.stop_training = True

    model.fit(ds, epochs=1, steps_per_epoch=100_000, verbose=0, callbacks=[Ready()])
    print("DONE", flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
