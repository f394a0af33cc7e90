"""Send the terminal only the cells a repaint changed, not each line from its widget's edge.

Textual repaints a region of a widget by writing, for every line of it, from the widget's left
edge to the region's right edge (`ChopsUpdate.render_segments` crops the widget's line to
``[0, x2)``; its own comment: "crop to x extents"). A sweep chart changes two columns in the
middle of a 160-column grid, and Textual sent the line from its left edge to there: up to the
whole line, every poll, for every chart row. `send_changed_cells_only` makes it crop to
``[x1, x2)`` and move the cursor to ``x1``: the same screen, a fraction of the bytes.

What it costs: it replaces one method of a private Textual class (about twenty lines, a copy
of Textual 8's with the crop corrected); pyproject pins the Textual major it was written
against, it refuses to install (and the dashboard works as before) where the class does not
look as expected, and tests/ui/test_partial_update.py checks the bytes against Textual's own
rendering of the same screen.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.control import Control

_installed = False


def render_changed_cells(update: Any, console: Console) -> str:
    """Textual's `ChopsUpdate.render_segments`, each span cropped to its own columns."""
    sequences: list[str] = []
    append = sequences.append
    move_to = Control.move_to
    chops = update.chops
    chop_ends = update.chop_ends
    last_y = update.spans[-1][0]
    for y, x1, x2 in update.spans:
        line = chops[y]
        ends = chop_ends[y]
        for end, (x, strip) in zip(ends, line.items(), strict=False):
            if strip is None or x > x2 or end <= x1:
                continue
            if x2 > x >= x1 and end <= x2:
                append(move_to(x, y).segment.text)
                append(strip.render(console))
                continue
            start = max(x1 - x, 0)
            strip = strip.crop(start, min(end, x2) - x)
            append(move_to(x + start, y).segment.text)
            append(strip.render(console))
        if y != last_y:
            append("\n")
    return "".join(sequences)


def send_changed_cells_only() -> bool:
    """Install `render_changed_cells` for every screen update; False (nothing changed) where
    Textual's update class is not the one it was written for."""
    global _installed
    if _installed:
        return True
    try:
        from textual._compositor import ChopsUpdate
    except ImportError:
        return False
    init = getattr(ChopsUpdate, "__init__", None)
    names = getattr(getattr(init, "__code__", None), "co_varnames", ())
    if not callable(getattr(ChopsUpdate, "render_segments", None)) or names[:4] != (
            "self", "chops", "spans", "chop_ends"):
        return False

    def render_segments(self: Any, console: Console) -> str:
        return render_changed_cells(self, console)

    ChopsUpdate.render_segments = render_segments  # type: ignore[method-assign]
    _installed = True
    return True
