"""Every card at once: one compact block per card with its utilisation and power history.

``▸ 3  61°C  VRAM 50% 40/80G  NVIDIA H100…   SATURATED``
``GPU-Util  87% ▁▂▃▅▇███▇▆▅▃▂▁▁▂▃▅▇███``
``SM 38%        ▁▂▃▅▇███▇▆▅▃▂▁▁▂▃▅▇███``
``Power    54% ┈┈┈┈┈┈┈┈┈┈┈┈┈┈┈┈┈┈┈┈┈┈``
``of cap        ▃▄▄▅▅▅▄▄▃▃▃▃▄▄▅▅▅▄▄▃▃``

The blocks are laid out in a grid chosen for the pane (`grid_layout`): as wide as it can while
each chart keeps a few rows, so 8 cards fit in 100×30 and show a minute or more each in
160×50. One `PlannedLines` widget draws the whole grid (one repaint per poll, not one per
block); the arrow keys move the selection across the blocks, a click selects one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from rich.cells import cell_len
from textual.events import Click
from textual.message import Message

from gpusat_tui.model import VERDICT_KINDS, CardReading, Verdict, VerdictKind
from gpusat_tui.text import clean
from gpusat_tui.ui.state import CardHistory
from gpusat_tui.ui.text import fmt
from gpusat_tui.ui.widgets.badge import badge_word
from gpusat_tui.ui.widgets.cards import host_tag, util_label
from gpusat_tui.ui.widgets.cell_text import cut
from gpusat_tui.ui.widgets.charts import gpm_text, throttle_reasons
from gpusat_tui.ui.widgets.panel import POWER_TOP_PCT
from gpusat_tui.ui.widgets.planned_lines import Line, PlannedLines
from gpusat_tui.ui.widgets.spark import sweep_rows

#: Columns of a block's labels (``GPU-Util 100% ``); the chart takes the rest of the block.
LABEL_W = 14
#: The fewest chart columns (polls) a block may show and still be worth the overview.
MIN_CHART_W = 16
#: Past these, a block's chart gains little from more rows (4 per chart) or more columns
#: (a minute and a half at 1 Hz): the layout then weighs the other way.
USEFUL_CHART_ROWS = 8
USEFUL_CHART_W = 90
#: The most utilisation and power chart rows a block draws. Every such row repaints every
#: poll (the history scrolls by a column): in 240x70, blocks of 12 chart rows measured 15.5 ms
#: of CPU a second against 11.2 for the previous dashboard, so past 4 rows per chart a taller
#: block gives its height to a VRAM chart instead: VRAM held steady (the usual case) draws
#: the same rows poll after poll, which costs nothing to repaint.
MAX_BLOCK_CHART_ROWS = 8
#: The most rows of a block's VRAM chart (drawn only in the height the other two leave).
MAX_VRAM_ROWS = 8

#: Verdict words as a block's header shows them.
_WORDS = {kind: f" {badge_word(kind, short=True)} " for kind in VERDICT_KINDS}


class GridLayout(NamedTuple):
    """Blocks ``cols`` wide and ``rows`` high in all, ``width``×``height`` cells each; only
    ``visible`` block rows fit (the rest scroll with the selection)."""

    cols: int
    rows: int
    width: int
    height: int
    visible: int

    @property
    def chart_width(self) -> int:
        return max(self.width - LABEL_W, 0)

    @property
    def chart_rows(self) -> int:
        """Chart rows of a block: all but the header (and a spacer line in a tall block), at
        most `MAX_BLOCK_CHART_ROWS`."""
        return min(max(self.height - 1 - (1 if self.height >= 7 else 0), 0),
                   MAX_BLOCK_CHART_ROWS)


def grid_layout(n: int, width: int, height: int) -> GridLayout:
    """The grid for ``n`` cards in ``width``×``height`` cells (pure, for tests).

    Scores each column count by chart cells per block, counting at most `USEFUL_CHART_ROWS`
    rows and `USEFUL_CHART_W` columns (so neither thin strips nor tall narrow blocks win); a
    grid that has to scroll scores far lower.
    """
    n = max(n, 1)
    best: tuple[float, GridLayout] | None = None
    for cols in range(1, n + 1):
        rows = math.ceil(n / cols)
        block_w = (width + 1) // cols - 1
        block_h = max(height // rows, 3)
        visible = max(min(rows, height // block_h), 1)
        layout = GridLayout(cols, rows, block_w, block_h, visible)
        if layout.chart_width < 1:
            continue
        score: float = min(layout.chart_width, USEFUL_CHART_W) * min(layout.chart_rows,
                                                                     USEFUL_CHART_ROWS)
        if layout.chart_width < MIN_CHART_W:
            score /= 8
        if visible < rows:
            score /= 4
        if best is None or score > best[0]:
            best = (score, layout)
    if best is None:
        return GridLayout(1, n, max(width, 0), 3, max(height // 3, 1))
    return best[1]


def overview_fits(n: int, width: int, height: int) -> bool:
    """Whether the overview is worth showing by default: several cards, none scrolled away,
    each with charts of at least 2 rows and `MIN_CHART_W` polls."""
    if n < 2:
        return False
    layout = grid_layout(n, width, height)
    return (layout.visible >= layout.rows and layout.chart_rows >= 2
            and layout.chart_width >= MIN_CHART_W)


@dataclass(frozen=True)
class Block:
    """One card's block: what it shows, so an unchanged card costs nothing."""

    card_id: str
    head: str
    kind: VerdictKind
    util_label: str
    util_extra: str
    util: tuple[float | None, ...]
    power_label: str
    power_extra: str
    power: tuple[float | None, ...]
    power_top: float
    power_mark: float | None
    mem_label: str = ""
    mem: tuple[float | None, ...] = ()
    #: Points ever added to the card's history: where the sweep's newest column is.
    pushed: int = 0


