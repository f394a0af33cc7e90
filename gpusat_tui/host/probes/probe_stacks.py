"""The stack sampler's fields of a probe file, checked: what `probe_files.sample_of` adds to a
`ProbeSample` (phases, the user's hottest lines, the current stack).

The file is another process's: a field of the wrong shape is left out (empty or None), never
guessed at; counts must be whole and not negative, names are cut short and sanitised
(`gpusat_tui.text.clean`), a phase not in `PHASES` is dropped, and lists are cut to what a
probe publishes at most. Never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpusat_tui.model import CodeLine
from gpusat_tui.probe.phases import PHASES
from gpusat_tui.probe.sampler import PUBLISHED_FRAMES, PUBLISHED_LINES
from gpusat_tui.text import clean

__all__ = ["stack_fields"]

#: Counts above this are not counts (a trainer sampling at 200 Hz for 30 years stays below).
_MAX_COUNT = 10**15


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_COUNT:
        return None
    return value


def _text(value: Any, limit: int) -> str | None:
    return clean(value, limit) if isinstance(value, str) else None


def _user_line(raw: Any, with_samples: bool) -> CodeLine | None:
    """``[file, line, function(, samples)]`` -> a `CodeLine`; None when malformed."""
    if not isinstance(raw, list) or len(raw) != (4 if with_samples else 3):
        return None
    file, function = _text(raw[0], 200), _text(raw[2], 80)
    line = _count(raw[1])
    samples = _count(raw[3]) if with_samples else 0
    if file is None or function is None or line is None or samples is None:
        return None
    return CodeLine(file=file, line=line, function=function, samples=samples)


def _frame(raw: Any) -> CodeLine | None:
    """``[module, function, file, line]`` -> a `CodeLine`; None when malformed."""
    if not isinstance(raw, list) or len(raw) != 4:
        return None
    module, function, file = _text(raw[0], 80), _text(raw[1], 80), _text(raw[2], 80)
    line = _count(raw[3])
    if module is None or function is None or file is None or line is None:
        return None
    return CodeLine(module=module, function=function, file=file, line=line)


def _phases(raw: Any) -> dict[str, int]:
    if not isinstance(raw, dict):
        return {}
    out: dict[str, int] = {}
    for phase in PHASES:
        count = _count(raw.get(phase))
        if count:
            out[phase] = count
    return out


def stack_fields(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The `ProbeSample` fields of the stack sampler, from a checked probe document."""
    lines = doc.get("user_lines")
    stack = doc.get("stack")
    phase = doc.get("stack_phase")
    sig = doc.get("stack_sig")
    user_lines = [line for raw in (lines if isinstance(lines, list) else [])[:PUBLISHED_LINES]
                  if (line := _user_line(raw, True)) is not None]
    frames = [frame for raw in (stack if isinstance(stack, list) else [])[-PUBLISHED_FRAMES:]
              if (frame := _frame(raw)) is not None]
    return {
        "stack_samples": _count(doc.get("stack_samples")) or 0,
        "phase_samples": _phases(doc.get("phase_samples")),
        "user_lines": tuple(sorted(user_lines, key=lambda u: -u.samples)),
        "stack_phase": phase if isinstance(phase, str) and phase in PHASES else None,
        "stack_where": _text(doc.get("stack_where"), 120),
        "stack_line": _user_line(doc.get("stack_line"), False),
        "stack_sig": (sig if isinstance(sig, str) and len(sig) == 8
                      and all(c in "0123456789abcdef" for c in sig) else None),
        "stack": tuple(frames),
    }
