"""The probe's hooks on iterator-protocol input pipelines: Grain, tf.data iterated in Python,
MindSpore's dataset iterators (standard library only; no framework is imported here, and no
device is touched: each is patched only when the job itself imports the module named in
`core._PATCHES`).

No optimizer step hook exists for these (JAX has no optimizer object; MindSpore's is a Cell):
data wait is the time inside the outermost ``next()`` of the main thread, step time the
interval between successive ones (`timing.wrap_outer_next`).

- Grain: ``DataLoaderIterator.__next__`` (``grain.DataLoader``) and the ``__next__`` of every
  ``DatasetIterator`` subclass, those defined later included (a hook on ``__init_subclass__``),
  since the dataset API hands the loop whichever transformation came last.
- tf.data: ``OwnedIterator.__next__`` (eager ``for batch in ds``) and ``_NumpyIterator``
  (``as_numpy_iterator()``, which calls the first). Inside a ``tf.function`` (Keras ``fit``)
  the iterator runs in the compiled graph and no Python hook sees a batch (`trainer_hooks`).
- MindSpore 2.x: ``mindspore.dataset.engine.iterators.Iterator.__next__``, which both
  ``create_dict_iterator`` and ``create_tuple_iterator`` (and ``Model.train`` without data
  sink) go through.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Any

from .state import say
from .timing import wrap_outer_next


def _wrap_own(cls: Any, framework: str) -> bool:
    """Time ``cls``'s own ``__next__`` (not an inherited one); True if it has one."""
    current = cls.__dict__.get("__next__") if isinstance(cls, type) else None
    if current is None:
        return False
    if not getattr(current, "_gpusat_probe", False):
        cls.__next__ = wrap_outer_next(current, framework)
    return True


def _subclasses(cls: type) -> list[type]:
    seen: list[type] = [cls]
    for klass in seen:
        sub: type
        for sub in klass.__subclasses__():
            if sub not in seen:
                seen.append(sub)
    return seen


def patch_grain_dataset(module: ModuleType) -> None:
    base = getattr(module, "DatasetIterator", None)
    if not isinstance(base, type):
        say("this grain has no DatasetIterator to time")
        return
    if base.__dict__.get("_gpusat_probe_subclass"):
        return
    for cls in _subclasses(base):
        _wrap_own(cls, "grain")
    hooked: type = base  # narrowed here; a closure would lose the narrowing

    def __init_subclass__(cls: Any, /, **kwargs: Any) -> None:
        super(hooked, cls).__init_subclass__(**kwargs)  # type: ignore[arg-type]  # mypy cannot see `hooked` is a class here
        with contextlib.suppress(Exception):  # a class we cannot patch stays untimed
            _wrap_own(cls, "grain")

    # A hook on the class itself, so subclasses defined later are timed too.
    base.__init_subclass__ = classmethod(__init_subclass__)  # type: ignore[assignment]  # patched in
    base._gpusat_probe_subclass = True  # type: ignore[attr-defined]  # our mark: hook once


def patch_grain_loader(module: ModuleType) -> None:
    if not _wrap_own(getattr(module, "DataLoaderIterator", None), "grain"):
        say("this grain has no DataLoaderIterator to time")


def patch_tf_iterator(module: ModuleType) -> None:
    if not _wrap_own(getattr(module, "OwnedIterator", None), "tf.data"):
        say("this tensorflow has no tf.data OwnedIterator to time")


def patch_tf_numpy_iterator(module: ModuleType) -> None:
    _wrap_own(getattr(module, "_NumpyIterator", None), "tf.data")  # absent: OwnedIterator's


def patch_mindspore_iterators(module: ModuleType) -> None:
    if not _wrap_own(getattr(module, "Iterator", None), "mindspore"):
        say("this mindspore has no dataset Iterator to time")
