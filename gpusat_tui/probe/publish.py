"""Publishing: the daemon thread that writes this process's figures to its probe file.

One thread per trainer, started on the first batch or step; it wakes every
``GPUSAT_PROBE_INTERVAL`` seconds, reads the counters the hot path adds to (under the GIL, no
lock), reads the allocator at most once a second, and replaces the file whole. Standard library
only; never initialises a device.
"""

from __future__ import annotations

import atexit
import json
import os
import random
import sys
import threading
import time
from types import ModuleType
from typing import Any

from .layout import (
    ALLOC_KEYS,
    LAYOUT_VERSION,
    VISIBLE_DEVICE_VARS,
    default_dirs,
    file_name,
    prepare_dir,
    tmp_name,
)
from .sampler import sample_hz
from .state import (
    ALLOC_EVERY_S,
    BACKENDS,
    DEFAULT_INTERVAL_S,
    ENV_INTERVAL,
    STATE,
    clock,
    disable,
    fail,
    remove_file,
)

#: Longest the exit waits for a publication in flight (one takes well under a millisecond; a
#: hung disk must not hold the trainer's exit).
EXIT_JOIN_S = 1.0


def torch_module() -> ModuleType | None:
    return sys.modules.get("torch")


def initialised_backends() -> list[tuple[str, Any]]:
    """Device modules the trainer already initialised; never initialises one itself."""
    torch = torch_module()
    if torch is None:
        return []
    found = []
    for name in BACKENDS:
        # torch.__dict__, not getattr: torch's module __getattr__ may import on first touch.
        mod = torch.__dict__.get(name)
        is_init = getattr(mod, "is_initialized", None)
        if mod is None or is_init is None:
            continue
        if is_init():
            found.append((name, mod))
    return found


# --- publishing ---------------------------------------------------------------------------------


def start_publisher() -> None:
    """First batch or step: decide whether this process publishes, then start the thread."""
    st = STATE
    if st.started:
        return
    st.started = True
    if _is_dataloader_worker():
        st.on = False  # workers never publish, whatever made them iterate
        return
    st.t0 = clock()
    folder = _probe_dir()
    if folder is None:
        return
    st.dir = folder
    st.path = os.path.join(folder, file_name(os.getpid()))
    st.prev = (st.t0, 0, 0, 0.0)
    # Rates count from the end of the batch (step) that started the probe: the batches after
    # it lie whole inside the span, that one does not (with 3 s steps, counting it from here
    # read twice the true rate until the window forgot it).
    if st.batches:
        st.prev_batch = (st.last_batch, st.batches)
    if st.steps:
        st.prev_step = (st.last_step, st.steps)
    atexit.register(at_exit)
    thread = threading.Thread(target=_publisher, name="gpusat-probe", daemon=True)
    st.thread = thread
    thread.start()


def _is_dataloader_worker() -> bool:
    data = sys.modules.get("torch.utils.data")
    get_info = getattr(data, "get_worker_info", None)
    return get_info is not None and get_info() is not None


def _probe_dir() -> str | None:
    """The folder to publish in, made 0700 if missing; None (after one line) if unusable."""
    try:
        return prepare_dir(default_dirs()[0])
    except OSError as exc:
        disable(f"cannot publish ({exc})")
        return None


def _publisher() -> None:
    """Publish every interval; between publications, sample the training thread's stack
    (`sampler`) at jittered intervals around its period."""
    st = STATE
    interval = _interval()
    hz = sample_hz()
    period = 1.0 / hz if hz else None
    main = threading.main_thread().ident
    jitter = random.Random(os.getpid()).random
    try:
        publish_now()
        due = clock() + interval
        while True:
            now = clock()
            wait = due - now
            if period is not None:
                wait = min(wait, period * (0.5 + jitter()))
            if st.stop.wait(max(0.0, wait)) or not st.on:
                break
            now = clock()
            if period is not None:
                st.stacks.sample(now, st.entered != 0.0, main)
            if now >= due:
                publish_now()
                due = max(due + interval, clock())
    except Exception as exc:
        fail("publishing", exc)


def _interval() -> float:
    try:
        value = float(os.environ.get(ENV_INTERVAL, DEFAULT_INTERVAL_S))
    except ValueError:
        value = DEFAULT_INTERVAL_S
    return min(60.0, max(0.05, value))


def snapshot() -> dict[str, Any]:
    """This process's figures now, as a layout-1 document (what `publish_now` writes)."""
    st = STATE
    now = clock()
    # Read `wait` before `entered`: see `timing.wrap_next`.
    wait = st.wait
    entered = st.entered
    if entered:
        wait += max(0.0, now - entered)
    batches, steps = st.batches, st.steps
    last_batch, last_step = st.last_batch, st.last_step
    prev = st.prev or (st.t0, 0, 0, 0.0)
    span = now - prev[0]
    d_wait = wait - prev[3]
    st.prev = (now, batches, steps, wait)
    wait_pct = min(100.0, max(0.0, 100.0 * d_wait / span)) if span > 0 else None
    _update_rates(batches, steps, last_batch, last_step)
    note = st.note or (st.soft_note if batches == 0 else None)
    if note is not None:
        wait_pct = None
    rate = st.rate
    if now - st.alloc_t >= ALLOC_EVERY_S:
        st.alloc_t = now
        st.alloc = read_alloc()
    torch = torch_module()
    version = getattr(torch, "version", None)
    return {
        "layout": LAYOUT_VERSION,
        "pid": os.getpid(),
        "start_ticks": _start_ticks(),
        "uid": os.getuid() if hasattr(os, "getuid") else None,
        "t": time.time(),
        "elapsed_s": now - st.t0,
        "interval_s": span,
        "batches": batches,
        "steps": steps,
        "data_wait_s": wait,
        "data_wait_pct": wait_pct,
        "step_ms": st.step_ms,
        "step_source": st.step_source,
        "batches_per_s": rate,
        "samples_per_s": rate * st.batch_size if rate is not None and st.batch_size else None,
        "batch_size": st.batch_size,
        "rank": _env_int("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"),
        "local_rank": _env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"),
        "world_size": _env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"),
        "device_type": st.device_type,
        "device_index": st.device_index,
        "hip": bool(getattr(version, "hip", None)),
        "env": {k: os.environ[k][:256] for k in VISIBLE_DEVICE_VARS if k in os.environ},
        "alloc": st.alloc,
        "cmd": os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else "python")[:64],
        "last_batch_s": max(0.0, last_batch - st.t0) if batches else None,
        "last_step_s": max(0.0, last_step - st.t0) if steps else None,
        "num_workers": st.num_workers,
        "framework": st.framework,
        "data_wait_note": note,
        **_stack_figures(),
    }


