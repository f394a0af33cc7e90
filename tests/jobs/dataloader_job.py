"""A real (CPU-only) PyTorch training job whose DataLoader workers a test can watch.

Run as a script: ``python dataloader_job.py --start-method spawn --work burn``. The trainer
loops over ``DataLoader(num_workers=N)`` and "steps" by sleeping ``--step-s`` (standing in for
the accelerator), until ``--max-s`` runs out (a safety net: tests kill it long before).

``--work burn``: each ``__getitem__`` spins the CPU for ``--item-ms``, so the workers cannot keep
up and each sits near 100 % of a core. ``--work none``: items are free, the workers wait on the
trainer and their CPU is low. Prints ``ready`` once the first batch has arrived (workers exist).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Items(Dataset[int]):
    """Integers; optionally expensive to fetch, like decoding/augmenting an image."""

    def __init__(self, size: int, item_s: float) -> None:
        self.size = size
        self.item_s = item_s

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> int:
        if self.item_s > 0:
            end = time.perf_counter() + self.item_s
            spins = 0
            while time.perf_counter() < end:
                spins += 1
        return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start-method", default="fork", choices=["fork", "spawn", "forkserver"])
    parser.add_argument("--work", default="burn", choices=["burn", "none"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--item-ms", type=float, default=2.0)
    parser.add_argument("--step-s", type=float, default=0.005)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-s", type=float, default=60.0)
    args = parser.parse_args(argv)

    torch.set_num_threads(1)  # the trainer itself should not compete for the 2 cores
    item_s = args.item_ms / 1000.0 if args.work == "burn" else 0.0
    loader = DataLoader(
        Items(100_000, item_s),
        batch_size=args.batch,
        num_workers=args.workers,
        multiprocessing_context=args.start_method,
        persistent_workers=True,
    )
    deadline = time.monotonic() + args.max_s
    said_ready = False
    while time.monotonic() < deadline:
        for _batch in loader:
            if not said_ready:
                print("ready", flush=True)
                said_ready = True
            time.sleep(args.step_s)
            if time.monotonic() >= deadline:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
