"""The probe's hooks where no Python call sees a batch: Keras ``fit``, MindSpore's data sink
mode, Accelerate's dispatcher on ranks other than 0, DALI and Ray Data pipelines (standard
library only; each is patched only when the job imports the module named in `core._PATCHES`).

Where the data wait cannot be measured the probe publishes a plain sentence in its place
(``data_wait_note``; `timing.note_wait`), never a made-up figure:

- Keras 3 ``fit``: step time from the train-batch-end callbacks (``CallbackList``, which every
  backend's ``fit`` calls; ``step_source`` "callback"). With the TensorFlow backend the
  iterator runs inside the compiled train function: "data wait not measured". With another
  backend a Python iterator the probe times (a torch DataLoader, tf.data's numpy iterator)
  is measured; if none is, the same kind of sentence.
- MindSpore data sink mode (``Model.train(..., dataset_sink_mode=True)`` on a device: CPU
  falls back to the host loop, which `iter_hooks` times): the host never sees a per-step wait.
- Accelerate ``DataLoaderDispatcher`` (``dispatch_batches=True``): rank 0 reads every batch and
  broadcasts it; the other ranks' waits are in the broadcast, so they say "not observed".
- ``nvidia.dali`` and ``ray.data`` imported by the job: their iterators bypass every hook;
  said while no batch was timed by another hook.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from .state import say
from .timing import count_step, note_wait, steps_are

KERAS_COMPILED = "data wait not measured (the iterator runs inside a compiled function)"
KERAS_OTHER = "data wait not measured (Keras fit iterates no data loader the probe times)"
SINK = "data sink mode: the wait is on the device queue, not measured"
DISPATCHED = ("data wait not observed on this rank (Accelerate dispatcher mode: rank 0 reads "
              "every batch and broadcasts it)")
UNOBSERVED = "input pipeline not observed (DALI/Ray Data iterator)"


def _wrapped(orig: Callable[..., Any], before: Callable[[Any], None] | None,
             after: Callable[[Any], None] | None) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        if before is not None:
            before(self)
        result = orig(self, *args, **kwargs)
        if after is not None:
            after(self)
        return result

    method._gpusat_probe = True  # type: ignore[attr-defined]
    method.__wrapped__ = orig  # type: ignore[attr-defined]
    method.__name__ = getattr(orig, "__name__", "method")
    method.__qualname__ = getattr(orig, "__qualname__", "method")
    method.__doc__ = getattr(orig, "__doc__", None)
    return method


def _patch(cls: Any, name: str, before: Callable[[Any], None] | None = None,
           after: Callable[[Any], None] | None = None) -> bool:
    current = cls.__dict__.get(name) if isinstance(cls, type) else None
    if not callable(current):
        return False
    if not getattr(current, "_gpusat_probe", False):
        setattr(cls, name, _wrapped(current, before, after))
    return True


# --- Keras 3 ---------------------------------------------------------------------------------


def _keras_backend() -> str | None:
    config = sys.modules.get("keras.src.backend.config")
    backend = getattr(config, "backend", None)
    try:
        return str(backend()) if callable(backend) else None
    except Exception:
        return None


def _keras_train_begin(callbacks: Any) -> None:
    steps_are("callback")
    if _keras_backend() == "tensorflow":
        note_wait(KERAS_COMPILED, framework="keras")
    else:
        note_wait(KERAS_OTHER, soft=True, framework="keras")


def _keras_batch_end(callbacks: Any) -> None:
    count_step(None, "keras")


def patch_keras(module: ModuleType) -> None:
    cls = getattr(module, "CallbackList", None)
    if not (_patch(cls, "on_train_begin", before=_keras_train_begin)
            and _patch(cls, "on_train_batch_end", after=_keras_batch_end)):
        say("this keras has no CallbackList to follow fit with")


# --- MindSpore data sink ---------------------------------------------------------------------


def _sink(model: Any) -> None:
    note_wait(SINK, framework="mindspore")


def patch_mindspore_model(module: ModuleType) -> None:
    if not _patch(getattr(module, "Model", None), "_train_dataset_sink_process", before=_sink):
        say("this mindspore has no data-sink training loop to recognise")


# --- Accelerate dispatcher -------------------------------------------------------------------


def _dispatch_iter(loader: Any) -> None:
    state = getattr(loader, "state", None)
    index = getattr(state, "process_index", 0)
    if isinstance(index, int) and index != 0:
        note_wait(DISPATCHED, framework="torch")


def patch_accelerate(module: ModuleType) -> None:
    _patch(getattr(module, "DataLoaderDispatcher", None), "__iter__", before=_dispatch_iter)


# --- DALI, Ray Data --------------------------------------------------------------------------


def note_unobserved(module: ModuleType) -> None:
    note_wait(UNOBSERVED, soft=True)
