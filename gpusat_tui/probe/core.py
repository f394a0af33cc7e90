"""The probe's workings: hooks on torch, the per-process state, the publisher thread.

Runs inside the user's training process, so: standard library only, nothing at import time
but an import hook, never a device initialised, never an exception into user code (every entry
point catches, disables the probe and says so in one stderr line), no lock the training loop can
wait on (the hot path only adds to plain attributes; the publisher reads them under the GIL),
at most one daemon thread, started on the first batch or optimizer step (a Python process that
never iterates a DataLoader nor steps an optimizer publishes nothing).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .layout import (
    ALLOC_KEYS,
    LAYOUT_VERSION,
    VISIBLE_DEVICE_VARS,
    default_dirs,
    file_name,
    prepare_dir,
)

DEFAULT_INTERVAL_S = 1.0
#: The allocator is read at most this often, whatever the publishing interval.
ALLOC_EVERY_S = 1.0
#: Batch size and device are looked at on the first batch and then one batch in this many.
SLOW_EVERY = 64
#: Device backends whose allocator the probe reads when the trainer initialised them.
BACKENDS = ("cuda", "npu", "mlu", "musa", "xpu")

ENV_ENABLE = "GPUSAT_PROBE"
ENV_INTERVAL = "GPUSAT_PROBE_INTERVAL"

_TARGET_LOADER = "torch.utils.data.dataloader"
_TARGET_OPTIM = "torch.optim.optimizer"

_clock = time.perf_counter


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
        "next_slow",
        "next_step_slow",
        "on",
        "path",
        "pid",
        "prev",
        "said",
        "started",
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
        self.alloc_t = -1e9


_STATE = _State()


def _say(message: str) -> None:
    """The probe's only output: one line, once per process."""
    if _STATE.said:
        return
    _STATE.said = True
    try:
        sys.stderr.write(f"gpusat-tui probe: {message}\n")
        sys.stderr.flush()
    except Exception:  # a closed stderr is no reason to fail the job
        pass


def disable(reason: str | None = None) -> None:
    """Stop measuring in this process (its file is removed); with a reason, say it once."""
    st = _STATE
    st.on = False
    st.stop.set()
    if reason:
        _say(f"disabled in PID {os.getpid()}: {reason}")
    _remove_file()


def _fail(where: str, exc: BaseException) -> None:
    try:
        disable(f"{where} failed ({type(exc).__name__}: {exc})")
    except Exception:
        _STATE.on = False


# --- the hot path ------------------------------------------------------------------------------


def _wrap_next(orig: Callable[[Any], Any]) -> Callable[[Any], Any]:
    st = _STATE
    clock = _clock

    def __next__(self: Any) -> Any:
        if not st.on:
            return orig(self)
        t0 = clock()
        st.entered = t0
        try:
            data = orig(self)
        finally:
            t1 = clock()
            # Clear `entered` before adding: a publisher reading in between undercounts this
            # wait for one publication instead of counting it twice.
            st.entered = 0.0
            st.wait += t1 - t0
        n = st.batches = st.batches + 1
        if n >= st.next_slow:
            _batch_slow(data, n)
        return data

    __next__._gpusat_probe = True  # type: ignore[attr-defined]
    __next__.__wrapped__ = orig  # type: ignore[attr-defined]
    __next__.__qualname__ = getattr(orig, "__qualname__", "__next__")
    __next__.__doc__ = getattr(orig, "__doc__", None)
    return __next__


def _on_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    st = _STATE
    if not st.on:
        return
    n = st.steps = st.steps + 1
    if n >= st.next_step_slow:
        _step_slow(optimizer, n)


# --- the slow path (one batch or step in SLOW_EVERY) --------------------------------------------


def _batch_slow(data: Any, n: int) -> None:
    st = _STATE
    try:
        st.next_slow = n + SLOW_EVERY
        size = _batch_size(data)
        if size is not None:
            st.batch_size = size
        if st.device_type is None or st.steps == 0:
            _device_from_backends()
        _start()
    except Exception as exc:
        _fail("reading a batch", exc)


