"""`PlannedLines`: a widget whose lines are planned as text, diffed, and only the cells that
changed repainted (`changed_cells`).

A per-poll widget (the overview's charts, the panel) says what every line holds; what changed
since the last poll is found here, so no widget keeps its own per-line bookkeeping.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.geometry import Region
from textual.strip import Strip

from gpusat_tui.ui.widgets.cell_text import cells, one_cell
from gpusat_tui.ui.widgets.lines import LineWidget

__all__ = ["Line", "PlannedLines", "changed_cells"]

#: One line as planned: (text, component class or "" for the widget's own style) parts.
Line = tuple[tuple[str, str], ...]


#: Unchanged cells between two changed runs of a line below which they are sent as one run:
#: a cursor move and a style cost about as much as this many cells resent.
_JOIN_GAP = 8


def changed_cells(old: Line | None, new: Line | None, width: int) -> list[tuple[int, int]]:
    """The runs of columns ``[start, end)`` where two planned lines differ (pure, for tests).

    Part by part where both lines have the same parts (text lengths and styles) and every
    character up to the last change is one cell wide: within a part that changed, from its
    first to its last changed cell (a sweep chart's two columns, a figure's digits); runs
    less than `_JOIN_GAP` cells apart are joined. Else the whole line.
    """
    whole = [(0, width)]
    if old is None or new is None or len(old) != len(new):
        return whole
    runs: list[tuple[int, int]] = []
    x = 0
    pending: list[str] = []  # unchanged parts since the last change, not yet checked
    for (a, old_part), (b, new_part) in zip(old, new, strict=True):
        n = len(a)
        if old_part != new_part or n != len(b):
            return whole
        if a == b:
            pending.append(a)
            x += n
            continue
        if pending:
            # Parts before a change place it: they must be one cell per character.
            if not one_cell("".join(pending)):
                return whole
            pending.clear()
        if not one_cell(a) or not one_cell(b):
            return whole
        start, end = _first_last_difference(a, b)
        if runs and x + start - runs[-1][1] < _JOIN_GAP:
            runs[-1] = (runs[-1][0], x + end)
        else:
            runs.append((x + start, x + end))
        x += n
    return runs


def _first_last_difference(a: str, b: str) -> tuple[int, int]:
    """``(start, end)``: the first and one past the last index where two different strings
    of one length differ. From the XOR of their UTF-32 codes (two C calls; a Python loop over
    the characters was most of `changed_cells`' cost)."""
    diff = (int.from_bytes(a.encode("utf-32-le"), "little")
            ^ int.from_bytes(b.encode("utf-32-le"), "little"))
    return ((diff & -diff).bit_length() - 1) >> 5, ((diff.bit_length() - 1) >> 5) + 1


class PlannedLines(LineWidget):
    """A widget whose every line is planned as text first (`plan`), then diffed and drawn.

    `replan` builds the plan for the current size (cheap: strings only), compares it with the
    last one and asks Textual to repaint only the cells that differ; `render_line` turns a
    planned line into a `Strip` when it is repainted (`LineWidget` keeps it until then). What
    changes per poll is then exactly what is repainted, without each widget keeping its own
    per-line bookkeeping.
    With `ui.partial_update` installed, only those cells go to the terminal.
    """

    styles_only = True  # every planned part is the widget's style or a component class's

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._plan: list[Line] = []
        self._plan_size: tuple[int, int] = (-1, -1)

    def plan(self, width: int, height: int) -> list[Line]:
        """Every line of the widget at this size (subclasses)."""
        raise NotImplementedError

    @property
    def planned(self) -> list[str]:
        """The lines as plain text (for tests)."""
        return ["".join(text for text, _ in line) for line in self._plan]

    def replan(self) -> None:
        """Plan again; repaint the lines that changed (all of them after a resize)."""
        size = (self.size.width, self.size.height)
        new = self.plan(*size)
        old, self._plan = self._plan, new
        if size != self._plan_size:
            self._plan_size = size
            self.refresh()
            return
        width = size[0]
        # Runs of lines changed in the same columns as one region each (a chart's rows): fewer
        # regions for the compositor to intersect with every widget.
        regions: list[Region] = []
        above: dict[tuple[int, int], int] = {}  # the previous line's runs -> their region
        for y in range(max(len(old), len(new))):
            before = old[y] if y < len(old) else None
            after = new[y] if y < len(new) else None
            here: dict[tuple[int, int], int] = {}
            if before != after:
                for run in changed_cells(before, after, width):
                    start, end = run
                    i = above.get(run)
                    if i is None:
                        regions.append(Region(start, y, end - start, 1))
                        i = len(regions) - 1
                    else:
                        last = regions[i]
                        regions[i] = Region(start, last.y, end - start, last.height + 1)
                    here[run] = i
            above = here
        if regions:
            self.refresh(*regions)

    def on_resize(self) -> None:
        self.replan()

    def render_line(self, y: int) -> Strip:
        width, height = self.drawing_size
        if (width, height) != self._plan_size:
            # Asked to draw at a size not planned for yet (the first paint, a resize).
            self._plan_size = (width, height)
            self._plan = self.plan(width, height)
        base = self.base_style
        if y >= len(self._plan):
            return Strip.blank(width, base)
        styles = self._part_styles or {}
        segments = [
            Segment(text, (styles.get(part) or self.part_style(part)) if part else base)
            for text, part in self._plan[y]
            if text
        ]
        # Planned lines are mostly chart glyphs and ASCII: measured here without rich's
        # cached per-string lookup (a new string per row per poll only fills its cache).
        strip = Strip(segments, sum(cells(text) for text, _ in self._plan[y]))
        if strip.cell_length != width:
            strip = strip.adjust_cell_length(width, base)
        return strip
