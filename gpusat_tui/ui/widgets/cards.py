"""Card widgets: a compact row per card (the whole machine at a glance) and text blocks.

The card list is one row of text and a badge per card (the selected card in full is
`panel.CardPanel`, every card's block `overview.CardGrid`). Each widget here draws its own
lines (`lines.LineWidget`) and asks Textual to repaint only the lines whose text changed.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len
from rich.containers import Lines
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.events import Click
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from gpusat_tui.model import (
    UTIL_LABELS,
    VERDICT_KINDS,
    CardReading,
    Frame,
    Verdict,
    VerdictKind,
)
from gpusat_tui.text import clean
from gpusat_tui.ui.text import fmt
from gpusat_tui.ui.widgets.badge import badge_word
from gpusat_tui.ui.widgets.lines import LineWidget


class CachedStatic(LineWidget):
    """Shows one piece of text, one line per line of it (no wrapping: a long line ends in …);
    ignores updates whose key did not change.

    Cheaper than ``Static.update``, which always asks for a new layout (a full-screen reflow
    and repaint): here a new layout is asked for only when the text's shape (lines, widest
    line) changed, else just the lines that changed are repainted.
    """

    DEFAULT_CSS = """
    CachedStatic { height: auto; }
    """

    def __init__(
        self, content: str | Text = "", *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._content: Text = Text(content) if isinstance(content, str) else content
        self._key: object = object()
        self._shape = self._shape_of(self._content)
        self._lines: Lines = self._content.split("\n", allow_blank=True)

    @staticmethod
    def _shape_of(text: Text) -> tuple[int, int]:
        lines = text.plain.split("\n")
        return len(lines), max(cell_len(line) for line in lines)

    @property
    def text(self) -> Text:
        """What is shown now (for tests and for the status line's callers)."""
        return self._content

    @property
    def key(self) -> object:
        """The key of what is shown now: a caller may skip building a text for the same key."""
        return self._key

    def render(self) -> Text:
        # Used by Textual to measure auto width and height; drawing goes through render_line.
        return self._content

    def render_line(self, y: int) -> Strip:
        if y >= len(self._lines):
            return self.blank()
        return self.fit(self.text_segments(self._lines[y]))

    def show(self, key: object, content: Text) -> None:
        if key == self._key:
            return
        self._key = key
        old_lines = self._lines
        self._content = content
        self._lines = content.split("\n", allow_blank=True)
        # Only a widget sized by its content needs a new layout, and only when the lines
        # (auto height) or the widest line (auto width) changed: a status line of fixed size
        # repaints its one row and nothing else.
        shape = self._shape_of(content)
        styles = self.styles
        width_auto = styles.width is not None and styles.width.is_auto
        height_auto = styles.height is None or styles.height.is_auto
        layout = (height_auto and shape[0] != self._shape[0]) or (
            width_auto and shape[1] != self._shape[1]
        )
        self._shape = shape
        if layout or len(old_lines) != len(self._lines):
            self.refresh(layout=layout)
            return
        # Same number of lines: repaint only those whose text or styles changed.
        width = self.content_size.width
        changed = [
            Region(0, y, width, 1)
            for y, (old, new) in enumerate(zip(old_lines, self._lines, strict=True))
            if old.plain != new.plain or old.spans != new.spans or old.style != new.style
        ]
        if changed:
            self.refresh(*changed)


class WrappedText(Widget):
    """Like `CachedStatic` but wraps long lines (the why-and-advice panel): drawn as `Text`."""

    DEFAULT_CSS = """
    WrappedText { height: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._content = Text("")
        self._key: object = object()

    @property
    def text(self) -> Text:
        return self._content

    def render(self) -> Text:
        return self._content

    def show(self, key: object, content: Text) -> None:
        if key == self._key:
            return
        self._key = key
        self._content = content
        self.refresh(layout=True)


_BOLD = Style(bold=True)
_DIM = Style(dim=True)

#: Two letters per vendor, shown in the card list only when cards of several vendors mix.
VENDOR_TAGS: dict[str, str] = {
    "nvidia": "nv", "amd": "am", "hygon": "hy", "ascend": "as", "cambricon": "ca",
    "kunlunxin": "kl", "mthreads": "mt", "biren": "br",
}

#: The badge word of each verdict as a card row shows it.
_SHORT_WORDS = {kind: f" {badge_word(kind, short=True)} " for kind in VERDICT_KINDS}


def host_tag(host: str, width: int = 7) -> str:
    """A host name in ``width`` columns for a card row: as is when short, else its end
    (``gpu-node-017`` -> ``…de-017``), where node names usually differ."""
    host = clean(host, 64)
    return host.ljust(width) if len(host) <= width else "…" + host[-(width - 1):]


def util_label(card: CardReading) -> str:
    """The vendor's own name for utilisation (GPU-Util, HCU%, AICore%...)."""
    return UTIL_LABELS.get(card.vendor, "Util")


def card_row(
    card: CardReading, verdict: Verdict | None, selected: str | None, mixed: bool = False
) -> tuple[str, VerdictKind, bool]:
    """(label, kind, selected) of a card's row: ``▸ 0  87% `` then the badge."""
    kind = verdict.kind if verdict and verdict.kind in VERDICT_KINDS else "unknown"
    marker = "▸" if card.id == selected else " "
    stale = "~" if card.stale_s is not None else " "
    tag = VENDOR_TAGS.get(card.vendor, card.vendor[:2]) if mixed else ""
    if card.host:  # the fleet view: rows of many hosts would all read 0, 1, 2...
        tag = f"{host_tag(card.host)} {tag}"
    label = f"{marker}{tag}{card.index:>2} {fmt(card.util_pct, '%'):>4}{stale}"
    return label, kind, card.id == selected


class CardList(LineWidget):
    """Every card, one line each: ``▸ 0  87%  SATURATED``. One widget, not one per card.

    A widget per row (label + badge) cost two repaints per card per frame; one widget that
    draws all rows costs one. Verdict colours still come from CSS, through component classes
    (``cardlist--saturated``...), so themes apply. When there are more cards than lines, the
    rows shown slide to keep the selected card in view.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "cardlist--selected",
        "cardlist--edge",
        *(f"cardlist--{kind}" for kind in VERDICT_KINDS),
    }

    #: The list's right edge, drawn on every row (a CSS border would take Textual's slower
    #: drawing path for the whole list, see `LineWidget.render_lines`).
    EDGE = "▕"

    class Selected(Message):
        """The user clicked a card's row."""

        def __init__(self, card_id: str) -> None:
            super().__init__()
            self.card_id = card_id

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ids: list[str] = []
        self._rows: list[tuple[str, VerdictKind, bool]] = []
        self._first = 0

    def sync(
        self, cards: list[CardReading], verdicts: dict[str, Verdict], selected: str | None
    ) -> None:
        # On a machine with cards of two vendors (an NVIDIA card beside an Ascend one) two
        # rows would both read "0": each row then starts with its vendor's tag.
        mixed = len({card.vendor for card in cards}) > 1
        rows = [card_row(card, verdicts.get(card.id), selected, mixed) for card in cards]
        self.show_rows(rows, [c.id for c in cards])

    def listed_cards(self, frame: Frame, verdicts: dict[str, Verdict]) -> list[CardReading]:
        """The cards the list shows, in its order: here all of them, as they come (the fleet's
        list, `FleetList`, puts the worst first and folds the healthy)."""
        return frame.cards

    def unfold(self, selected: str | None) -> bool:
        """Open a folded row if ``selected`` is on one; this list folds nothing."""
        return False

    def show_rows(self, rows: list[tuple[str, VerdictKind, bool]], ids: list[str]) -> None:
        """Show ``rows`` (label, kind, selected), ``ids[i]`` the card a click on row i picks."""
        self.ids = ids
        if rows == self._rows:
            return
        old, self._rows = self._rows, rows
        if len(old) != len(rows) or [r[2] for r in old] != [r[2] for r in rows]:
            # Cards came or went, or the selection moved (the rows shown may slide): all of it.
            self.refresh()
            return
        # Only the rows whose text or verdict changed. A full refresh would re-render and
        # re-send every line of the list's full height (mostly blank below the last card):
        # that was about half of all the lines the dashboard redrew per frame.
        width = self.content_size.width
        changed = [
            Region(0, line, width, 1)
            for line, i in enumerate(self._window(self.content_size.height))
            if rows[i] != old[i]
        ]
        if changed:
            self.refresh(*changed)

    @property
    def lines(self) -> list[str]:
        """The rows as plain text (for tests)."""
        return [f"{label} {badge_word(kind, short=True)}" for label, kind, _ in self._rows]

    def _window(self, height: int) -> range:
        """Which rows fit, keeping the selected one in view."""
        count = len(self._rows)
        if height <= 0 or count <= height:
            return range(count)
        selected = next((i for i, row in enumerate(self._rows) if row[2]), 0)
        if selected < self._first:
            self._first = selected
        elif selected >= self._first + height:
            self._first = selected - height + 1
        self._first = min(self._first, count - height)
        return range(self._first, self._first + height)

    def render_line(self, y: int) -> Strip:
        width, height = self.drawing_size
        window = self._window(height)
        edge = (self.EDGE, self.part_style("cardlist--edge"))
        if y >= len(window):
            return self.strip([(" " * max(width - 1, 0), None), edge])
        label, kind, selected = self._rows[window[y]]
        word = _SHORT_WORDS.get(kind, " UNKNOWN ")
        row = self.fit(self.strip_parts([
            (label, self.part_style("cardlist--selected") if selected else None),
            (word, self.part_style(f"cardlist--{kind}")),
        ]), max(width - 1, 0))
        if row.cell_length < width - 1:
            row = row.adjust_cell_length(width - 1, self.base_style)
        return Strip([*row, Segment(*edge)], width)

    def on_click(self, event: Click) -> None:
        window = self._window(self.content_size.height)
        if 0 <= event.y < len(window):
            self.post_message(self.Selected(self.ids[window[event.y]]))