def _step_slow(optimizer: Any, n: int) -> None:
    st = _STATE
    try:
        st.next_step_slow = n + SLOW_EVERY
        for group in getattr(optimizer, "param_groups", ())[:1]:
            for param in list(group.get("params", ()))[:1]:
                device = param.device
                if device.type != "cpu":
                    st.device_type = str(device.type)
                    st.device_index = device.index
        _start()
    except Exception as exc:
        _fail("reading an optimizer step", exc)


def _batch_size(data: Any, depth: int = 0) -> int | None:
    """First dimension of the first tensor in a batch (a tensor, a sequence or a mapping)."""
    if depth > 3:
        return None
    shape = getattr(data, "shape", None)
    if shape is not None and not isinstance(data, (str, bytes)):
        return int(shape[0]) if len(shape) else None
    if isinstance(data, dict):
        for value in list(data.values())[:8]:
            size = _batch_size(value, depth + 1)
            if size is not None:
                return size
    elif isinstance(data, (list, tuple)):
        for value in data[:8]:
            size = _batch_size(value, depth + 1)
            if size is not None:
                return size
    return None


def _torch() -> ModuleType | None:
    return sys.modules.get("torch")


def _initialised_backends() -> list[tuple[str, Any]]:
    """Device modules the trainer already initialised; never initialises one itself."""
    torch = _torch()
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


def _device_from_backends() -> None:
    """From the training thread (the current device is per thread in CUDA and its twins)."""
    st = _STATE
    for name, mod in _initialised_backends():
        current = getattr(mod, "current_device", None)
        if current is not None:
            st.device_type = name
            st.device_index = int(current())
            return


# --- publishing ---------------------------------------------------------------------------------


def _start() -> None:
    """First batch or step: decide whether this process publishes, then start the thread."""
    st = _STATE
    if st.started:
        return
    st.started = True
    if _is_dataloader_worker():
        st.on = False  # workers never publish, whatever made them iterate
        return
    st.t0 = _clock()
    folder = _probe_dir()
    if folder is None:
        return
    st.dir = folder
    st.path = os.path.join(folder, file_name(os.getpid()))
    st.prev = (st.t0, 0, 0, 0.0)
    atexit.register(_at_exit)
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
    st = _STATE
    interval = _interval()
    try:
        _publish()
        while not st.stop.wait(interval):
            if not st.on:
                break
            _publish()
    except Exception as exc:
        _fail("publishing", exc)


def _interval() -> float:
    try:
        value = float(os.environ.get(ENV_INTERVAL, DEFAULT_INTERVAL_S))
    except ValueError:
        value = DEFAULT_INTERVAL_S
    return min(60.0, max(0.05, value))


def snapshot() -> dict[str, Any]:
    """This process's figures now, as a layout-1 document (what `_publish` writes)."""
    st = _STATE
    now = _clock()
    # Read `wait` before `entered`: see `_wrap_next`.
    wait = st.wait
    entered = st.entered
    if entered:
        wait += max(0.0, now - entered)
    batches, steps = st.batches, st.steps
    prev = st.prev or (st.t0, 0, 0, 0.0)
    span = now - prev[0]
    d_batches, d_steps, d_wait = batches - prev[1], steps - prev[2], wait - prev[3]
    st.prev = (now, batches, steps, wait)
    rate = d_batches / span if span > 0 else None
    wait_pct = min(100.0, max(0.0, 100.0 * d_wait / span)) if span > 0 else None
    if d_steps > 0:
        step_ms, step_source = 1000.0 * span / d_steps, "optimizer"
    elif d_batches > 0 and steps == 0:
        step_ms, step_source = 1000.0 * span / d_batches, "batch"
    else:
        step_ms, step_source = None, None
    if now - st.alloc_t >= ALLOC_EVERY_S:
        st.alloc_t = now
        st.alloc = _read_alloc()
    torch = _torch()
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
        "step_ms": step_ms,
        "step_source": step_source,
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
    }


