"""How many terminal cells a string takes, and cutting one to a width (at a word, or not).

Rich's ``cell_len`` looks every string up in a cache; the lines drawn on every poll are mostly
ASCII and chart glyphs, so a string made only of characters surely one cell wide is measured by
its length instead. What it costs: a character outside that set takes Rich's path.
"""

from __future__ import annotations

import re

from rich.cells import cell_len, set_cell_size

__all__ = ["cells", "cut", "cut_at_word", "one_cell", "word_cut_cells"]


#: Characters one cell wide for certain: printable ASCII, the blocks and rules the charts
#: draw and the marks the lines use.
_ONE_CELL = frozenset(
    [chr(c) for c in range(0x20, 0x7F)] + list(" ▁▂▃▄▅▆▇█┈·▸…°–—▕▔")
)
#: The same as a pattern: matching a chart row is ~10x cheaper than a set's ``issuperset``,
#: which makes a string object per character outside Latin-1 (every block glyph).
_ONE_CELL_RUN = re.compile("[" + re.escape("".join(sorted(_ONE_CELL))) + "]*").fullmatch


def one_cell(text: str) -> bool:
    """Whether every character of ``text`` is surely one cell wide (its columns are its
    characters)."""
    return _ONE_CELL_RUN(text) is not None


def cells(text: str) -> int:
    """Cells ``text`` takes: its length where every character is surely one cell wide."""
    return len(text) if _ONE_CELL_RUN(text) is not None else cell_len(text)


def cut(text: str, width: int) -> str:
    """``text`` made exactly ``width`` cells wide: padded with spaces, or cut ending in …."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return set_cell_size(text, width)
    return set_cell_size(text, width - 1) + "…" if width > 1 else set_cell_size(text, 1)


def word_cut_cells(text: str, width: int) -> int:
    """Cells of ``text`` to keep so that at most ``width`` are kept and the cut falls between
    words (after the last space that fits); a first word wider than ``width`` is cut."""
    used = 0
    last_break = 0
    for char in text:
        size = cell_len(char)
        if used + size > width:
            break
        used += size
        if char == " ":
            last_break = used - 1
    return last_break if last_break > 0 else used


def cut_at_word(text: str, width: int) -> str:
    """``text`` made exactly ``width`` cells wide; a cut ends at a word, then …."""
    if width <= 1 or cell_len(text) <= width:
        return cut(text, width)
    keep = word_cut_cells(text, width - 1)
    return set_cell_size(set_cell_size(text, keep).rstrip() + "…", width)
