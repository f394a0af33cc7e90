"""A base for widgets that draw their own lines (Textual's line API).

A widget that returns a `Text` from ``render`` is converted to Textual's `Content` and wrapped
on every repaint, all of its lines. A `LineWidget` hands Textual one `Strip` per line it is
asked for, and Textual only asks again for the lines marked dirty: a card row that did not
change costs nothing. Colours still come from the stylesheet (the widget's own style and its
component classes), so every theme applies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import ClassVar, Self

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.filter import ANSIToTruecolor, LineFilter
from textual.geometry import Region, Size, Spacing
from textual.strip import Strip
from textual.widget import Widget


class LineWidget(Widget):
    """Subclasses implement ``render_line(y)`` with `strip` and `blank`, and call ``refresh``
    (with the content regions that changed, or none for all) whenever a line changes."""

    _base_style: Style | None = None
    _part_styles: dict[str, Style] | None = None
    #: Finished lines (padding and filters applied) by row, valid for `_lines_key`.
    _line_cache: dict[int, Strip] | None = None
    _lines_key: tuple[object, ...] = ()
    _filter_background: Color | None = None
    #: The content size while `render_lines` draws (``size`` is computed on every read, from
    #: the widget's region on screen: ~2 µs, per line it adds up).
    _drawing: Size | None = None

    def notify_style_update(self) -> None:
        # A theme or class change: styles cached here are stale, every line must be redrawn.
        super().notify_style_update()
        self._base_style = None
        self._part_styles = None
        self.refresh()

    def refresh(
        self, *regions: Region, repaint: bool = True, layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        """Textual's refresh, also dropping the finished lines it marks dirty."""
        cache = self._line_cache
        if repaint and cache:
            if regions:
                top = self.styles.padding.top
                for region in regions:
                    for y in region.line_range:
                        cache.pop(y + top, None)
            else:
                cache.clear()
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    @property
    def base_style(self) -> Style:
        """The widget's own colours and text style (its background composed over its parents')."""
        if self._base_style is None:
            self._base_style = self.rich_style
        return self._base_style

    def part_style(self, component: str) -> Style:
        """A component class's style over the widget's own."""
        if self._part_styles is None:
            self._part_styles = {}
        style = self._part_styles.get(component)
        if style is None:
            style = self.base_style + self.get_component_rich_style(component)
            self._part_styles[component] = style
        return style

    def strip_parts(self, parts: Iterable[tuple[str, Style | None]]) -> list[Segment]:
        """Segments from (text, style) parts; a part without a style takes the widget's."""
        base = self.base_style
        return [Segment(text, style or base) for text, style in parts if text]

    def strip(self, parts: Iterable[tuple[str, Style | None]]) -> Strip:
        """One line from (text, style) parts; a part without a style takes the widget's."""
        segments = self.strip_parts(parts)
        return Strip(segments, sum(cells(segment.text) for segment in segments))

    def text_segments(self, line: Text, style: Style | None = None) -> list[Segment]:
        """One line of a `Text` as segments over ``style`` (default: the widget's own)."""
        console = self.app.console
        base = style or self.base_style
        # Rich leaves the Text's own style out of the segments (a console applies it).
        if line.style:
            base = base + console.get_style(line.style)
        line.end = ""
        return [
            Segment(seg.text, base + seg.style if seg.style else base)
            for seg in line.render(console)
            if seg.text
        ]

    def fit(self, segments: list[Segment], width: int | None = None) -> Strip:
        """A line cut to ``width`` (default: the content width), ending in … when cut."""
        strip = Strip(segments, sum(cells(segment.text) for segment in segments))
        if width is None:
            width = self.drawing_size.width
        if strip.cell_length <= width:
            return strip
        if width <= 1:
            return strip.crop(0, width)
        kept = list(strip.crop(0, width - 1))
        style = kept[-1].style if kept else None
        return Strip([*kept, Segment("…", style or self.base_style)])

    def fit_at_word(self, segments: list[Segment], width: int | None = None) -> Strip:
        """Like `fit`, but a cut line ends at a word, then … (no word is shown half)."""
        strip = Strip(segments, sum(cells(segment.text) for segment in segments))
        if width is None:
            width = self.drawing_size.width
        if strip.cell_length <= width or width <= 1:
            return self.fit(segments, width)
        keep = word_cut_cells(strip.text, width - 1)
        kept = list(strip.crop(0, keep))
        style = kept[-1].style if kept else None
        return Strip([*kept, Segment("…", style or self.base_style)]).adjust_cell_length(
            width, self.base_style
        )

    def render_lines(self, crop: Region) -> list[Strip]:
        """The lines in ``crop``, straight from `render_line`'s cache.

        Textual's own path (its styles cache) re-wraps every repainted line for borders,
        padding, tint and opacity, making two more `Strip`s each and measuring every line
        again: profiled at about a fifth of the dashboard's CPU. A line widget draws its
        padding here (blank cells in its own colours) and skips that path, applying only the
        app's line filters (NO_COLOR, dimming). Borders, tint and opacity take Textual's path:
        a border belongs on a container around the widget (it is drawn once, not per poll).
        """
        styles = self.styles
        if (styles.border.spacing != _NO_SPACING or styles.opacity != 1
                or styles.text_opacity != 1 or styles.tint.a):
            return super().render_lines(crop)
        filters = self.get_line_filters()
        pad = styles.padding
        size = self.size
        width, height = size
        outer = width + pad.left + pad.right
        # Textual asks for every line of the rectangle around all the screen's changes, not
        # just the changed ones: a widget beside a changing chart would redraw each of its
        # lines every poll. Lines not refreshed since are handed back as they were.
        key = (outer, height, pad, *filters)
        cache = self._line_cache
        if cache is None or key != self._lines_key:
            cache = self._line_cache = {}
            self._lines_key = key
        self._filter_background = None
        full = crop.x == 0 and crop.width == outer
        strips = []
        self._drawing = size
        try:
            for y in crop.line_range:
                strip = cache.get(y)
                if strip is None:
                    strip = cache[y] = self._finished_line(y, width, height, outer, pad, filters)
                strips.append(strip if full else strip.crop(crop.x, crop.right))
        finally:
            self._drawing = None
        return strips

    @property
    def drawing_size(self) -> Size:
        """The content size: read once while lines are drawn, for `render_line` to use."""
        return self._drawing or self.size

    def _finished_line(
        self, y: int, width: int, height: int, outer: int, pad: Spacing,
        filters: Sequence[LineFilter],
    ) -> Strip:
        """Line ``y`` of the widget (padding included) as the screen shows it."""
        base = self.base_style
        row = y - pad.top
        if 0 <= row < height:
            strip = self.render_line(row)
            if strip.cell_length != width:  # as Textual's path does: every line full width
                strip = strip.adjust_cell_length(width, base)
            if pad.left or pad.right:
                strip = Strip(
                    [Segment(" " * pad.left, base), *strip, Segment(" " * pad.right, base)],
                    outer,
                )
        else:
            strip = Strip.blank(outer, base)
        if filters:
            # The background behind the widget, which a filter (dimming) blends towards:
            # walking the ancestors costs ~40 µs, so once per set of lines, not per line.
            background = self._filter_background
            if background is None:
                background = self._filter_background = self.background_colors[1]
            for line_filter in filters:
                if self.styles_only and type(line_filter) is ANSIToTruecolor and (
                        self._truecolor_styles()):
                    continue
                strip = strip.apply_filter(line_filter, background)
        return strip

    #: True where every segment's style is the widget's own or one of its component classes'
    #: (`part_style`), never a style from elsewhere (a `Text`'s spans): then whether Textual's
    #: ANSI-to-truecolor filter would change a line is known from those styles alone.
    styles_only: ClassVar[bool] = False
    _truecolor_key: tuple[Style, int] | None = None
    _truecolor = False

    def _truecolor_styles(self) -> bool:
        """Whether the styles handed out so far are all truecolor and not dim, so that the
        ANSI-to-truecolor filter would hand every line back unchanged (it converts ANSI
        colours, and dim text to a blended colour). Measured as ~8 % of the overview's
        CPU: a new `Strip` per line per poll, to change nothing."""
        parts = self._part_styles or {}
        key = (self.base_style, len(parts))  # part styles are only ever added, until reset
        if key != self._truecolor_key:
            self._truecolor_key = key
            self._truecolor = all(
                not style.dim
                and (style.color is None or style.color.triplet is not None)
                and (style.bgcolor is None or style.bgcolor.triplet is not None)
                for style in (self.base_style, *parts.values())
            )
        return self._truecolor

    def blank(self) -> Strip:
        """An empty line in the widget's colours."""
        return Strip.blank(self.drawing_size.width, self.base_style)


_NO_SPACING = Spacing(0, 0, 0, 0)

#: One line as planned: (text, component class or "" for the widget's own style) parts.
Line = tuple[tuple[str, str], ...]


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
            if _ONE_CELL_RUN("".join(pending)) is None:
                return whole
            pending.clear()
        if _ONE_CELL_RUN(a) is None or _ONE_CELL_RUN(b) is None:
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
