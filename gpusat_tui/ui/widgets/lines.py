"""A base for widgets that draw their own lines (Textual's line API).

A widget that returns a `Text` from ``render`` is converted to Textual's `Content` and wrapped
on every repaint, all of its lines. A `LineWidget` hands Textual one `Strip` per line it is
asked for, and Textual only asks again for the lines marked dirty: a card row that did not
change costs nothing. Colours still come from the stylesheet (the widget's own style and its
component classes), so every theme applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar, Self

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.color import Color
from textual.filter import ANSIToTruecolor, LineFilter
from textual.geometry import Region, Size, Spacing
from textual.strip import Strip
from textual.widget import Widget

from gpusat_tui.ui.widgets.cell_text import cells, word_cut_cells


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
