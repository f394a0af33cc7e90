"""Two-rank DDP (gloo, CPU) under torchrun for the probe tests: one rank slow on data.

Rank ``--slow-rank`` sleeps ``--sleep-ms`` per batch in its dataset; every rank then runs a
DDP step (its backward all-reduces, so the fast rank waits there for the slow one). The ranks
stop together once the file ``--stop`` exists (agreed by an all-reduce each step).
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset


class Data(Dataset):
    def __init__(self, sleep_s: float) -> None:
        self.sleep_s = sleep_s

    def __len__(self) -> int:
        return 100_000

    def __getitems__(self, indices: list[int]) -> list[torch.Tensor]:
        if self.sleep_s:
            time.sleep(self.sleep_s)
        return [torch.ones(8) for _ in indices]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slow-rank", type=int, default=1)
    ap.add_argument("--sleep-ms", type=float, default=60.0)
    ap.add_argument("--stop", required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sleep = args.sleep_ms / 1000 if rank == args.slow_rank else 0.0
    loader = DataLoader(Data(sleep), batch_size=4)
    deadline = time.monotonic() + 60
    for batch in loader:
        opt.zero_grad()
        model(batch).sum().backward()
        opt.step()
        time.sleep(0.005)
        flag = torch.tensor([float(os.path.exists(args.stop) or time.monotonic() > deadline)])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item():
            break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
