"""Jobs that stop making progress, for the stall tests (run under ``gpusat-tui run``).

``--mode heartbeat``: trains a few batches, then its main thread blocks for good (as in a hung
collective) while a second thread appends a line to ``--log`` once a second, as monitoring
threads, loggers and NCCL's watchdog do. Prints ``READY <pid>`` when it blocks; ends when its
stdin closes.

``--mode collective`` (under ``torchrun --nproc-per-node 2``, gloo): both ranks train a few
steps, then rank 0 waits in ``dist.all_reduce`` while rank 1 never calls it: it sleeps, in a
loop, until the file ``--stop`` exists, and only then joins the all-reduce (so both end).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import torch
from torch.utils.data import DataLoader


def heartbeat(log: str) -> None:
    while True:
        with open(log, "a") as f:
            f.write(f"alive {time.time():.0f}\n")
        time.sleep(1.0)


def train(steps: int) -> None:
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    loader = DataLoader([torch.ones(8)] * (4 * steps), batch_size=4)
    for batch in loader:
        model(batch).sum().backward()
        optimizer.step()
        optimizer.zero_grad()


def run_heartbeat(log: str) -> None:
    from stop_signal import stop_when_stdin_closes

    stop = stop_when_stdin_closes()
    train(5)
    threading.Thread(target=heartbeat, args=(log,), name="heartbeat", daemon=True).start()
    sys.stdout.flush()
    os.write(1, f"READY {os.getpid()}\n".encode())
    stop.wait()  # the main thread blocks here for good


def run_collective(stop: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    train(5)
    flag = torch.ones(1)
    dist.all_reduce(flag)  # both ranks reach here: the job works
    if rank == 0:
        dist.all_reduce(flag)  # rank 0 waits here for rank 1
    else:
        while not os.path.exists(stop):
            time.sleep(0.5)  # rank 1 never comes, until told to
        dist.all_reduce(flag)
    dist.destroy_process_group()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("heartbeat", "collective"), required=True)
    ap.add_argument("--log", default=os.devnull)
    ap.add_argument("--stop", default="")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.mode == "heartbeat":
        run_heartbeat(args.log)
    else:
        run_collective(args.stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
