"""The probe's per-process state and its one way of speaking (one stderr line).

Shared by the hooks (`core`) and the publisher (`publish`); standard library only.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

from .layout import tmp_name
from .sampler import StackSampler

DEFAULT_INTERVAL_S = 1.0
#: The allocator is read at most this often, whatever the publishing interval.
ALLOC_EVERY_S = 1.0
#: Batch size and device are looked at on the first batch and then one batch in this many.
SLOW_EVERY = 64
#: Device backends whose allocator the probe reads when the trainer initialised them.
BACKENDS = ("cuda", "npu", "mlu", "musa", "xpu")

ENV_ENABLE = "GPUSAT_PROBE"
ENV_INTERVAL = "GPUSAT_PROBE_INTERVAL"

clock = time.perf_counter


class _State:
    """Counters the hot path adds to. Plain attributes: one thread writes, one reads."""

    __slots__ = (
        "alloc",
        "alloc_t",
        "batch_size",
        "batches",
        "device_index",
        "device_type",
        "dir",
        "entered",
        "framework",
        "iter_depth",
        "last_batch",
        "last_step",
        "next_slow",
        "next_step_slow",
        "note",
        "num_workers",
        "on",
        "path",
        "pid",
        "prev",
        "prev_batch",
        "prev_step",
        "rate",
        "said",
        "soft_note",
        "stacks",
        "started",
        "step_kind",
        "step_ms",
        "step_source",
        "steps",
        "stop",
        "t0",
        "thread",
        "wait",
    )

    def __init__(self) -> None:
        self.on = True
        self.pid = os.getpid()
        self.batches = 0
        self.steps = 0
        self.wait = 0.0
        #: perf_counter when the loop entered __next__, 0.0 when it is not inside one.
        self.entered = 0.0
        self.next_slow = 1
        self.next_step_slow = 1
        self.batch_size: int | None = None
        #: The framework whose hook saw the batches or steps ("torch", "paddle"...).
        self.framework: str | None = None
        #: The DataLoader's worker processes as its iterator says (``_num_workers``).
        self.num_workers: int | None = None
        self.device_type: str | None = None
        self.device_index: int | None = None
        self.started = False
        self.t0 = 0.0
        self.thread: threading.Thread | None = None
        self.stop = threading.Event()
        self.path: str | None = None
        self.dir: str | None = None
        self.said = False
        #: (perf_counter, batches, steps, wait) at the previous publication.
        self.prev: tuple[float, int, int, float] | None = None
        self.alloc: dict[str, int | None] | None = None
        #: perf_counter when the last batch was returned and the last optimizer step ended.
        self.last_batch = 0.0
        self.last_step = 0.0
        #: (perf_counter, count) of the last batch / step at the last publication that had
        #: a new one: step time and rate are taken from there to the newest, so a step longer
        #: than the publishing interval reads its own length, not the interval's.
        self.prev_batch: tuple[float, int] | None = None
        self.prev_step: tuple[float, int] | None = None
        #: The figures of the last publication that had a new step / batch (kept until the
        #: next one: between two 7 s steps the step time is still 7 s).
        self.step_ms: float | None = None
        self.step_source: str | None = None
        self.rate: float | None = None
        self.alloc_t = -1e9
        #: 1 while the training thread is inside a timed iterator-protocol ``__next__``
        #: (`timing.wrap_outer_next`): the nested iterators' calls under it are not batches.
        self.iter_depth = 0
        #: Why the data wait is not measured in this process (published instead of a figure):
        #: ``note`` always wins over a measured wait (Keras ``fit``, data sink mode, a rank
        #: that receives its batches by broadcast); ``soft_note`` only while no batch was timed
        #: (the job imports DALI or Ray Data, whose iterators the probe does not see).
        self.note: str | None = None
        self.soft_note: str | None = None
        #: What ends a step: "optimizer" (an optimizer's step) or "callback" (Keras).
        self.step_kind = "optimizer"
        #: The training thread's stack, sampled by the publisher thread (`sampler`).
        self.stacks = StackSampler()


STATE = _State()


def say(message: str) -> None:
    """The probe's only output: one line, once per process."""
    if STATE.said:
        return
    STATE.said = True
    try:
        sys.stderr.write(f"gpusat-tui probe: {message}\n")
        sys.stderr.flush()
    except Exception:  # a closed stderr is no reason to fail the job
        pass


def disable(reason: str | None = None) -> None:
    """Stop measuring in this process (its file is removed); with a reason, say it once."""
    st = STATE
    st.on = False
    st.stop.set()
    if reason:
        say(f"disabled in PID {os.getpid()}: {reason}")
    remove_file()


def fail(where: str, exc: BaseException) -> None:
    try:
        disable(f"{where} failed ({type(exc).__name__}: {exc})")
    except Exception:
        STATE.on = False


def remove_file() -> None:
    """Remove this process's file and its temporary one (a publication cut short)."""
    st = STATE
    path = st.path
    if path is None or st.pid != os.getpid():
        return
    st.path = None
    tmp = os.path.join(os.path.dirname(path), tmp_name(os.getpid()))
    for name in (path, tmp):
        with contextlib.suppress(OSError):
            os.unlink(name)
