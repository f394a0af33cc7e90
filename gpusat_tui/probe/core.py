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

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .publish import torch_module
from .state import ENV_ENABLE, STATE, fail, say
from .timing import on_step, wrap_next

__all__ = ["install", "is_enabled"]

_TARGET_LOADER = "torch.utils.data.dataloader"
_TARGET_OPTIM = "torch.optim.optimizer"



# --- the hot path ------------------------------------------------------------------------------


def _after_fork_in_child() -> None:
    """A forked child starts from zero: its own counters, file and thread, if it ever trains.

    Reset in place: the hooks hold this very object. (A DataLoader worker never iterates a
    DataLoader, and `start_publisher` refuses one anyway.)
    """
    st = STATE
    on, said = st.on, st.said
    type(st).__init__(st)
    st.on, st.said = on, said


# --- installing the hooks -----------------------------------------------------------------------


def _patch_loader(module: ModuleType) -> None:
    cls = getattr(module, "_BaseDataLoaderIter", None)
    current = getattr(cls, "__next__", None)
    if cls is None or current is None:
        version = getattr(torch_module(), "__version__", "?")
        say(f"torch {version} has no DataLoader iterator to time")
        return
    if getattr(current, "_gpusat_probe", False):
        return
    cls.__next__ = wrap_next(current)


def _patch_optim(module: ModuleType) -> None:
    register = getattr(module, "register_optimizer_step_post_hook", None)
    if register is None or getattr(module, "_gpusat_probe_hooked", False):
        return  # older torch: no global step hook, so no step figures
    register(lambda opt, args, kwargs: on_step(opt, args, kwargs))
    module._gpusat_probe_hooked = True  # type: ignore[attr-defined]  # our mark: hook once


def _patch_paddle_loader(module: ModuleType) -> None:
    from .paddle_hooks import patch_loader

    patch_loader(module)


def _patch_paddle_optim(module: ModuleType) -> None:
    from .paddle_hooks import patch_optimizers

    patch_optimizers(module)


def _lazy(module_name: str, function: str) -> Callable[[ModuleType], None]:
    """A patch function of an adapter module, imported only when its framework is."""

    def patch(module: ModuleType) -> None:
        adapter = importlib.import_module(f"{__package__}.{module_name}")
        getattr(adapter, function)(module)

    return patch


_PATCHES: dict[str, Callable[[ModuleType], None]] = {
    _TARGET_LOADER: _patch_loader,
    _TARGET_OPTIM: _patch_optim,
    # PaddlePaddle 3.x (`paddle_hooks`): imported only if the job imports paddle.
    "paddle.io.dataloader.dataloader_iter": _patch_paddle_loader,
    "paddle.optimizer": _patch_paddle_optim,
    # Iterator-protocol pipelines (`iter_hooks`): Grain, tf.data, MindSpore.
    "grain._src.python.dataset.dataset": _lazy("iter_hooks", "patch_grain_dataset"),
    "grain._src.python.data_loader": _lazy("iter_hooks", "patch_grain_loader"),
    "tensorflow.python.data.ops.iterator_ops": _lazy("iter_hooks", "patch_tf_iterator"),
    "tensorflow.python.data.ops.dataset_ops": _lazy("iter_hooks", "patch_tf_numpy_iterator"),
    "mindspore.dataset.engine.iterators": _lazy("iter_hooks", "patch_mindspore_iterators"),
    # Where no batch is seen (`trainer_hooks`): a sentence instead of a figure.
    "keras.src.callbacks.callback_list": _lazy("trainer_hooks", "patch_keras"),
    "mindspore.train.model": _lazy("trainer_hooks", "patch_mindspore_model"),
    "accelerate.data_loader": _lazy("trainer_hooks", "patch_accelerate"),
    "nvidia.dali": _lazy("trainer_hooks", "note_unobserved"),
    "ray.data": _lazy("trainer_hooks", "note_unobserved"),
}


def _run_patch(name: str, module: ModuleType) -> None:
    try:
        _PATCHES[name](module)
    except Exception as exc:
        fail(f"hooking {name}", exc)


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
            fail("the import hook", exc)
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
