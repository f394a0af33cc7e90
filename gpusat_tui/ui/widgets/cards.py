"""Card widgets: a compact row per card (the whole machine at a glance) and one full detail.

Only the selected card is drawn in full (three sparklines, gauge); the others are one row of
text and a badge. Each of the three draws its own lines (`lines.LineWidget`) and asks Textual to
repaint only the lines whose text changed: with 8 cards at 1 Hz the whole monitor stays under
1 % of a core (README, Benchmarks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from gpusat_tui.model import UTIL_LABELS, VERDICT_KINDS, CardReading, Verdict
from gpusat_tui.ui.state import CardHistory
from gpusat_tui.ui.text import clean, fmt, literal
from gpusat_tui.ui.widgets.badge import badge_word
from gpusat_tui.ui.widgets.gauge import gauge_text
from gpusat_tui.ui.widgets.lines import LineWidget
from gpusat_tui.ui.widgets.spark import spark_rows


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
        self._lines: list[Text] = self._content.split("\n", allow_blank=True)

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


class CardList(LineWidget):
    """Every card, one line each: ``▸ 0  87%  SATURATED``. One widget, not one per card.

    A widget per row (label + badge) cost two repaints per card per frame; one widget that
    draws all rows costs one. Verdict colours still come from CSS, through component classes
    (``cardlist--saturated``...), so themes apply. When there are more cards than lines, the
    rows shown slide to keep the selected card in view.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "cardlist--selected",
        *(f"cardlist--{kind}" for kind in VERDICT_KINDS),
    }

    class Selected(Message):
        """The user clicked a card's row."""

        def __init__(self, card_id: str) -> None:
            super().__init__()
            self.card_id = card_id

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ids: list[str] = []
        self._rows: list[tuple[str, str, bool]] = []
        self._first = 0

    def sync(
        self, cards: list[CardReading], verdicts: dict[str, Verdict], selected: str | None
    ) -> None:
        rows = []
        # On a machine with cards of two vendors (an NVIDIA card beside an Ascend one) two
        # rows would both read "0": each row then starts with its vendor's tag.
        mixed = len({card.vendor for card in cards}) > 1
        for card in cards:
            verdict = verdicts.get(card.id)
            kind = verdict.kind if verdict and verdict.kind in VERDICT_KINDS else "unknown"
            marker = "▸" if card.id == selected else " "
            stale = "~" if card.stale_s is not None else " "
            tag = VENDOR_TAGS.get(card.vendor, card.vendor[:2]) if mixed else ""
            if card.host:  # the fleet view: rows of many hosts would all read 0, 1, 2...
                tag = f"{host_tag(card.host)} {tag}"
            label = f"{marker}{tag}{card.index:>2} {fmt(card.util_pct, '%'):>4}{stale}"
            rows.append((label, kind, card.id == selected))
        self.ids = [c.id for c in cards]
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
        window = self._window(self.size.height)
        if y >= len(window):
            return self.blank()
        label, kind, selected = self._rows[window[y]]
        return self.strip([
            (label, self.part_style("cardlist--selected") if selected else None),
            (_SHORT_WORDS.get(kind, " UNKNOWN "), self.part_style(f"cardlist--{kind}")),
        ])

    def on_click(self, event: Click) -> None:
        window = self._window(self.content_size.height)
        if 0 <= event.y < len(window):
            self.post_message(self.Selected(self.ids[window[event.y]]))


@dataclass
class Metric:
    """One sparkline of the selected card: ``GPU-Util 87%`` and its points (top = full scale)."""

    label: str = ""
    values: tuple[float | None, ...] = ()
    top: float = 100.0


#: The most rows a sparkline of the selected card takes in a tall pane. Taller charts are
#: finer (8 levels a row) but cost CPU: 4 rows measured +0.05 to +0.09 % of a core at 1 Hz
#: (more lines repainted every poll), too much of the 1 % budget for what they add.
MAX_METRIC_ROWS = 2

#: The component class of each metric's sparkline, in the order they are drawn.
METRIC_PARTS = ("cardpanel--util", "cardpanel--mem", "cardpanel--power")


