"""A training loop whose step splits into known shares, for the stack sampler's tests (run
under ``gpusat-tui run``).

Each step busy-waits (the main thread holds the CPU, as real work does) ``--data-ms`` in the
dataset's ``__getitem__`` (``num_workers=0``: inside ``next(loader)``), ``--forward-ms`` in
the model's forward, ``--backward-ms`` in a custom autograd function's backward,
``--optimizer-ms`` in an optimizer's ``step`` and ``--other-ms`` in the loop's own code: the
step's phases are those shares of its time, within the little the real tensor work adds.
Prints ``READY <pid>`` after a few steps, trains until stdin closes.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import torch
from stop_signal import stop_when_stdin_closes
from torch.utils.data import DataLoader, Dataset


def spin(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        pass


class Slow(Dataset[Any]):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> torch.Tensor:
        spin(self.seconds)
        return torch.ones(8)


class SlowBackward(torch.autograd.Function):
    seconds = 0.0

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x * 1.0

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        spin(SlowBackward.seconds)
        return grad


class Model(torch.nn.Module):
    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(8, 1)
        self.seconds = seconds

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        spin(self.seconds)
        return SlowBackward.apply(self.layer(x))


class SlowSGD(torch.optim.Optimizer):
    def __init__(self, params: Any, seconds: float) -> None:
        super().__init__(params, {"lr": 1e-4})
        self.seconds = seconds

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:
        spin(self.seconds)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])


def log_progress(seconds: float) -> None:
    spin(seconds)


def main() -> int:
    ap = argparse.ArgumentParser()
    for name in ("data", "forward", "backward", "optimizer", "other"):
        ap.add_argument(f"--{name}-ms", type=float, default=0.0)
    ap.add_argument("--warm", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    stop = stop_when_stdin_closes()
    SlowBackward.seconds = args.backward_ms / 1000
    model = Model(args.forward_ms / 1000)
    optimizer = SlowSGD(model.parameters(), args.optimizer_ms / 1000)
    loader = DataLoader(Slow(args.data_ms / 1000), batch_size=1, num_workers=0)
    steps = 0
    while not stop.is_set():
        for batch in loader:
            model(batch).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
            log_progress(args.other_ms / 1000)
            steps += 1
            if steps == args.warm:
                sys.stdout.flush()
                os.write(1, f"READY {os.getpid()}\n".encode())
            if stop.is_set():
                break
    print(f"DONE {steps}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
