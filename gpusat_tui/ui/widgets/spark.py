"""Sparkline rows on a fixed 0-100 scale, with gaps where a figure was missing.

Textual's own Sparkline scales to the data's max, so an idle card at 3 % would draw as tall as a
saturated one; here height means percent. `cards.CardPanel` and `overview.CardGrid` draw them
beside their labels.

The dashboard draws its charts as a sweep (`sweep_rows`), as a patient monitor does: the newest
point is written over the oldest one in a fixed frame, a blank column just ahead of it. A chart
that scrolled by a column every poll changed every cell of every chart row every poll, and the
terminal was sent all of them (12 KiB a second in 160x50 with 8 cards); a sweep changes two
columns, which is all that is sent. `spark_rows` (newest at the right edge) is what the
``report`` command's static charts use.
"""

from __future__ import annotations

from collections.abc import Sequence

_BLOCKS = " ▁▂▃▄▅▆▇█"


#: Stands for a missing figure in the level string (levels themselves stay far below it).
_GAP = 0xFFFF

#: Stands for a column with no point yet (blank; the reference line's row shows the line).
_EMPTY = 0xFFFE

#: Stands for the sweep's blank column just ahead of the newest point.
_CURSOR = 0xFFFD

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
    table[_EMPTY] = empty
    table[_CURSOR] = " "
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
    levels = _levels(tail, height, top)
    return _rows([_EMPTY] * (width - len(tail)) + levels, height, top, mark)


def sweep_column(pushed: int, width: int) -> int:
    """The column of the newest point in a sweep chart ``width`` wide after ``pushed`` points."""
    return (pushed - 1) % width if width > 0 and pushed > 0 else -1


def sweep_rows(
    values: Sequence[float | None], pushed: int, width: int, height: int, top: float,
    mark: float | None = None,
) -> list[str]:
    """Rows (top first) of a sweep chart: the point number ``k`` (counting from 0 over the
    ``pushed`` points ever added; ``values`` holds the last of them) is drawn in column
    ``k % width``, the column after the newest point is left blank, so the newest is always
    next to the oldest shown and a poll changes only those two columns. ``width - 1`` points
    are shown, as many as a scrolling chart shows less one. Pure, for tests.
    """
    if width <= 0 or height <= 0:
        return []
    pushed = max(pushed, len(values))  # a history built without counting its points
    shown = min(len(values), pushed, width - 1)
    tail = list(values)[len(values) - shown:] if shown else []
    # In time order, ending at the newest point: the cursor column, columns without a point
    # (before the chart is full), the points. Column ``k`` shows element ``(k - newest - 1)``.
    ordered = [_CURSOR] + [_EMPTY] * (width - 1 - shown) + _levels(tail, height, top)
    newest = sweep_column(pushed, width)
    if newest < 0:
        ordered = [_EMPTY] * width
    split = width - 1 - newest if newest >= 0 else 0
    return _rows(ordered[split:] + ordered[:split], height, top, mark)


def _levels(tail: Sequence[float | None], height: int, top: float) -> list[int]:
    """Each figure's level in eighths of a row (`_GAP` for a missing one)."""
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
    return levels


def _rows(levels: list[int], height: int, top: float, mark: float | None) -> list[str]:
    """The chart's rows from a level per column."""
    marked = mark_row(height, top, mark)
    full = height * 8
    # Each level is one code point; each row maps them all to its blocks in one translate().
    coded = "".join(map(chr, levels))
    rows: list[str] = []
    for row in range(height):
        key = ((height - 1 - row) * 8, row == height - 1, full, row == marked)
        table = _TABLES.get(key)
        if table is None:
            table = _TABLES.setdefault(key, _row_table(*key))
        rows.append(coded.translate(table))
    return rows
