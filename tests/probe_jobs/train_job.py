"""A real, tiny torch training loop for the probe tests (run under ``gpusat-tui run``).

Known truth by construction: the dataset sleeps ``--sleep-ms`` per batch (inside
``next(dataloader)``: with ``num_workers=0`` the loop waits that long) and each step busy-waits
``--compute-ms`` after a real forward/backward/optimizer step. So the share of wall time
blocked on data is about S / (S + C).

It prints ``READY <pid>`` after a few batches, then trains until its stdin is closed (or
``--max-seconds``), so a test reads the probe files while the loop is running.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
from stop_signal import stop_when_stdin_closes
from torch.utils.data import DataLoader, Dataset


class Sleepy(Dataset):
    def __init__(self, sleep_s: float, batch: int, switch: str | None, worker_steps: bool):
        self.sleep_s = sleep_s
        self.batch = batch
        self.switch = switch
        self.worker_steps = worker_steps
        self.param = torch.nn.Parameter(torch.zeros(1))
        self.opt = torch.optim.SGD([self.param], lr=0.1)

    def __len__(self) -> int:
        return 100_000

    def __getitems__(self, indices: list[int]) -> list[torch.Tensor]:
        # One sleep per batch (torch's fetcher calls this when it exists): S is S.
        if self.sleep_s and (self.switch is None or os.path.exists(self.switch)):
            time.sleep(self.sleep_s)
        return [self.item() for _ in indices]

    def __getitem__(self, i: int) -> torch.Tensor:
        if self.sleep_s and (self.switch is None or os.path.exists(self.switch)):
            time.sleep(self.sleep_s / self.batch)
        return self.item()

    def item(self) -> torch.Tensor:
        if self.worker_steps:
            # An optimizer step inside a DataLoader worker: the probe must still not publish.
            self.opt.zero_grad()
            (self.param * 2).sum().backward()
            self.opt.step()
        return torch.ones(8)


class Broken:
    """A batch whose shape cannot be read: the probe's batch-size code fails on it."""

    @property
    def shape(self) -> object:
        raise RuntimeError("this batch has no shape")


def busy_until(end: float) -> None:
    while time.perf_counter() < end:
        pass


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sleep-ms", type=float, default=0.0)
    ap.add_argument("--compute-ms", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--start", default=None, help="multiprocessing context of the workers")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--worker-steps", action="store_true")
    ap.add_argument("--bad-batch", action="store_true")
    ap.add_argument("--switch-file", default=None, help="sleep only while this file exists")
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--exit", type=int, default=0)
    ap.add_argument("--marks", default=None, help="write the job's own next() timings here")
    args = ap.parse_args()

    torch.set_num_threads(1)
    data = Sleepy(args.sleep_ms / 1000, args.batch, args.switch_file, args.worker_steps)
    kwargs: dict[str, object] = {}
    if args.workers:
        kwargs["multiprocessing_context"] = args.start
        kwargs["persistent_workers"] = True
    if args.bad_batch:
        kwargs["collate_fn"] = lambda items: Broken()
    loader = DataLoader(data, batch_size=args.batch, num_workers=args.workers, **kwargs)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    stop = stop_when_stdin_closes()
    deadline = time.monotonic() + args.max_seconds
    n = 0
    # The job's own account of its time in next(dataloader), independent of the probe: wall
    # times of every entry and exit, so the waiting done by any moment is known exactly.
    marks: list[tuple[float, float]] = []
    while not stop.is_set() and time.monotonic() < deadline:
        it = iter(loader)
        while True:
            entered = time.time()
            try:
                batch = next(it)
            except StopIteration:
                break
            marks.append((entered, time.time()))
            # Everything outside next(dataloader) takes C ms: the real step, then a busy wait.
            end = time.perf_counter() + args.compute_ms / 1000
            if not args.bad_batch:
                opt.zero_grad()
                model(batch).sum().backward()
                opt.step()
            busy_until(end)
            n += 1
            if n == args.warm:
                print(f"READY {os.getpid()}", flush=True)
            if stop.is_set() or time.monotonic() >= deadline:
                break
    if args.marks:
        with open(args.marks, "w") as f:
            json.dump(marks, f)
    print(f"DONE {n}", flush=True)
    return args.exit


if __name__ == "__main__":
    sys.exit(main())
