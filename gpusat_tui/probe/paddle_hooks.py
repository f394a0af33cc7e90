"""The probe's hooks on PaddlePaddle 3.x (standard library only; paddle is never imported here).

Batches: ``paddle.io.DataLoader``'s iterators (``_DataLoaderIterSingleProcess`` and
``_DataLoaderIterMultiProcess`` in ``paddle.io.dataloader.dataloader_iter``) each define their
own ``__next__``; both are timed as torch's is (`timing.wrap_next`), so the time a loop spends
waiting for a batch is data wait. Paddle's own ``benchmark()`` reader hooks are not used: they
only record while its profiler's benchmark mode is on.

Steps: every Paddle optimizer steps through ``step`` (Adam and AdamW override it; LBFGS takes a
closure) or ``minimize``; each class's own ``step``/``minimize`` is wrapped, with a depth count
so that a subclass calling ``super().step()`` counts one step. A user's optimizer class
defined later is counted when its ``step`` calls a wrapped one; one that does all the work
itself is not. Device and allocator are not read for Paddle (reading
the current place may initialise a device): untested on real hardware either way.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from .state import say
from .timing import count_step, wrap_next

FRAMEWORK = "paddle"
LOADER_CLASSES = ("_DataLoaderIterSingleProcess", "_DataLoaderIterMultiProcess")
STEP_METHODS = ("step", "minimize")


def patch_loader(module: ModuleType) -> None:
    found = False
    for name in LOADER_CLASSES:
        cls = getattr(module, name, None)
        if cls is None:
            continue
        current = cls.__dict__.get("__next__")
        if current is None:
            continue
        found = True
        if not getattr(current, "_gpusat_probe", False):
            cls.__next__ = wrap_next(current, FRAMEWORK)
    if not found:
        say("this paddle has no DataLoader iterator to time")


class _Depth:
    """Nesting of wrapped step calls (a subclass's step calling its parent's counts once)."""

    level = 0


def _wrap_step(orig: Callable[..., Any]) -> Callable[..., Any]:
    def step(self: Any, *args: Any, **kwargs: Any) -> Any:
        _Depth.level += 1
        try:
            return orig(self, *args, **kwargs)
        finally:
            _Depth.level -= 1
            if _Depth.level == 0:
                count_step(self, FRAMEWORK)

    step._gpusat_probe = True  # type: ignore[attr-defined]  # our mark: never wrap twice
    step.__wrapped__ = orig  # type: ignore[attr-defined]  # as functools.wraps sets it
    step.__name__ = getattr(orig, "__name__", "step")
    step.__qualname__ = getattr(orig, "__qualname__", "step")
    step.__doc__ = getattr(orig, "__doc__", None)
    return step


def _subclasses(cls: type) -> list[type]:
    seen: list[type] = [cls]
    for klass in seen:
        subs: list[type] = klass.__subclasses__()
        for sub in subs:
            if sub not in seen:
                seen.append(sub)
    return seen


def patch_optimizers(module: ModuleType) -> None:
    """``paddle.optimizer`` was imported: wrap the step of Optimizer and its subclasses."""
    base = getattr(module, "Optimizer", None)
    if not isinstance(base, type):
        say("this paddle has no Optimizer class: no step figures")
        return
    for cls in _subclasses(base):
        for name in STEP_METHODS:
            current = cls.__dict__.get(name)
            if callable(current) and not getattr(current, "_gpusat_probe", False):
                setattr(cls, name, _wrap_step(current))