def _stack_figures() -> dict[str, Any]:
    """The stack sampler's figures (`sampler`; `layout` documents them)."""
    stacks = STATE.stacks
    sampled = bool(stacks.frames)  # a current stack (none yet, or its thread ended)
    return {
        "stack_hz": sample_hz(),
        "stack_samples": stacks.samples,
        "phase_samples": {k: v for k, v in stacks.phases.items() if v},
        "user_lines": stacks.top_lines(),
        "stack_phase": stacks.phase if sampled else None,
        "stack_where": stacks.where() if sampled else None,
        "stack_line": stacks.user_line() if sampled else None,
        "stack_still_s": max(0.0, stacks.t - stacks.since) if sampled else None,
        "stack_sig": stacks.signature() if sampled else None,
        "stack": stacks.stack() if sampled else [],
    }


def _update_rates(batches: int, steps: int, last_batch: float, last_step: float) -> None:
    """Step time and batch rate from the cumulative counters and the time of the newest step
    (batch): over the span since the previous publication that had one, so a 7 s step reads
    7 s whatever the publishing interval, and an interval without one keeps the last figure.
    """
    st = STATE
    prev_batch = st.prev_batch or (st.t0, 0)
    if batches > prev_batch[1] and last_batch > prev_batch[0]:
        st.rate = (batches - prev_batch[1]) / (last_batch - prev_batch[0])
        st.prev_batch = (last_batch, batches)
    prev_step = st.prev_step or (st.t0, 0)
    if steps > prev_step[1] and last_step > prev_step[0]:
        st.step_ms = 1000.0 * (last_step - prev_step[0]) / (steps - prev_step[1])
        st.step_source = st.step_kind
        st.prev_step = (last_step, steps)
    elif steps == 0 and st.rate:
        st.step_ms, st.step_source = 1000.0 / st.rate, "batch"


def publish_now() -> None:
    """Write the snapshot whole to a temporary file and rename it over the last one."""
    st = STATE
    path, folder = st.path, st.dir
    if path is None or folder is None:
        return
    data = json.dumps(snapshot(), separators=(",", ":")).encode()
    tmp = os.path.join(folder, tmp_name(os.getpid()))
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(tmp, flags, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        if st.path is None:  # removed meanwhile (exit, disable): leave nothing behind
            os.unlink(tmp)
            return
        os.replace(tmp, path)
    except OSError as exc:
        disable(f"cannot publish in {folder} ({exc.strerror or exc})")


_START_TICKS: list[int | None] = []


def _start_ticks() -> int | None:
    if not _START_TICKS:
        try:
            with open(f"/proc/{os.getpid()}/stat", "rb") as f:
                text = f.read().decode(errors="replace")
            _START_TICKS.append(int(text[text.rindex(")") + 2:].split()[19]))
        except (OSError, ValueError, IndexError):
            _START_TICKS.append(None)
    return _START_TICKS[0]


def _env_int(*names: str) -> int | None:
    for name in names:
        value = os.environ.get(name)
        if value is not None:
            try:
                return int(value)
            except ValueError:
                continue
    return None


def read_alloc() -> dict[str, int | None] | None:
    """The allocator of the device the trainer uses; None if no backend is initialised."""
    st = STATE
    for name, mod in initialised_backends():
        if st.device_type not in (None, name):
            continue
        memory_stats = getattr(mod, "memory_stats", None)
        if memory_stats is None:
            continue
        index = st.device_index if st.device_index is not None else 0
        stats = memory_stats(index)
        if not stats:
            continue
        raw = (
            stats.get("allocated_bytes.all.current"),
            stats.get("reserved_bytes.all.current"),
            stats.get("inactive_split_bytes.all.current"),
            stats.get("num_alloc_retries"),
            stats.get("num_ooms"),
        )
        return {k: (int(v) if v is not None else None) for k, v in zip(
            ALLOC_KEYS, raw, strict=True
        )}
    return None


def at_exit() -> None:
    """Stop the publisher, let a publication in flight finish (at most `EXIT_JOIN_S`), then
    remove the file and any temporary one (`remove_file`): the folder keeps nothing of a
    process that ended.
    Without the wait, an exit that fell mid-publication left the ``.tmp`` file (or renamed a
    file back after its removal)."""
    try:
        st = STATE
        st.stop.set()
        thread = st.thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join(EXIT_JOIN_S)
        remove_file()
    except Exception:
        pass
