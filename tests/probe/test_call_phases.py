"""What an innermost frame calls when the callee has no Python frame (`probe.calls`): which
name a call instruction loads, and a live thread blocked in such a call, sampled.

The live cases use stand-ins of JAX's C++ types (same type name and package; their call
blocks in C on a lock, as pjit's fast path runs the compiled step in C), so they need no JAX;
`test_probe_compiled_phases.py` runs the real thing.
"""

from __future__ import annotations

import dis
import functools
import sys
import threading
import time
import types
from collections.abc import Callable
from types import CodeType
from typing import Any

import pytest

from gpusat_tui.probe.calls import call_site
from gpusat_tui.probe.sampler import StackSampler

# --- which name a call loads (the bytecode, no frame) ----------------------------------------


def _last_call(source: str) -> tuple[tuple[str, ...], tuple[str, ...] | None] | None:
    """What the last call of ``def f(self, a, w, x, args)`` with ``source`` as its body loads
    (3.11's PRECALL before it, where the frame of a builtin's call stands, must agree)."""
    scope: dict[str, Any] = {}
    exec(compile(f"def f(self, a, w, x, args):\n    {source}\n", "<test>", "exec"), scope)
    code: CodeType = scope["f"].__code__
    ins = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    at = max(k for k, i in enumerate(ins)
             if i.opname in ("CALL", "CALL_KW", "CALL_FUNCTION_EX"))
    offsets = [ins[at].offset] + ([ins[at - 1].offset] if ins[at - 1].opname == "PRECALL"
                                  else [])
    found = {(s.func, s.arg) if (s := call_site(code, o)) is not None else None
             for o in offsets}
    assert len(found) == 1, found
    return found.pop()


@pytest.mark.parametrize(("source", "func", "arg"), [
    ("return step(w, x)", ("global", "step"), ("local", "w")),
    ("return self.model.step(x, w=1)", ("local", "self", "model", "step"), ("local", "x")),
    ("return np.asarray(a)", ("global", "np", "asarray"), ("local", "a")),
    ("return a.block_until_ready()", ("local", "a", "block_until_ready"), None),
    ("return step(w + 1, g(x))", ("global", "step"), None),
    ("return step(*args)", ("global", "step"), None),
    ("return step(self.state, x)", ("global", "step"), ("local", "self", "state")),
])
def test_a_call_loads_the_name_chain_its_code_names(
    source: str, func: tuple[str, ...], arg: tuple[str, ...] | None
) -> None:
    assert _last_call(source) == (func, arg)


def test_a_call_on_a_call_s_result_or_an_offset_that_is_no_call_names_nothing() -> None:
    assert _last_call("return make()(x)") is None
    assert _last_call("return make(x).item()") is None
    # ... but for JAX's block_until_ready, whose name says what it is
    assert _last_call("return step(w, x).block_until_ready()") == (
        ("value", "", "block_until_ready"), None)

    def f(x: int) -> int:
        return x + 1

    assert all(call_site(f.__code__, i.offset) is None for i in dis.get_instructions(f))


# --- a live thread blocked in a C call, sampled -----------------------------------------------


class PjitFunction(functools.partial):  # type: ignore[type-arg]
    """Stands in for ``jaxlib._jax.PjitFunction``: its call runs in C."""


PjitFunction.__module__ = "jaxlib._jax"


class ArrayImpl:
    """Stands in for ``jaxlib._jax.ArrayImpl``; its ``block_until_ready`` blocks in C."""

    def __init__(self, wait: Callable[[], object]) -> None:
        self.block_until_ready = wait


ArrayImpl.__module__ = "jaxlib._jax"

STEP: Any = None


def _global_step() -> None:
    STEP()


def _local_step(step: Callable[[], object]) -> None:
    step()


class _Trainer:
    def __init__(self, step: Callable[[], object]) -> None:
        self.train_step = step

    def run(self) -> None:
        self.train_step()


def _waits_on(array: ArrayImpl) -> None:
    array.block_until_ready()


def _plain(lock: threading.Lock) -> None:
    lock.acquire()


def _sampled(target: Callable[..., None], *args: object, want: str) -> StackSampler:
    """A thread running ``target(*args)`` (it blocks until released), sampled until its phase
    is ``want`` or, for "other", its innermost user frame is ``target`` (at most 10 s: a
    thread not yet in its call reads other)."""
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    sampler = StackSampler()
    sampler.thread = thread.ident
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        assert sampler.sample(time.monotonic(), False, None)
        line = sampler.user_line()
        if sampler.phase == want and (want != "other" or (line and line[2] == "_plain")):
            break
        time.sleep(0.01)
    return sampler


@pytest.fixture
def held() -> Any:
    lock = threading.Lock()
    lock.acquire()
    yield lock
    lock.release()


@pytest.mark.parametrize("how", ["global", "local", "attribute"])
def test_a_thread_in_a_jitted_function_s_c_call_is_in_the_compiled_step(
    held: threading.Lock, how: str
) -> None:
    global STEP
    STEP = step = PjitFunction(held.acquire)
    if how == "global":
        sampler = _sampled(_global_step, want="compiled")
    elif how == "local":
        sampler = _sampled(_local_step, step, want="compiled")
    else:
        sampler = _sampled(_Trainer(step).run, want="compiled")
    name = {"global": "STEP", "local": "step", "attribute": "train_step"}[how]
    assert (sampler.phase, sampler.where()) == ("compiled", f"jax.jit({name})")
    line = sampler.user_line()
    assert line is not None and line[2] in ("_global_step", "_local_step", "_Trainer.run")
    assert sampler.phases["compiled"] >= 1


def test_a_thread_waiting_on_an_array_is_in_a_device_sync(held: threading.Lock) -> None:
    sampler = _sampled(_waits_on, ArrayImpl(held.acquire), want="sync")
    assert (sampler.phase, sampler.where()) == ("sync", "jax.Array.block_until_ready")


def _waits_on_a_value(make: Callable[[], ArrayImpl]) -> None:
    make().block_until_ready()


def test_a_thread_waiting_on_a_call_s_result_is_in_a_device_sync_where_jax_is_loaded(
    held: threading.Lock, monkeypatch: pytest.MonkeyPatch
) -> None:
    array = ArrayImpl(held.acquire)
    monkeypatch.setitem(sys.modules, "jax", sys.modules.get("jax", types.ModuleType("jax")))
    sampler = _sampled(_waits_on_a_value, lambda: array, want="sync")
    assert (sampler.phase, sampler.where()) == ("sync", "jax.Array.block_until_ready")


def test_any_other_c_call_stays_the_caller_s_own(held: threading.Lock) -> None:
    sampler = _sampled(_plain, held, want="other")
    line = sampler.user_line()
    assert line is not None and line[2] == "_plain", line
    for _ in range(5):  # blocked in lock.acquire for good: its line's call, sampled again
        assert sampler.sample(time.monotonic(), False, None)
    assert sampler.phase == "other" and sampler.where() is None, sampler.phase
    assert sampler.phases["compiled"] == sampler.phases["sync"] == 0, sampler.phases
