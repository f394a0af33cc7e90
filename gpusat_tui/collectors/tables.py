"""Helpers for the box tables several vendor tools print (cnmon, mthreads-gmi, npu-smi, brsmi...).

These tools draw nvidia-smi-like tables whose spacing shifts between versions, so the parsers
read cells by content, never by column offsets. What is the same for all of them lives here;
each parser keeps its own patterns for what differs (bus-id forms, header words, units).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

__all__ = ["box_cells", "celsius_token", "first_group", "header_index"]

_CELSIUS_RE = re.compile(r"^(-?\d+(?:\.\d+)?)C$")


def box_cells(line: str) -> list[str]:
    """``| a | b | c |`` -> ``["a", "b", "c"]``, each cell stripped.

    Every leading and trailing ``|`` goes, so a row drawn with a doubled border still has its
    first cell first.
    """
    return [c.strip() for c in line.strip().strip("|").split("|")]


def first_group(pattern: re.Pattern[str], lines: Iterable[str]) -> str | None:
    """Group 1 of ``pattern`` in the first line where it matches (a version banner), else None.

    Searched line by line, not on the whole text, so a ``\\s*`` in the pattern never reaches
    into the next line.
    """
    for line in lines:
        match = pattern.search(line)
        if match:
            return match.group(1)
    return None


def header_index(lines: Sequence[str], *words: str) -> int | None:
    """Index of the first line that contains every one of ``words`` (the table's header)."""
    return next((i for i, line in enumerate(lines) if all(w in line for w in words)), None)


def celsius_token(tokens: Iterable[str]) -> str | None:
    """The first token that is a bare Celsius figure (``"48C"``, ``"-5.5C"``), else None."""
    return next((t for t in tokens if _CELSIUS_RE.match(t)), None)
