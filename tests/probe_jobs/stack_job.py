"""Unmodified third-party PyTorch trainers driving a tiny model, for the probe tests (run
under ``gpusat-tui run``; nothing is downloaded: every model is built from a config).

``--stack``:

- ``hf``: ``transformers.Trainer`` on a 2-layer GPT-2 built from a config, with gradient
  accumulation (``--accum``): the Trainer pulls every micro-batch of a step in a row, and
  Accelerate's ``DataLoaderShard`` under it reads one batch ahead;
- ``lightning``: ``lightning.Trainer.fit`` (its data fetcher also reads one batch ahead);
- ``accelerate``: the job's own loop over ``Accelerator.prepare``'d objects (meant for
  ``accelerate launch`` with 2 processes); ``--dispatch`` turns on the dispatcher mode
  (``DataLoaderConfiguration(dispatch_batches=True)``: rank 0 reads every batch and
  broadcasts it);
- ``stateful``: a plain loop over torchdata's ``StatefulDataLoader``;
- ``webdataset``: a plain loop over WebDataset's ``WebLoader`` reading ``--shard`` (a tar).

Known truth by construction: one DataLoader worker prepares a batch in S ms (a sleep per
sample), each micro-batch costs C ms of the main thread (the real forward and backward, then
a busy-wait up to C ms per micro-batch from the first forward of the step to the end of the
optimizer step): a loop fed by one worker waits (S - C) / S of its time where S > C. S and C
come from ``--control`` (a JSON file ``{"sleep_ms": S, "compute_ms": C}``, read on every
sample and micro-batch), so one job walks through several shares without a restart.

``--marks`` gets, at exit, what the job saw itself: the compute spans of its steps
(``busy``), and where the loop is the job's own, the span of every ``next()`` (``waits``).
Prints ``READY <pid>`` after ``--warm`` optimizer steps, trains until stdin closes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import torch
from stop_signal import stop_when_stdin_closes
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.data import DataLoader, Dataset

BATCH = 4


class Control:
    """S and C, read from the control file each time (a test changes them mid-run)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def read(self) -> tuple[float, float]:
        try:
            with open(self.path) as f:
                doc = json.load(f)
            return float(doc["sleep_ms"]) / 1000, float(doc["compute_ms"]) / 1000
        except (OSError, ValueError, KeyError):
            return 0.0, 0.01  # a half-written file: try again on the next sample

    def sleep_per_sample(self) -> float:
        return self.read()[0] / BATCH

    def compute_s(self) -> float:
        return self.read()[1]


class Sleepy(Dataset[Any]):
    """Samples that take ``S / BATCH`` each to prepare (in the worker)."""

    def __init__(self, control: Control, as_tokens: bool = False) -> None:
        self.control = control
        self.as_tokens = as_tokens

    def __len__(self) -> int:
        return 1_000_000

    def __getitem__(self, i: int) -> Any:
        pause = self.control.sleep_per_sample()
        if pause:
            time.sleep(pause)
        if self.as_tokens:
            ids = torch.arange(8, dtype=torch.long) % 64
            return {"input_ids": ids, "labels": ids.clone()}
        return torch.ones(8)


class Pacer:
    """Makes every micro-batch cost C ms of the main thread, and records the steps' spans.

    ``begin`` at every micro-batch's forward, ``end`` after the optimizer step (the job's own
    hook through torch's global step hook API; the probe's runs before it).
    """

    def __init__(self, control: Control, warm: int) -> None:
        self.control = control
        self.warm = warm
        self.start: float | None = None
        self.wall = 0.0
        self.micro = 0
        self.steps = 0
        self.busy: list[tuple[float, float]] = []

    def begin(self, *_: Any) -> None:
        if self.start is None:
            self.start = time.perf_counter()
            self.wall = time.time()
        self.micro += 1

    def end(self, *_: Any) -> None:
        if self.start is None:
            return
        deadline = self.start + self.micro * self.control.compute_s()
        while time.perf_counter() < deadline:
            pass
        self.busy.append((self.wall, time.time()))
        self.start, self.micro = None, 0
        self.steps += 1
        if self.steps == self.warm:
            # One write: two ranks share the pipe, and an unbuffered print writes the line
            # and its newline apart (the lines then interleave).
            sys.stdout.flush()
            os.write(1, f"READY {os.getpid()}\n".encode())


def timed(batches: Iterator[Any], waits: list[tuple[float, float]]) -> Iterator[Any]:
    """The job's own account of its time in next() (a loop the job writes itself)."""
    while True:
        entered = time.time()
        try:
            batch = next(batches)
        except StopIteration:
            return
        waits.append((entered, time.time()))
        yield batch


# --- the stacks --------------------------------------------------------------------------------


