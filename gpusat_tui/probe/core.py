"""The probe's hooks on torch: the hot path, the slow path, the import hook (`install`).

The state they add to is in `state`, the thread that publishes it in `publish`.

Runs inside the user's training process, so: standard library only, nothing at import time
but an import hook, never a device initialised, never an exception into user code (every entry
point catches, disables the probe and says so in one stderr line), no lock the training loop can
wait on (the hot path only adds to plain attributes; the publisher reads them under the GIL),
at most one daemon thread, started on the first batch or optimizer step (a Python process that
never iterates a DataLoader nor steps an optimizer publishes nothing).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .publish import _initialised_backends, _start, _torch, snapshot
from .state import _STATE, ENV_ENABLE, SLOW_EVERY, _clock, _fail, _say, disable

__all__ = ["ENV_ENABLE", "disable", "install", "is_enabled", "snapshot"]

_TARGET_LOADER = "torch.utils.data.dataloader"
_TARGET_OPTIM = "torch.optim.optimizer"



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

    __next__._gpusat_probe = True  # type: ignore[attr-defined]  # our mark: never wrap twice
    __next__.__wrapped__ = orig  # type: ignore[attr-defined]  # as functools.wraps sets it
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


def _device_from_backends() -> None:
    """From the training thread (the current device is per thread in CUDA and its twins)."""
    st = _STATE
    for name, mod in _initialised_backends():
        current = getattr(mod, "current_device", None)
        if current is not None:
            st.device_type = name
            st.device_index = int(current())
            return


def _after_fork_in_child() -> None:
    """A forked child starts from zero: its own counters, file and thread, if it ever trains.

    Reset in place: the hooks hold this very object. (A DataLoader worker never iterates a
    DataLoader, and `_start` refuses one anyway.)
    """
    st = _STATE
    on, said = st.on, st.said
    type(st).__init__(st)
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
    module._gpusat_probe_hooked = True  # type: ignore[attr-defined]  # our mark: hook once


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

    def __init__(self, name: str, real: importlib.abc.Loader) -> None:
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
