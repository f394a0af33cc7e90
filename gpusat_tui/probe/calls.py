"""What the innermost Python frame is calling, when the callee runs in C with no frame of its
own: a ``jax.jit`` function (pjit's C++ fast path), ``Array.block_until_ready``, or
``np.asarray`` of a JAX array (the buffer protocol). Without this such a sample lands on the
caller's line and reads as "other".

While a frame calls into C, its ``f_lasti`` is the call instruction. Which name that call
loads is worked out once per (code, offset) from the bytecode (`call_site`); each sample then
looks the name up (globals and builtins; a local or closure variable through
``frame.f_locals``) and checks the type of what it finds (`call_phase`), never calling it or
a property of it. Only names loaded by a plain chain (``step``, ``self.step``,
``state.apply_fn``) are resolved; a call on an expression's result is not, except
``...block_until_ready()``, a name only JAX's arrays have, taken as one where JAX is loaded.

The cost of a local: on Python 3.11/3.12 ``frame.f_locals`` copies the frame's locals into its
dict, which then holds them until the next sample (one sampling period; 3.13 reads through a
proxy and holds nothing), and a dict the frame's code got from ``locals()`` is refreshed, as a
debugger's read does.

Standard library only.
"""

from __future__ import annotations

import dis
import functools
import sys
from types import CodeType, FrameType

#: (kind of base name, name, attribute, ...): ``("global", "np", "asarray")``; kind "value":
#: a method of an expression's value (``step(x).block_until_ready``), only its name known.
Path = tuple[str, ...]


class CallSite:
    """The callable a call instruction loads and, for one argument, what it passes."""

    __slots__ = ("arg", "func")

    def __init__(self, func: Path, arg: Path | None) -> None:
        self.func = func
        self.arg = arg


#: Call instructions (3.11's specialised PRECALL makes a builtin's call itself, so a frame in
#: it has its f_lasti there).
_CALLS = {"CALL", "CALL_KW", "CALL_FUNCTION_EX", "PRECALL"}
#: Instructions between the arguments and the call that move nothing that matters here.
_SKIP = {"PRECALL", "KW_NAMES", "CACHE", "EXTENDED_ARG", "NOP"}
_BASES = {"LOAD_GLOBAL": "global", "LOAD_NAME": "name", "LOAD_DEREF": "local",
          "LOAD_CLOSURE": "local", "LOAD_FAST": "local", "LOAD_FAST_CHECK": "local",
          "LOAD_FAST_BORROW": "local"}
_ATTRS = {"LOAD_ATTR", "LOAD_METHOD"}


def _effect(ins: dis.Instruction) -> int:
    if ins.opcode < dis.HAVE_ARGUMENT:
        return dis.stack_effect(ins.opcode)
    return dis.stack_effect(ins.opcode, ins.arg or 0, jump=False)


def _chain(ins: list[dis.Instruction], end: int) -> tuple[Path, int] | None:
    """The name chain whose last load is ``ins[end]`` (``a.b.c``), and its first index."""
    attrs: list[str] = []
    i = end
    while i >= 0 and ins[i].opname in _ATTRS:
        attrs.append(str(ins[i].argval))
        i -= 1
    if i < 0 or ins[i].opname not in _BASES:
        return None
    return (_BASES[ins[i].opname], str(ins[i].argval), *reversed(attrs)), i


@functools.lru_cache(maxsize=32)
def _instructions(code: CodeType) -> tuple[list[dis.Instruction], dict[int, int]]:
    """``code``'s instructions and each one's index by offset (a loop's several call sites
    read its bytecode once)."""
    try:
        ins = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    except Exception:  # bytecode this version's dis cannot read: no answer
        ins = []
    return ins, {i.offset: k for k, i in enumerate(ins)}


