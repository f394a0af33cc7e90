"""A base for widgets that draw their own lines (Textual's line API).

A widget that returns a `Text` from ``render`` is converted to Textual's `Content` and wrapped
on every repaint, all of its lines. A `LineWidget` hands Textual one `Strip` per line it is
asked for, and Textual only asks again for the lines marked dirty: a card row that did not
change costs nothing. Colours still come from the stylesheet (the widget's own style and its
component classes), so every theme applies.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget


class LineWidget(Widget):
    """Subclasses implement ``render_line(y)`` with `strip` and `blank`."""

    _base_style: Style | None = None
    _part_styles: dict[str, Style] | None = None

    def notify_style_update(self) -> None:
        # A theme or class change: styles cached here are stale, every line must be redrawn.
        super().notify_style_update()
        self._base_style = None
        self._part_styles = None
        self.refresh()

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
        return Strip(self.strip_parts(parts))

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
        strip = Strip(segments)
        if width is None:
            width = self.size.width
        if strip.cell_length <= width:
            return strip
        if width <= 1:
            return strip.crop(0, width)
        kept = list(strip.crop(0, width - 1))
        style = kept[-1].style if kept else None
        return Strip([*kept, Segment("…", style or self.base_style)])

    def blank(self) -> Strip:
        """An empty line in the widget's colours."""
        return Strip.blank(self.size.width, self.base_style)