class CardPanel(LineWidget):
    """The selected card's figures, drawn as one widget (one repaint per frame):

    ``nvidia:0 61°C NVIDIA H100 …   SATURATED`` / three labelled sparklines (`MAX_METRIC_ROWS`
    rows each where the pane allows; one in a short pane or while the why panel is open) / the
    power gauge / the first reason.

    It was nine widgets (a title, a badge, three metric lines, a gauge, a reason line and two
    containers); each one the compositor visits costs it about as much as drawing a line, so
    one widget that draws its own lines is most of the saving. Colours still come from the
    stylesheet through component classes.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *METRIC_PARTS,
        "cardpanel--gauge",
        "cardpanel--why",
        *(f"cardpanel--{kind}" for kind in VERDICT_KINDS),
    }

    DEFAULT_CSS = """
    CardPanel { height: auto; }
    """

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.title = Text("Waiting for the first frame…")
        self.kind = "unknown"
        self.cause: str | None = None
        self.metrics = [Metric(), Metric(), Metric()]
        self.reading: tuple[float | None, float | None] = (None, None)
        self.why_line = Text("")
        self.why_open = False
        self.label_width = 18
        self._spark_rows: dict[int, tuple[tuple[int, int], list[str]]] = {}

    # --- what it shows (set by CardDetail.show; each setter repaints only its own lines) --------

    def metric_rows(self) -> int:
        """Rows per sparkline at the panel's current height (see `get_content_height`)."""
        return max(1, (self.size.height - self._fixed_rows()) // 3)

    def _fixed_rows(self) -> int:
        """The title, the gauge and (unless the why panel is open) the first reason."""
        return 2 if self.why_open else 3

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        # The sparklines take the height the pane gives, up to MAX_METRIC_ROWS rows each (more
        # rows, finer steps: 8 levels a row). One row in a short pane (the app's ``-short``
        # breakpoint class) or while the why panel is open: the reasons matter more then.
        if self.why_open or self.screen.has_class("-short"):
            rows = 1
        else:
            rows = max(2, min(MAX_METRIC_ROWS, (container.height - self._fixed_rows()) // 3))
        return self._fixed_rows() + 3 * rows

    def set_title(self, title: Text, kind: str, cause: str | None) -> None:
        if (title.plain, title.spans, kind, cause) != (
            self.title.plain, self.title.spans, self.kind, self.cause
        ):
            self.title, self.kind, self.cause = title, kind, cause
            self._refresh_lines(0, 1)

    def set_metric(self, n: int, metric: Metric) -> None:
        old = self.metrics[n]
        if metric == old:
            return
        self.metrics[n] = metric
        rows = self.metric_rows()
        before = self._spark_rows.pop(n, None)
        after = self._sparkline(n, rows)
        if before is None or before[0] != after[0]:
            self._refresh_lines(1 + n * rows, rows)
            return
        # Only the rows whose characters changed: a steady figure's chart, or the empty top
        # rows of a low one, stay as they are (the label sits on the first row).
        for row, (was, now) in enumerate(zip(before[1], after[1], strict=True)):
            if was != now or (row == 0 and old.label != metric.label):
                self._refresh_lines(1 + n * rows + row, 1)

    def set_reading(self, reading: tuple[float | None, float | None]) -> None:
        if reading != self.reading:
            self.reading = reading
            self._refresh_lines(1 + 3 * self.metric_rows(), 1)

    def set_why_line(self, line: Text) -> None:
        if (line.plain, line.spans) != (self.why_line.plain, self.why_line.spans):
            self.why_line = line
            if not self.why_open:
                self._refresh_lines(2 + 3 * self.metric_rows(), 1)

    def set_why_open(self, value: bool) -> None:
        if value != self.why_open:
            self.why_open = value
            self._spark_rows.clear()
            self.refresh(layout=True)

    def on_resize(self) -> None:
        self._spark_rows.clear()

    def _refresh_lines(self, first: int, count: int) -> None:
        self.refresh(Region(0, first, self.size.width, count))

    # --- drawing --------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        rows = self.metric_rows()
        if y == 0:
            return self._title_line()
        if y <= 3 * rows:
            n, row = divmod(y - 1, rows)
            return self._metric_line(n, row, rows)
        if y == 1 + 3 * rows:
            return self._gauge_line()
        if y == 2 + 3 * rows and not self.why_open:
            return self.fit(self.text_segments(self.why_line, self.part_style("cardpanel--why")))
        return self.blank()

    def _title_line(self) -> Strip:
        word = f" {badge_word(self.kind, self.cause)} "
        kind = self.kind if self.kind in VERDICT_KINDS else "unknown"
        width = self.size.width
        # The badge keeps its place at the right; the title gets what is left, cut with …
        title_width = max(width - cell_len(word), 0)
        title = self.fit(self.text_segments(self.title), title_width)
        title = title.adjust_cell_length(title_width, self.base_style)
        badge = Segment(word, self.part_style(f"cardpanel--{kind}"))
        return Strip([*title, badge])

    def _metric_line(self, n: int, row: int, rows: int) -> Strip:
        metric = self.metrics[n]
        label_width = self._label_width(self.size.width)
        lines = self._sparkline(n, rows)[1]
        head = metric.label if row == 0 else ""
        return self.strip([
            (head[:label_width].ljust(label_width) + " ", None),
            (lines[row] if row < len(lines) else "", self.part_style(METRIC_PARTS[n])),
        ])

    def _label_width(self, width: int) -> int:
        # The label keeps 16 columns (``VRAM 50% 40/80G``) where it can; a wide pane gives it
        # up to ``label_width``; the sparkline gets the rest.
        return min(self.label_width, max(width * 2 // 5, min(16, width)))

    def _sparkline(self, n: int, rows: int) -> tuple[tuple[int, int], list[str]]:
        """((width, rows), the rows) of metric ``n``'s chart at the current size, cached."""
        spark_width = max(self.size.width - self._label_width(self.size.width) - 1, 0)
        cached = self._spark_rows.get(n)
        if cached is None or cached[0] != (spark_width, rows):
            metric = self.metrics[n]
            cached = ((spark_width, rows), spark_rows(metric.values, spark_width, rows, metric.top))
            self._spark_rows[n] = cached
        return cached

    def _gauge_line(self) -> Strip:
        label, filled, empty = gauge_text(*self.reading, self.size.width)
        style = self.part_style("cardpanel--gauge")
        return self.fit(self.strip_parts([
            (label, style),
            (" " if filled or empty else "", style),
            (filled, style + _BOLD),
            (empty, style + _DIM),
        ]))


def verdict_text(verdict: Verdict | None) -> Text:
    """The why and the advice, as literal text (the verdict engine may quote tool output)."""
    text = Text(no_wrap=False)
    if verdict is None:
        text.append("No verdict yet: waiting for enough frames.")
        return text
    text.append("Why\n", style="bold")
    for line in verdict.why or ["(no figures given)"]:
        text.append("  • ")
        text.append(clean(line, 400))
        text.append("\n")
    text.append("Advice\n", style="bold")
    for line in verdict.advice or ["(none)"]:
        text.append("  • ")
        text.append(clean(line, 400))
        text.append("\n")
    text.rstrip()
    return text


class CardDetail(Vertical):
    """The selected card in full: its figures (`CardPanel`) and, one key away, why and advice."""

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.panel = CardPanel(id="card-panel")
        self.why = WrappedText(id="why")

    def compose(self) -> ComposeResult:
        yield self.panel
        yield self.why

    def set_why_open(self, value: bool) -> None:
        self.why.display = value
        self.set_class(value, "-why-open")
        self.panel.set_why_open(value)
        self.why._key = object()  # redraw the panel when it opens

    def show(
        self, card: CardReading | None, verdict: Verdict | None, history: CardHistory | None
    ) -> None:
        panel = self.panel
        if card is None:
            panel.set_title(Text("Waiting for the first frame…"), "unknown", None)
            return
        # Figures before the name: in a narrow pane it is the name that gets cut, not the temp.
        title = literal(f"{card.id} ", style="bold")
        title.append(f"{fmt(card.temp_c, '°C')} ")
        if card.stale_s is not None:
            title.append(f"stale {card.stale_s:.0f} s", style="reverse")
            title.append(" ")
        title.append_text(literal(card.name or "unnamed card", limit=60))
        panel.set_title(
            title, verdict.kind if verdict else "unknown", verdict.cause if verdict else None
        )
        hist = history or CardHistory()
        panel.set_metric(0, Metric(f"{util_label(card)} {fmt(card.util_pct, '%')}",
                                   tuple(hist.util)))
        mem = f"VRAM {fmt(card.mem_pct, '%')}"
        if card.mem_used_mib is not None and card.mem_total_mib:
            mem += f" {card.mem_used_mib / 1024:.0f}/{card.mem_total_mib / 1024:.0f}G"
        panel.set_metric(1, Metric(mem, tuple(hist.mem)))
        frac = card.power_frac
        power = f"Power {fmt(100 * frac if frac is not None else None, '%')}"
        if frac is None and card.power_w is not None:
            power = f"Power {card.power_w:.0f} W"
        # Without a cap the power line is in watts, scaled to its own peak.
        top = 100.0 if frac is not None else max([v for v in hist.power if v] or [1.0])
        panel.set_metric(2, Metric(power, tuple(hist.power), top))
        panel.set_reading((card.power_w, card.power_cap_w))
        if self.why.display:
            self.why.show(verdict, verdict_text(verdict))
        else:
            # The first reason stays in view; the rest and the advice are one key away.
            first = verdict.why[0] if verdict and verdict.why else ""
            line = literal(first, limit=120)
            if first:
                line.append("  (w: why & advice)", style="dim")
            panel.set_why_line(line)