def call_site(code: CodeType, lasti: int) -> CallSite | None:
    """What the call at byte offset ``lasti`` of ``code`` loads (None: not a call, or not a
    plain name chain)."""
    raw = code.co_code
    if not 0 <= lasti < len(raw) or dis.opname[raw[lasti]] not in _CALLS:
        return None  # not in a call: the bytecode is not read
    ins, index = _instructions(code)
    at = index.get(lasti)
    if at is None or ins[at].opname not in _CALLS:
        return None
    call = ins[at]
    arg = call.arg or 0
    n = 1 + (arg & 1) if call.opname == "CALL_FUNCTION_EX" else arg
    if call.opname == "CALL_KW":
        n += 1  # the keyword names' tuple
    end = at - 1
    while end >= 0 and ins[end].opname in _SKIP:
        end -= 1
    # Walk back over the arguments: the suffix of a run of whole expressions leaves as many
    # values as it has expressions, and a suffix that starts inside one leaves fewer.
    total, k = 0, end
    starts: list[int] = []  # where the last, last but one... argument starts
    try:
        while total < n and k >= 0:
            total += _effect(ins[k])
            while len(starts) < min(total, n):
                starts.append(k)
            k -= 1
    except ValueError:
        return None
    if total != n:
        return None
    first = k + 1  # the first argument's first instruction
    k = first - 1
    if k >= 0 and ins[k].opname == "PUSH_NULL":  # 3.13: the callable, then NULL
        k -= 1
    found = _chain(ins, k)
    if found is None:
        if k >= 0 and ins[k].opname in _ATTRS and str(ins[k].argval) in ARRAY_WAITS:
            # ``step(x).block_until_ready()``: the owner is an expression's value
            return CallSite(("value", "", str(ins[k].argval)), None)
        return None
    one: Path | None = None
    if n >= 1 and call.opname != "CALL_FUNCTION_EX":
        if n >= 2 and starts[n - 2] == first and isinstance(ins[first].argval, tuple):
            # 3.13's LOAD_FAST_LOAD_FAST: the first two arguments in one instruction
            one = ("local", str(ins[first].argval[0]))
        else:
            arg_end = (starts[n - 2] - 1) if n >= 2 else end  # the first argument's end
            chained = _chain(ins, arg_end)
            if chained is not None and chained[1] == first:
                one = chained[0]
    return CallSite(found[0], one)


_MISSING = object()


def _value(frame: FrameType, path: Path) -> object:
    """What ``path`` names in ``frame`` now, attributes read statically (no property or
    ``__getattr__`` runs); ``_MISSING`` if anything is not there."""
    kind, name = path[0], path[1]
    found: object = _MISSING
    if kind == "local":
        found = frame.f_locals.get(name, _MISSING)
    else:
        if kind == "name":
            found = frame.f_locals.get(name, _MISSING)
        if found is _MISSING:
            found = frame.f_globals.get(name, _MISSING)
        if found is _MISSING:
            found = frame.f_builtins.get(name, _MISSING)
    for attr in path[2:]:
        if found is _MISSING:
            break
        found = _static_attr(found, attr)
    return found


def _static_attr(obj: object, attr: str) -> object:
    try:
        own = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        own = None
    if isinstance(own, dict) and attr in own:
        return own[attr]
    for klass in type(obj).__mro__:
        if attr in klass.__dict__:
            return klass.__dict__[attr]
    return _MISSING


def _type_of(obj: object) -> tuple[str, str]:
    """(root package, name) of ``obj``'s type."""
    kind = type(obj)
    module = getattr(kind, "__module__", None)
    return (module.partition(".")[0] if isinstance(module, str) else ""), kind.__name__


#: C++ callables of a compiled step, by (root package of the type, type name).
COMPILED_TYPES = {("jaxlib", "PjitFunction"): "jax.jit", ("jax", "PjitFunction"): "jax.jit",
                  ("jaxlib", "PmapFunction"): "jax.pmap", ("jax", "PmapFunction"): "jax.pmap"}
#: Device arrays, by the same key, whose named C++ methods wait for the device.
ARRAY_TYPES = {("jaxlib", "ArrayImpl"): "jax.Array", ("jax", "ArrayImpl"): "jax.Array"}
ARRAY_WAITS = frozenset({"block_until_ready"})
#: numpy functions that copy a device array to the host (numpy is not imported here: they are
#: looked up in an already imported numpy).
NUMPY_COPIES = ("asarray", "array", "asanyarray", "ascontiguousarray")


def _numpy_copy(obj: object) -> str | None:
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return None
    for name in NUMPY_COPIES:
        if getattr(numpy, name, None) is obj:
            return name
    return None


def call_phase(frame: FrameType, site: CallSite) -> tuple[str, str] | None:
    """("compiled" or "sync", what is called: "jax.jit(train_step)") if ``frame`` is in a call
    to a compiled function or to one that waits for the device; None otherwise."""
    func, attr_of = site.func, None
    if func[0] == "value":  # no name to look up: the method's name, where JAX is loaded
        return ("sync", f"jax.Array.{func[-1]}") if "jax" in sys.modules else None
    if len(func) > 2:  # an attribute: its owner may be a device array
        owner = _value(frame, func[:-1])
        if owner is _MISSING:
            return None
        array = ARRAY_TYPES.get(_type_of(owner))
        if array is not None:
            return ("sync", f"{array}.{func[-1]}") if func[-1] in ARRAY_WAITS else None
        attr_of = owner
    value = _value(frame, func) if attr_of is None else _static_attr(attr_of, func[-1])
    if value is _MISSING:
        return None
    compiled = COMPILED_TYPES.get(_type_of(value))
    if compiled is not None:
        return "compiled", f"{compiled}({func[-1]})"
    if site.arg is not None:
        copy = _numpy_copy(value)
        if copy is not None:
            passed = _value(frame, site.arg)
            array = ARRAY_TYPES.get(_type_of(passed)) if passed is not _MISSING else None
            if array is not None:
                return "sync", f"numpy.{copy}({array})"
    return None
