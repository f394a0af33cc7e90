"""Sparkline rows on a fixed 0-100 scale, with gaps where a figure was missing.

Textual's own Sparkline scales to the data's max, so an idle card at 3 % would draw as tall as a
saturated one; here height means percent. It renders one `Text` per repaint from the last
``width`` points; `cards.CardPanel` draws them beside their labels.
"""

from __future__ import annotations

from collections.abc import Sequence

_BLOCKS = " ▁▂▃▄▅▆▇█"


#: Stands for a missing figure in the level string (levels themselves stay far below it).
_GAP = 0xFFFF

#: (row base, bottom row?, tallest level) -> that row's ``str.translate`` table.
_TABLES: dict[tuple[int, bool, int], dict[int, str]] = {}


def _row_table(base: int, bottom: bool, full: int) -> dict[int, str]:
    """Level (as a code point) -> the block it shows in the row whose lowest level is ``base``."""
    table = {level: _BLOCKS[min(max(level - base, 0), 8)] for level in range(full + 1)}
    table[_GAP] = "·" if bottom else " "
    return table


def spark_rows(values: Sequence[float | None], width: int, height: int, top: float) -> list[str]:
    """Rows (top first) of block characters for the last ``width`` values; pure, for tests."""
    if width <= 0 or height <= 0:
        return []
    tail = list(values)[-width:]
    # Columns before the first point are blank; a missing figure inside the data is a dot.
    pad = " " * (width - len(tail))
    full = height * 8
    levels: list[int] = []
    for value in tail:
        if value is None:
            levels.append(_GAP)
            continue
        frac = min(max(value / top, 0.0), 1.0) if top > 0 else 0.0
        level = round(frac * full)
        # A non-zero figure always shows at least the lowest block, so 1 % is not drawn as 0.
        levels.append(max(level, 1) if value > 0 else 0)
    # Each level is one code point; each row maps them all to its blocks in one translate().
    coded = "".join(map(chr, levels))
    rows: list[str] = []
    for row in range(height):
        key = ((height - 1 - row) * 8, row == height - 1, full)
        table = _TABLES.get(key)
        if table is None:
            table = _TABLES.setdefault(key, _row_table(*key))
        rows.append(pad + coded.translate(table))
    return rows