def run_hf(args: argparse.Namespace, control: Control, pacer: Pacer,
           stop: threading.Event) -> None:
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    config = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    model.register_forward_pre_hook(pacer.begin)

    class Stop(TrainerCallback):  # type: ignore[misc]
        def on_step_end(self, _args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if stop.is_set():
                control.should_training_stop = True
            return control

    with tempfile.TemporaryDirectory() as out:
        training = TrainingArguments(
            output_dir=out, max_steps=1_000_000, per_device_train_batch_size=BATCH,
            gradient_accumulation_steps=args.accum, dataloader_num_workers=1,
            logging_strategy="no", save_strategy="no", eval_strategy="no", report_to="none",
            use_cpu=True, disable_tqdm=True, learning_rate=1e-4,
        )
        trainer = Trainer(model=model, args=training,
                          train_dataset=Sleepy(control, as_tokens=True), callbacks=[Stop()])
        trainer.train()


def run_lightning(args: argparse.Namespace, control: Control, pacer: Pacer,
                  stop: threading.Event) -> None:
    import lightning as L

    class Tiny(L.LightningModule):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(8, 1)

        def training_step(self, batch: torch.Tensor, batch_idx: int) -> torch.Tensor:
            pacer.begin()
            return self.layer(batch).sum()

        def configure_optimizers(self) -> torch.optim.Optimizer:
            return torch.optim.SGD(self.parameters(), lr=1e-4)

        def train_dataloader(self) -> DataLoader[Any]:
            return DataLoader(Sleepy(control), batch_size=BATCH, num_workers=1)

    class Stop(L.Callback):  # type: ignore[misc]
        def on_train_batch_end(self, trainer: Any, *rest: Any) -> None:
            if stop.is_set():
                trainer.should_stop = True

    trainer = L.Trainer(
        accelerator="cpu", devices=1, max_steps=1_000_000, accumulate_grad_batches=args.accum,
        logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0, callbacks=[Stop()],
    )
    trainer.fit(Tiny())


def run_accelerate(args: argparse.Namespace, control: Control, pacer: Pacer,
                   stop: threading.Event, waits: list[tuple[float, float]]) -> None:
    import torch.distributed as dist
    from accelerate import Accelerator
    from accelerate.utils import DataLoaderConfiguration

    accelerator = Accelerator(
        cpu=True, dataloader_config=DataLoaderConfiguration(dispatch_batches=args.dispatch))
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    loader = DataLoader(Sleepy(control), batch_size=BATCH, num_workers=1)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    deadline = time.monotonic() + args.max_seconds
    flag = torch.zeros(1)
    for batch in timed(iter(loader), waits):
        pacer.begin()
        loss = model(batch).sum()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        # Every rank stops after the same step, or the other one hangs in its next all-reduce.
        flag.fill_(1.0 if stop.is_set() or time.monotonic() > deadline else 0.0)
        if dist.is_initialized():
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item():
            break
    accelerator.end_training()


def plain_loop(loader: Any, pacer: Pacer, stop: threading.Event, deadline: float,
               waits: list[tuple[float, float]]) -> None:
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)
    while not stop.is_set() and time.monotonic() < deadline:
        for batch in timed(iter(loader), waits):
            pacer.begin()
            inputs = batch[0] if isinstance(batch, (list, tuple)) else batch
            model(inputs).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
            if stop.is_set() or time.monotonic() > deadline:
                return


def run_stateful(args: argparse.Namespace, control: Control, pacer: Pacer,
                 stop: threading.Event, waits: list[tuple[float, float]]) -> None:
    from torchdata.stateful_dataloader import StatefulDataLoader

    loader = StatefulDataLoader(Sleepy(control), batch_size=BATCH, num_workers=1)
    plain_loop(loader, pacer, stop, time.monotonic() + args.max_seconds, waits)


def run_webdataset(args: argparse.Namespace, control: Control, pacer: Pacer,
                   stop: threading.Event, waits: list[tuple[float, float]]) -> None:
    import webdataset as wds

    def slow(text: str) -> torch.Tensor:
        pause = control.sleep_per_sample()
        if pause:
            time.sleep(pause)
        return torch.tensor([float(x) for x in text.split()])

    # An endless stream of the one shard's samples, batched in the worker: (tensor,) each.
    dataset = (wds.WebDataset(args.shard, resampled=True, shardshuffle=False)
               .decode().to_tuple("txt").map_tuple(slow).batched(BATCH))
    loader = wds.WebLoader(dataset, batch_size=None, num_workers=1)
    plain_loop(loader, pacer, stop, time.monotonic() + args.max_seconds, waits)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stack", required=True,
                    choices=("hf", "lightning", "accelerate", "stateful", "webdataset"))
    ap.add_argument("--control", required=True)
    ap.add_argument("--accum", type=int, default=1)
    ap.add_argument("--dispatch", action="store_true")
    ap.add_argument("--shard", default=None)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--max-seconds", type=float, default=120.0)
    ap.add_argument("--marks", default=None)
    args = ap.parse_args()

    torch.set_num_threads(1)
    control = Control(args.control)
    pacer = Pacer(control, args.warm)
    register_optimizer_step_post_hook(pacer.end)
    stop = stop_when_stdin_closes()
    timer = threading.Timer(args.max_seconds, stop.set)
    timer.daemon = True
    timer.start()
    waits: list[tuple[float, float]] = []
    if args.stack == "hf":
        run_hf(args, control, pacer, stop)
    elif args.stack == "lightning":
        run_lightning(args, control, pacer, stop)
    elif args.stack == "accelerate":
        run_accelerate(args, control, pacer, stop, waits)
    elif args.stack == "stateful":
        run_stateful(args, control, pacer, stop, waits)
    else:
        run_webdataset(args, control, pacer, stop, waits)
    if args.marks:
        rank = os.environ.get("RANK", "0")
        with open(f"{args.marks}.{rank}", "w") as f:
            json.dump({"busy": pacer.busy, "waits": waits}, f)
    print(f"DONE {pacer.steps}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
