"""Where the arrow keys move the selection: through the list, or across the overview's grid.

Pure: the cards' ids in their order on screen, the selected one and the step in; the card to
select out. Cost: none known; a card no longer listed counts as the first.
"""

from __future__ import annotations

from collections.abc import Sequence


def card_after(ids: Sequence[str], selected: str | None, step: int) -> str | None:
    """The card ``step`` places from ``selected``, round the ends; None without cards."""
    if not ids:
        return None
    index = ids.index(selected) if selected in ids else 0
    return ids[(index + step) % len(ids)]


def card_below(ids: Sequence[str], selected: str | None, rows: int, cols: int) -> str | None:
    """In a grid ``cols`` blocks wide: the card ``rows`` rows down (up where negative); None
    past the top or the bottom (the selection stops at the edges)."""
    index = ids.index(selected) if selected in ids else 0
    target = index + rows * cols
    return ids[target] if 0 <= target < len(ids) else None
