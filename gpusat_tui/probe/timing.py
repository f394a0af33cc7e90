"""The timed hooks every framework's adapter shares: a batch out of a DataLoader iterator
(`wrap_next`) and an optimizer step (`count_step`). Standard library only, like the whole
probe; apart from `core` (which installs the import hooks) so that an adapter such as
`paddle_hooks` can use them without importing the installer back.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable
from typing import Any

from .publish import initialised_backends, start_publisher
from .state import SLOW_EVERY, STATE, fail
from .state import clock as perf_clock


def wrap_next(orig: Callable[[Any], Any], framework: str = "torch") -> Callable[[Any], Any]:
    """``orig`` (an iterator class's ``__next__``) timed: the time inside it is data wait."""
    st = STATE
    clock = perf_clock

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
        st.last_batch = t1  # before the count: a reader that sees the count sees its time
        n = st.batches = st.batches + 1
        if n >= st.next_slow:
            _batch_slow(self, data, n, framework)
        return data

    __next__._gpusat_probe = True  # type: ignore[attr-defined]  # our mark: never wrap twice
    __next__.__wrapped__ = orig  # type: ignore[attr-defined]  # as functools.wraps sets it
    __next__.__qualname__ = getattr(orig, "__qualname__", "__next__")
    __next__.__doc__ = getattr(orig, "__doc__", None)
    return __next__


def wrap_outer_next(orig: Callable[[Any], Any], framework: str) -> Callable[[Any], Any]:
    """``orig`` (an iterator-protocol ``__next__``: Grain, tf.data, MindSpore) timed like
    `wrap_next`, but only the outermost call of the main thread is a batch.

    These pipelines are chains of iterators, each calling its parent's ``next()`` (Grain's
    ``DatasetIterator`` subclasses, tf.data's ``_NumpyIterator`` over ``OwnedIterator``), and
    some call them from their own prefetch threads: a call nested in a timed one, or made by
    another thread than the main one, runs untimed (a training loop that iterates its data
    from another thread is not measured). A process that `multiprocessing` started (Grain's
    worker processes) never publishes. Data wait is the time inside the outermost call; the
    step time is then the interval between successive calls (``step_source`` "batch").
    """
    st = STATE
    clock = perf_clock
    get_ident = threading.get_ident
    main = threading.main_thread().ident

    def __next__(self: Any) -> Any:
        if st.iter_depth or not st.on or get_ident() != main:
            return orig(self)
        t0 = clock()
        st.entered = t0
        st.iter_depth = 1
        try:
            data = orig(self)
        finally:
            st.iter_depth = 0
            t1 = clock()
            st.entered = 0.0
            st.wait += t1 - t0
        st.last_batch = t1
        n = st.batches = st.batches + 1
        if n >= st.next_slow:
            _outer_slow(data, n, framework)
        return data

    __next__._gpusat_probe = True  # type: ignore[attr-defined]
    __next__.__wrapped__ = orig  # type: ignore[attr-defined]
    __next__.__qualname__ = getattr(orig, "__qualname__", "__next__")
    __next__.__doc__ = getattr(orig, "__doc__", None)
    return __next__


def _outer_slow(data: Any, n: int, framework: str) -> None:
    st = STATE
    try:
        st.next_slow = n + SLOW_EVERY
        if not st.started and multiprocessing.parent_process() is not None:
            st.started = True  # a worker process of the pipeline: never publishes
            st.on = False
            return
        if st.framework is None:
            st.framework = framework
        try:
            size = _batch_size(data)
        except Exception:  # a shape not known yet (symbolic): no batch size, no harm
            size = None
        if size is not None:
            st.batch_size = size
        start_publisher()
    except Exception as exc:
        fail("reading a batch", exc)


def note_wait(text: str, soft: bool = False, framework: str | None = None) -> None:
    """Say why this process's data wait is not measured (published instead of a figure).

    ``soft``: only while no batch was timed (an imported DALI or Ray Data, whose iterators
    the probe does not see). A hard note also starts publishing (data sink mode has neither
    batches nor steps the probe sees, and the sentence must reach the monitor).
    """
    st = STATE
    if not st.on:
        return
    try:
        if framework is not None and st.framework is None:
            st.framework = framework
        if soft:
            st.soft_note = text
            return
        st.note = text
        if multiprocessing.parent_process() is None:
            start_publisher()
    except Exception as exc:
        fail("noting an unmeasured wait", exc)


def steps_are(kind: str) -> None:
    """What ends a step in this process: "optimizer" (default) or "callback" (Keras)."""
    STATE.step_kind = kind


def on_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    count_step(optimizer, "torch")


def count_step(optimizer: Any, framework: str) -> None:
    """One optimizer step ended (any framework's hook calls this)."""
    st = STATE
    if not st.on:
        return
    st.last_step = perf_clock()  # before the count, as in `wrap_next`
    n = st.steps = st.steps + 1
    if n >= st.next_step_slow:
        _step_slow(optimizer, n, framework)


# --- the slow path (one batch or step in SLOW_EVERY) --------------------------------------------


def _batch_slow(loader_iter: Any, data: Any, n: int, framework: str) -> None:
    st = STATE
    try:
        st.next_slow = n + SLOW_EVERY
        st.framework = framework
        st.stacks.thread = threading.get_ident()  # the thread that pulls batches trains
        workers = getattr(loader_iter, "_num_workers", None)
        if isinstance(workers, int) and not isinstance(workers, bool):
            st.num_workers = workers
        size = _batch_size(data)
        if size is not None:
            st.batch_size = size
        if st.device_type is None or st.steps == 0:
            device_from_backends()
        start_publisher()
    except Exception as exc:
        fail("reading a batch", exc)


def _step_slow(optimizer: Any, n: int, framework: str) -> None:
    st = STATE
    try:
        st.next_step_slow = n + SLOW_EVERY
        if st.framework is None:
            st.framework = framework
        if st.stacks.thread is None and st.batches == 0:
            st.stacks.thread = threading.get_ident()  # no batch seen: the stepping thread
        for group in getattr(optimizer, "param_groups", ())[:1]:
            for param in list(group.get("params", ()))[:1]:
                device = param.device
                if device.type != "cpu":
                    st.device_type = str(device.type)
                    st.device_index = device.index
        start_publisher()
    except Exception as exc:
        fail("reading an optimizer step", exc)


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


def device_from_backends() -> None:
    """From the training thread (the current device is per thread in CUDA and its twins)."""
    st = STATE
    for name, mod in initialised_backends():
        current = getattr(mod, "current_device", None)
        if current is not None:
            st.device_type = name
            st.device_index = int(current())
            return
