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
look as expected, and tests/ui/test_sweep.py checks the bytes against Textual's own
rendering of the same screen.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from rich.color import ColorSystem
from rich.console import Console
from rich.segment import Segment
from rich.style import Style

from gpusat_tui.ui.widgets.cell_text import one_cell

_installed = False


#: Back to the terminal's plain attributes.
_RESET = "\x1b[0m"


def render_changed_cells(update: Any, console: Console) -> str:
    """Textual's `ChopsUpdate.render_segments`, each span cropped to its own columns.

    A chop partly inside a span is cut here, segment by segment, straight to escape codes:
    cutting it with `Strip.crop` made a `Strip` (and its caches) per chop per repaint, which
    with a sweep chart's narrow spans was most of this function's cost (profiled: more CPU
    than Textual's whole-line rendering it replaces). The cut cells are written with their
    style's attributes set once and kept while the next cells have the same style (a cursor
    move does not change them): Rich's rendering sets and resets them around every segment,
    ~23 bytes, which for a sweep chart's two cells per row was more than half of what a poll
    sent. The attributes are reset before anything else is written and at the end.
    """
    sequences: list[str] = []
    append = sequences.append
    color_system = console._color_system  # as `Strip.render` reads it
    chops = update.chops
    chop_ends = update.chop_ends
    current = ""  # the attributes in force after what is written so far ("" = plain)
    for y, x1, x2 in update.spans:
        line = chops[y]
        ends = chop_ends[y]
        for end, (x, strip) in zip(ends, line.items(), strict=False):
            if strip is None or x > x2 or end <= x1:
                continue
            if x2 > x >= x1 and end <= x2:
                if current:
                    append(_RESET)
                    current = ""
                append(f"\x1b[{y + 1};{x + 1}H")  # Control.move_to(x, y), without the object
                append(strip.render(console))
                continue
            start = max(x1 - x, 0)
            stop = min(end, x2) - x
            append(f"\x1b[{y + 1};{x + start + 1}H")
            pieces = cells_pieces(strip, start, stop)
            if pieces is None:  # a wide character in the way: Textual's own crop
                if current:
                    append(_RESET)
                    current = ""
                append(strip.crop(start, stop).render(console))
                continue
            for text, style in pieces:
                if style is None:
                    sgr = ""
                else:
                    found = attributes(style, color_system)
                    if found is None:  # a link: as Rich writes it
                        if current:
                            append(_RESET)
                            current = ""
                        append(Style.render(style, text, color_system=color_system))
                        continue
                    sgr = found
                if sgr != current:
                    if current:
                        append(_RESET)
                    append(sgr)
                    current = sgr
                append(text)
    if current:
        append(_RESET)
    # Textual also writes a newline between lines: each span starts with its own cursor
    # move, so here it would be two bytes a changed line for nothing.
    return "".join(sequences)


def cells_pieces(
    strip: Iterable[Segment], start: int, stop: int,
) -> list[tuple[str, Style | None]] | None:
    """Cells ``[start, stop)`` of ``strip`` as (text, style) pieces (what
    ``strip.crop(start, stop)`` holds); None where a segment up to them is not surely one
    cell per character."""
    out: list[tuple[str, Style | None]] = []
    x = 0
    for text, style, control in strip:
        if control or not text:
            continue
        if not one_cell(text):
            return None  # the columns after it are not its length
        right = x + len(text)
        if right > start:
            piece = text[max(start - x, 0):stop - x]
            if piece:
                out.append((piece, style))
            if right >= stop:
                break
        x = right
    return out


@lru_cache(maxsize=1024)
def attributes(style: Style, color_system: ColorSystem | None) -> str | None:
    """The escape code that sets ``style``'s attributes ("" for none), as Rich writes it
    before a segment; None for a style Rich writes otherwise (a link)."""
    rendered = Style.render(style, "\x00", color_system=color_system)
    before, _, after = rendered.partition("\x00")
    if not before and not after:
        return ""
    if after != _RESET or "\x1b]" in before:
        return None
    return before


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
