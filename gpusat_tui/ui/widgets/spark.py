"""Sparkline rows on a fixed 0-100 scale, with gaps where a figure was missing.

Textual's own Sparkline scales to the data's max, so an idle card at 3 % would draw as tall as a
saturated one; here height means percent. It renders one `Text` per repaint from the last
``width`` points; `cards.CardPanel` draws them beside their labels.
"""

from __future__ import annotations

from collections.abc import Sequence

_BLOCKS = " ▁▂▃▄▅▆▇█"


def spark_rows(values: Sequence[float | None], width: int, height: int, top: float) -> list[str]:
    """Rows (top first) of block characters for the last ``width`` values; pure, for tests."""
    if width <= 0 or height <= 0:
        return []
    tail = list(values)[-width:]
    # Columns before the first point are blank; a missing figure inside the data is a dot.
    pad = width - len(tail)
    levels: list[int | None] = []
    for value in tail:
        if value is None:
            levels.append(None)
            continue
        frac = min(max(value / top, 0.0), 1.0) if top > 0 else 0.0
        level = round(frac * height * 8)
        # A non-zero figure always shows at least the lowest block, so 1 % is not drawn as 0.
        levels.append(max(level, 1) if value > 0 else 0)
    rows: list[str] = []
    for row in range(height):
        base = (height - 1 - row) * 8
        chars = []
        for level in levels:
            if level is None:
                chars.append("·" if row == height - 1 else " ")
            else:
                chars.append(_BLOCKS[min(max(level - base, 0), 8)])
        rows.append(" " * pad + "".join(chars))
    return rows