def block_for(card: CardReading, verdict: Verdict | None, history: CardHistory | None,
              *, tag: str = "") -> Block:
    hist = history or CardHistory()
    kind = verdict.kind if verdict and verdict.kind in VERDICT_KINDS else "unknown"
    if card.host:  # the fleet view: blocks of many hosts would all read 0, 1, 2...
        tag = f"{host_tag(card.host).rstrip()} {tag}"
    head = f"{tag}{card.index:>2}  {fmt(card.temp_c, '°C')}  VRAM {fmt(card.mem_pct, '%')}"
    if card.mem_used_mib is not None and card.mem_total_mib:
        head += f" {card.mem_used_mib / 1024:.0f}/{card.mem_total_mib / 1024:.0f}G"
    if card.stale_s is not None:
        head += f"  stale {card.stale_s:.0f} s"
    head += f"  {clean(card.name or '', 60)}"
    frac = card.power_frac
    throttled = throttle_reasons(card.extras)
    if frac is not None:
        power_label, power_top, mark = f"Power {100 * frac:.0f}%", POWER_TOP_PCT, 100.0
        power_extra = "of cap"
    else:
        power_label, mark = f"Power {fmt(card.power_w, 'W')}", None
        power_top = max([v for v in hist.power if v] or [1.0])
        power_extra = "no cap"
    if throttled:
        power_extra = f"thr {throttled[0]}"
    return Block(
        card_id=card.id,
        head=head,
        kind=kind,
        util_label=f"{util_label(card)} {fmt(card.util_pct, '%')}",
        util_extra=gpm_text(card.extras, limit=1),
        util=tuple(hist.util),
        power_label=power_label,
        power_extra=power_extra,
        power=tuple(hist.power),
        power_top=power_top,
        power_mark=mark,
        mem_label=f"VRAM {fmt(card.mem_pct, '%')}",
        mem=tuple(hist.mem),
        pushed=max(hist.pushed, len(hist.util)),
    )