def _publish() -> None:
    """Write the snapshot whole to a temporary file and rename it over the last one."""
    st = _STATE
    if st.path is None or st.dir is None:
        return
    data = json.dumps(snapshot(), separators=(",", ":")).encode()
    tmp = os.path.join(st.dir, f".{file_name(os.getpid())}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(tmp, flags, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, st.path)
    except OSError as exc:
        disable(f"cannot publish in {st.dir} ({exc.strerror or exc})")


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


def _read_alloc() -> dict[str, int | None] | None:
    """The allocator of the device the trainer uses; None if no backend is initialised."""
    st = _STATE
    for name, mod in _initialised_backends():
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


def _remove_file() -> None:
    st = _STATE
    path = st.path
    if path is None or st.pid != os.getpid():
        return
    st.path = None
    with contextlib.suppress(OSError):
        os.unlink(path)


def _at_exit() -> None:
    try:
        _STATE.stop.set()
        _remove_file()
    except Exception:
        pass


def _after_fork_in_child() -> None:
    """A forked child starts from zero: its own counters, file and thread, if it ever trains.

    Reset in place: the hooks hold this very object. (A DataLoader worker never iterates a
    DataLoader, and `_start` refuses one anyway.)
    """
    st = _STATE
    on, said = st.on, st.said
    st.__init__()  # type: ignore[misc]
    st.on, st.said = on, said


# --- installing the hooks -----------------------------------------------------------------------


def _patch_loader(module: ModuleType) -> None:
    cls = getattr(module, "_BaseDataLoaderIter", None)
    current = getattr(cls, "__next__", None)
    if cls is None or current is None:
        _say(f"torch {getattr(_torch(), '__version__', '?')} has no DataLoader iterator to time")
        return
    if getattr(current, "_gpusat_probe", False):
        return
    cls.__next__ = _wrap_next(current)


def _patch_optim(module: ModuleType) -> None:
    register = getattr(module, "register_optimizer_step_post_hook", None)
    if register is None or getattr(module, "_gpusat_probe_hooked", False):
        return  # older torch: no global step hook, so no step figures
    register(lambda opt, args, kwargs: _on_step(opt, args, kwargs))
    module._gpusat_probe_hooked = True  # type: ignore[attr-defined]


_PATCHES: dict[str, Callable[[ModuleType], None]] = {
    _TARGET_LOADER: _patch_loader,
    _TARGET_OPTIM: _patch_optim,
}


def _run_patch(name: str, module: ModuleType) -> None:
    try:
        _PATCHES[name](module)
    except Exception as exc:
        _fail(f"hooking {name}", exc)


class _Loader(importlib.abc.Loader):
    """Runs the real loader, then our patch on the fresh module."""

    def __init__(self, name: str, real: Any) -> None:
        self._name = name
        self._real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._real.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._real.exec_module(module)
        _run_patch(self._name, module)

    def __getattr__(self, attr: str) -> Any:  # get_source, is_package... of the real loader
        return getattr(self._real, attr)


class _Finder(importlib.abc.MetaPathFinder):
    """Post-import hook: patches torch's modules the moment they are imported.

    Costs one dict lookup per first import of any module; torch itself is never imported by
    the probe.
    """

    _gpusat_probe_finder = True

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in _PATCHES:
            return None
        try:
            for finder in sys.meta_path:
                if finder is self or getattr(finder, "_gpusat_probe_finder", False):
                    continue
                find = getattr(finder, "find_spec", None)
                spec = find(name, path, target) if find is not None else None
                if spec is not None:
                    break
            else:
                return None
            real = spec.loader
            if real is None or not hasattr(real, "exec_module"):
                return spec
            spec.loader = _Loader(name, real)
            return spec
        except Exception as exc:
            _fail("the import hook", exc)
            return None


def is_enabled() -> bool:
    return any(getattr(f, "_gpusat_probe_finder", False) for f in sys.meta_path)


def install() -> bool:
    """Install the hooks (idempotent, also across two copies of the probe); False if off."""
    if os.environ.get(ENV_ENABLE, "1").strip().lower() in ("0", "off", "no", "false"):
        return False
    if is_enabled():
        return True
    sys.meta_path.insert(0, _Finder())
    os.register_at_fork(after_in_child=_after_fork_in_child)
    for name in _PATCHES:
        module = sys.modules.get(name)
        if module is not None:  # torch imported before enable(): patch it now
            _run_patch(name, module)
    return True
