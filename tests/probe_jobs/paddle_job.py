"""A real, tiny PaddlePaddle training loop for the probe tests (run under ``gpusat-tui run``).

As `train_job.py` for torch: the dataset sleeps ``--sleep-ms`` per batch, each step is a real
forward/backward/``optimizer.step()`` then a busy-wait to ``--compute-ms``. With
``--workers 0`` the loop waits S / (S + C) of its time; with one worker preparing batches
while the step runs, (S - C) / S where S > C. The job records its own time in next() to
``--marks``. Prints ``READY <pid>`` after ``--warm`` steps, trains until stdin closes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
import paddle
from paddle.io import DataLoader, Dataset
from stop_signal import stop_when_stdin_closes


class Sleepy(Dataset):
    def __init__(self, sleep_s: float, batch: int) -> None:
        self.sleep_s = sleep_s
        self.batch = batch

    def __len__(self) -> int:
        return 100_000

    def __getitem__(self, i: int) -> np.ndarray:
        if self.sleep_s:
            time.sleep(self.sleep_s / self.batch)
        return np.ones(8, dtype="float32")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sleep-ms", type=float, default=0.0)
    ap.add_argument("--compute-ms", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--marks", default=None)
    args = ap.parse_args()

    paddle.set_device("cpu")
    loader = DataLoader(Sleepy(args.sleep_ms / 1000, args.batch), batch_size=args.batch,
                        num_workers=args.workers, use_shared_memory=False)
    model = paddle.nn.Linear(8, 1)
    opt = paddle.optimizer.Adam(parameters=model.parameters(), learning_rate=0.01)
    stop = stop_when_stdin_closes()
    deadline = time.monotonic() + args.max_seconds
    marks: list[tuple[float, float]] = []
    n = 0
    while not stop.is_set() and time.monotonic() < deadline:
        it = iter(loader)
        while not stop.is_set() and time.monotonic() < deadline:
            entered = time.time()
            try:
                batch = next(it)
            except StopIteration:
                break
            marks.append((entered, time.time()))
            end = time.perf_counter() + args.compute_ms / 1000
            loss = model(batch).sum()
            loss.backward()
            opt.step()
            opt.clear_grad()
            while time.perf_counter() < end:
                pass
            n += 1
            if n == args.warm:
                print(f"READY {os.getpid()}", flush=True)
    if args.marks:
        with open(args.marks, "w") as f:
            json.dump(marks, f)
    print(f"DONE {n}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