class CardGrid(PlannedLines):
    """The overview: every card's block, the selected one's header highlighted."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "cardgrid--header", "cardgrid--selected", "cardgrid--label", "cardgrid--util",
        "cardgrid--power", "cardgrid--mem", *(f"cardgrid--{kind}" for kind in VERDICT_KINDS),
    }

    class Selected(Message):
        """The user clicked a card's block (``open``: a double click)."""

        def __init__(self, card_id: str, open: bool = False) -> None:
            super().__init__()
            self.card_id = card_id
            self.open = open

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.blocks: tuple[Block, ...] = ()
        self.selected: str | None = None
        self._first_row = 0

    @property
    def layout_now(self) -> GridLayout:
        return grid_layout(len(self.blocks), self.size.width, self.size.height)

    def show(self, blocks: tuple[Block, ...], selected: str | None) -> None:
        if (blocks, selected) != (self.blocks, self.selected):
            self.blocks, self.selected = blocks, selected
            self.replan()

    def _selected_index(self) -> int:
        return next((i for i, b in enumerate(self.blocks) if b.card_id == self.selected), 0)

    def _rows_shown(self, layout: GridLayout) -> range:
        """Which block rows are on screen, keeping the selected one in view."""
        row = self._selected_index() // layout.cols
        if row < self._first_row:
            self._first_row = row
        elif row >= self._first_row + layout.visible:
            self._first_row = row - layout.visible + 1
        self._first_row = max(min(self._first_row, layout.rows - layout.visible), 0)
        return range(self._first_row, self._first_row + layout.visible)

    def plan(self, width: int, height: int) -> list[Line]:
        if not self.blocks or width <= 0 or height <= 0:
            return []
        layout = grid_layout(len(self.blocks), width, height)
        lines: list[Line] = []
        for block_row in self._rows_shown(layout):
            drawn = [
                self.block_lines(self.blocks[i], layout)
                for i in range(block_row * layout.cols,
                               min((block_row + 1) * layout.cols, len(self.blocks)))
            ]
            for y in range(layout.height):
                line: list[tuple[str, str]] = []
                for n, block in enumerate(drawn):
                    if n:
                        line.append((" ", ""))
                    line.extend(block[y])
                lines.append(tuple(line))
        return lines

    def block_lines(self, block: Block, layout: GridLayout) -> list[Line]:
        """One block's lines, exactly ``layout.width`` wide and ``layout.height`` high."""
        width, chart_w = layout.width, layout.chart_width
        selected = block.card_id == self.selected
        word = _WORDS.get(block.kind, " UNKNOWN ")
        head_w = max(width - cell_len(word), 0)
        marker = "▸" if selected else " "
        head_part = "cardgrid--selected" if selected else "cardgrid--header"
        lines: list[Line] = [(
            (cut(marker + block.head, head_w), head_part),
            (word[:width], f"cardgrid--{block.kind}"),
        )]
        rows = layout.chart_rows
        util_rows = max(1, math.ceil(rows / 2))
        power_rows = max(rows - util_rows, 0)
        charts = [
            (block.util_label, block.util_extra, block.util, 100.0, None, util_rows,
             "cardgrid--util"),
            (block.power_label, block.power_extra, block.power, block.power_top,
             block.power_mark, power_rows, "cardgrid--power"),
        ]
        # A tall block's height past the two charts (less its spacer line) shows VRAM.
        spacer = 1 if layout.height >= 7 else 0
        mem_rows = min(layout.height - 1 - rows - spacer, MAX_VRAM_ROWS)
        charts.append((block.mem_label, "", block.mem, 100.0, None, mem_rows, "cardgrid--mem"))
        for label, extra, values, top, mark, n_rows, part in charts:
            if n_rows <= 0 or chart_w <= 0:
                continue
            labels = [label, extra]
            rows_drawn = sweep_rows(values, block.pushed, chart_w, n_rows, top, mark)
            for row, text in enumerate(rows_drawn):
                head = labels[row] if row < len(labels) else ""
                lines.append(((cut(head, LABEL_W - 1) + " ", "cardgrid--label"),
                              (text, part)))
        blank: Line = ((" " * width, ""),)
        while len(lines) < layout.height:
            lines.append(blank)
        return lines[:layout.height]

    def on_click(self, event: Click) -> None:
        if not self.blocks:
            return
        layout = self.layout_now
        col = event.x // (layout.width + 1)
        row = self._first_row + event.y // layout.height
        index = row * layout.cols + col
        if 0 <= col < layout.cols and 0 <= index < len(self.blocks):
            self.post_message(self.Selected(self.blocks[index].card_id, open=event.chain >= 2))
