#!/usr/bin/env python3
"""A small real training job for checking gpusat-tui on a machine with an accelerator.

Two modes, each a real model on synthetic data, on CUDA when torch sees a device (ROCm builds
included) and on the CPU otherwise:

* ``--mode input-bound``: a slow dataset (each sample costs ``--sample-ms`` of CPU work in the
  workers) and few workers (``--workers``, default 1): the loop waits on ``next(dataloader)``
  most of the time and the card idles between steps. Expect ``starving`` (input-bound) and a
  data wait well above 20 % from the probe.
* ``--mode compute-bound``: large matmuls per step (``--dim``), data made in memory: the card is
  busy. Expect ``saturated`` and a data wait below 5 %.

Meant to run under the probe, e.g. ``gpusat-tui run -- python tools/gpu_train_job.py --mode
input-bound --seconds 60``, beside ``gpusat-tui check --json`` and ``nvidia-smi``. It prints
one summary line at the end (its own measured data wait, steps/s, device). The CUDA path is
untested on real hardware here (no GPU on the development machines); the CPU path is tested.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowSamples(Dataset):
    """Each sample burns ``cost_s`` of CPU (as decoding and augmenting would)."""

    def __init__(self, cost_s: float, dim: int) -> None:
        self.cost_s = cost_s
        self.dim = dim

    def __len__(self) -> int:
        return 10_000_000

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        end = time.perf_counter() + self.cost_s
        x = 0
        while time.perf_counter() < end:
            x += 1
        g = torch.Generator().manual_seed(i)
        return torch.randn(self.dim, generator=g), torch.randint(0, 10, (), generator=g)


class InMemory(Dataset):
    def __init__(self, dim: int) -> None:
        self.x = torch.randn(1024, dim)
        self.y = torch.randint(0, 10, (1024,))

    def __len__(self) -> int:
        return 10_000_000

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[i % 1024], self.y[i % 1024]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("input-bound", "compute-bound"), required=True)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--min-steps", type=int, default=0,
                    help="run past --seconds until this many steps (a busy host's slow steps)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=None,
                    help="DataLoader workers (default: 1 input-bound, 2 compute-bound)")
    ap.add_argument("--sample-ms", type=float, default=2.0, help="input-bound: CPU per sample")
    ap.add_argument("--dim", type=int, default=None,
                    help="model width (default: 4096 on an accelerator, 256 on the CPU)")
    ap.add_argument("--device", default=None, help="cuda, cpu... (default: cuda if available)")
    args = ap.parse_args(argv)

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dim = args.dim or (4096 if device.type != "cpu" else 256)
    workers = args.workers if args.workers is not None else (
        1 if args.mode == "input-bound" else 2)
    if args.mode == "input-bound":
        data: Dataset = SlowSamples(args.sample_ms / 1000, dim)
        layers = 2
    else:
        data = InMemory(dim)
        layers = 8
    model = torch.nn.Sequential(
        *[m for _ in range(layers) for m in (torch.nn.Linear(dim, dim), torch.nn.GELU())],
        torch.nn.Linear(dim, 10),
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader = DataLoader(data, batch_size=args.batch, num_workers=workers,
                        pin_memory=device.type == "cuda", persistent_workers=workers > 0)
    loss_fn = torch.nn.CrossEntropyLoss()

    start = time.perf_counter()
    waited = 0.0
    steps = 0
    it = iter(loader)
    while time.perf_counter() - start < args.seconds or steps < args.min_steps:
        t0 = time.perf_counter()
        x, y = next(it)
        waited += time.perf_counter() - t0
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        steps += 1
        if steps % 50 == 0 and device.type == "cuda":
            torch.cuda.synchronize()  # keep the queue short so wall time means work done
    if device.type == "cuda":
        torch.cuda.synchronize()
    wall = time.perf_counter() - start
    print(f"gpu_train_job: mode={args.mode} device={device} dim={dim} workers={workers} "
          f"steps={steps} steps_per_s={steps / wall:.2f} data_wait_pct={100 * waited / wall:.1f}",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
