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

#: Drawn in the empty cells of the row that holds a reference line (the power cap).
MARK = "┈"

#: (row base, bottom row?, tallest level, marked row?) -> that row's ``str.translate`` table.
_TABLES: dict[tuple[int, bool, int, bool], dict[int, str]] = {}


def _row_table(base: int, bottom: bool, full: int, marked: bool) -> dict[int, str]:
    """Level (as a code point) -> the block it shows in the row whose lowest level is ``base``."""
    empty = MARK if marked else " "
    table = {
        level: _BLOCKS[min(level - base, 8)] if level > base else empty
        for level in range(full + 1)
    }
    table[_GAP] = "·" if bottom else empty
    return table


def mark_row(height: int, top: float, mark: float | None) -> int | None:
    """The row (top first) that a reference line at ``mark`` (same unit as the values) falls in."""
    # A one-row chart has no room for a line that is not its whole background.
    if mark is None or top <= 0 or height < 2 or not 0 < mark <= top:
        return None
    level = min(round(mark / top * height * 8), height * 8)
    return height - 1 - min((level - 1) // 8, height - 1)


def spark_rows(
    values: Sequence[float | None], width: int, height: int, top: float,
    mark: float | None = None,
) -> list[str]:
    """Rows (top first) of block characters for the last ``width`` values; pure, for tests.

    ``mark``: a reference value (the power cap) drawn as a dotted line through the empty cells
    of the row it falls in.
    """
    if width <= 0 or height <= 0:
        return []
    n = len(values)
    tail = list(values)[-width:] if n > width else list(values)
    # Columns before the first point are blank; a missing figure inside the data is a dot.
    marked = mark_row(height, top, mark)
    full = height * 8
    # One comprehension, no call per point but round(): the overview plans ~1,700 points a
    # poll. A non-zero figure always shows at least the lowest block, so 1 % is not drawn as 0.
    if top > 0:
        levels = [
            _GAP if v is None else 0 if v <= 0 else full if v >= top else round(v / top * full) or 1
            for v in tail
        ]
    else:
        levels = [_GAP if v is None else 1 if v > 0 else 0 for v in tail]
    # Each level is one code point; each row maps them all to its blocks in one translate().
    coded = "".join(map(chr, levels))
    rows: list[str] = []
    blank = width - len(tail)
    for row in range(height):
        key = ((height - 1 - row) * 8, row == height - 1, full, row == marked)
        table = _TABLES.get(key)
        if table is None:
            table = _TABLES.setdefault(key, _row_table(*key))
        rows.append((MARK if row == marked else " ") * blank + coded.translate(table))
    return rows
