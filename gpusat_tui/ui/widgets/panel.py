"""The selected card in full: three charts that share the panel's height and width.

``nvidia:0 61°C NVIDIA H100 …                       SATURATED``
``GPU-Util 87% · SM 38% · tensor 22%              min 12%  max 97%``
``▁▂▃▅▇███…`` (as many rows as the panel gives)
``-2m                 -1m                  now``
then power (% of cap, the cap a dotted line) and VRAM alike, and the first reason.

One column per poll: a wider pane shows more history, not wider points. The panel is one
`PlannedLines` widget: each poll it plans its lines as text and Textual repaints only those
that changed (a steady VRAM chart costs nothing; the axes never change at a fixed size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Vertical

from gpusat_tui.analysis.energy import EnergyFigures, format_energy
from gpusat_tui.analysis.verdicts.probe_only import NO_TOOL_LINE
from gpusat_tui.model import VERDICT_KINDS, CardReading, ProbeSample, Verdict
from gpusat_tui.text import clean
from gpusat_tui.ui.state import CardHistory
from gpusat_tui.ui.text import fmt
from gpusat_tui.ui.widgets.badge import badge_word
from gpusat_tui.ui.widgets.cards import util_label
from gpusat_tui.ui.widgets.cell_text import cut, cut_at_word
from gpusat_tui.ui.widgets.charts import (
    gpm_text,
    span_min_max,
    sweep_axis,
    throttle_reasons,
)
from gpusat_tui.ui.widgets.planned_lines import Line, PlannedLines
from gpusat_tui.ui.widgets.processes import probe_row
from gpusat_tui.ui.widgets.spark import sweep_rows
from gpusat_tui.ui.widgets.why_view import WhyView

#: Between the figures of a chart's header (``GPU-Util 88% · SM 53% · tensor 26%``).
HEADER_SEP = " · "

#: Power charts are drawn to this share of the cap, so boost above the cap shows and the cap
#: itself is a line inside the chart, not its edge.
POWER_TOP_PCT = 110.0


@dataclass(frozen=True)
class Chart:
    """One chart: its header (label and figures), its points and scale.

    ``unit`` formats min/max; ``mark`` is a reference line in the values' unit (the cap).
    """

    part: str
    label: str
    extra: str = ""
    warn: str = ""
    values: tuple[float | None, ...] = ()
    top: float = 100.0
    unit: str = "%"
    mark: float | None = None


@dataclass(frozen=True)
class PanelData:
    """Everything the panel shows; equal data means nothing to repaint."""

    card_id: str = ""
    temp: str = ""
    stale: str = ""
    name: str = "Waiting for the first frame…"
    kind: str = "unknown"
    cause: str | None = None
    charts: tuple[Chart, ...] = ()
    why: str = ""
    interval_s: float | None = None
    #: The probed trainer(s) driving this card, as measured inside them ("" without a probe).
    probe: str = ""
    #: Energy since the dashboard started ("1.2 kWh", "no power figures"; "" not known yet).
    energy: str = ""
    #: Points ever added to the card's history: where the sweep's newest column is.
    pushed: int = 0


CHART_PARTS = ("cardpanel--util", "cardpanel--power", "cardpanel--mem")


def chart_layout(
    height: int, why_line: bool, extra_lines: int = 0
) -> tuple[tuple[int, int, int], bool, bool]:
    """(rows of each chart, an axis under each chart?, one shared axis?) for a panel's height.

    Fixed lines: the title, three chart headers, ``extra_lines`` (the probe's line) and (when
    the why panel is closed) the first reason. An axis under each chart once that still leaves
    each chart 2 rows; else one shared axis under the last; in a tiny pane none. Rows left
    over go to the first charts.
    """
    avail = height - 4 - extra_lines - (1 if why_line else 0)
    if avail >= 3 * 3:
        per_chart, shared = True, False
        avail -= 3
    elif avail >= 4:
        per_chart, shared = False, True
        avail -= 1
    else:
        per_chart = shared = False
    base, extra = divmod(max(avail, 3), 3)
    rows = tuple(base + (1 if n < extra else 0) for n in range(3))
    return (rows[0], rows[1], rows[2]), per_chart, shared


class CardPanel(PlannedLines):
    """The selected card's title, badge, three full-size charts and first reason."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *CHART_PARTS,
        "cardpanel--id",
        "cardpanel--stale",
        "cardpanel--head",
        "cardpanel--dim",
        "cardpanel--extra",
        "cardpanel--warn",
        "cardpanel--axis",
        "cardpanel--why",
        "cardpanel--probe",
        *(f"cardpanel--{kind}" for kind in VERDICT_KINDS),
    }

    DEFAULT_CSS = """
    CardPanel { height: 1fr; }
    """

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.data = PanelData()
        self.why_open = False

    def show(self, data: PanelData) -> None:
        if data != self.data:
            self.data = data
            self.replan()

    def set_why_open(self, value: bool) -> None:
        if value != self.why_open:
            self.why_open = value
            self.replan()

    def chart_rows(self) -> tuple[int, int, int]:
        """Rows of each chart (utilisation, power, VRAM) at the panel's current height."""
        return chart_layout(self.size.height, not self.why_open, self._extra_lines())[0]

    def _extra_lines(self) -> int:
        return 1 if self.data.probe else 0

    # --- the plan -------------------------------------------------------------------------

    def plan(self, width: int, height: int) -> list[Line]:
        data = self.data
        lines: list[Line] = [self._title(data, width)]
        if data.probe:
            lines.append(((cut(data.probe, width), "cardpanel--probe"),))
        rows, per_chart_axis, shared_axis = chart_layout(
            height, not self.why_open, self._extra_lines()
        )
        # Age ticks under the last chart only: each axis's ticks are bytes every poll (they
        # move with the sweep), and the charts above share its time scale.
        axis: Line = ((sweep_axis(width, data.interval_s, data.pushed, ticks=False),
                       "cardpanel--axis"),)
        ticked: Line = ((sweep_axis(width, data.interval_s, data.pushed), "cardpanel--axis"),)
        for n, (chart, n_rows) in enumerate(zip(data.charts, rows, strict=False)):
            lines.append(self._header(chart, width))
            for row in sweep_rows(chart.values, data.pushed, width, n_rows, chart.top,
                                  chart.mark):
                lines.append(((row, chart.part),))
            if per_chart_axis:
                lines.append(ticked if n == len(data.charts) - 1 else axis)
        if shared_axis and data.charts:
            lines.append(ticked)
        if not self.why_open and data.why:
            hint = "  (w: why & advice)"
            text = clean(data.why, 200)
            if cell_len(text) + len(hint) > width:
                lines.append(((cut_at_word(text, width), "cardpanel--why"),))
            else:
                lines.append(((text, "cardpanel--why"), (hint, "cardpanel--dim")))
        return lines

    @staticmethod
    def _title(data: PanelData, width: int) -> Line:
        kind = data.kind if data.kind in VERDICT_KINDS else "unknown"
        word = f" {badge_word(kind, data.cause)} "
        room = max(width - cell_len(word), 0)
        # Figures before the name: in a narrow pane it is the name that gets cut, not the temp.
        parts = [(f"{data.card_id} ", "cardpanel--id"), (f"{data.temp} ", "")]
        if data.energy:
            parts.append((f"{data.energy} ", "cardpanel--dim"))
        if data.stale:
            parts += [(data.stale, "cardpanel--stale"), (" ", "")]
        parts.append((data.name, ""))
        return (*fit_parts(parts, room), (word, f"cardpanel--{kind}"))

    @staticmethod
    def _header(chart: Chart, width: int) -> Line:
        # One separator between every figure of the header, as within each: a run of spaces
        # read as nothing beside a figure ("88%SM 53%", "W┈ cap").
        left: list[tuple[str, str]] = [(chart.label, "cardpanel--head")]
        for text, part in ((chart.extra, "cardpanel--extra"), (chart.warn, "cardpanel--warn")):
            if text:
                left += [(HEADER_SEP, "cardpanel--dim"), (text, part)]
        span = span_min_max(chart.values, width - 1)  # a sweep shows width - 1 points
        right = ""
        if span is not None:
            low, high = span
            right = f"min {_figure(low, chart.unit)}  max {_figure(high, chart.unit)}"
        used = sum(cell_len(text) for text, _ in left)
        if right and used + 2 + len(right) <= width:
            gap = width - used - len(right)
            return (*left, (" " * gap, ""), (right, "cardpanel--dim"))
        return tuple(fit_parts(left, width))


def _figure(value: float, unit: str) -> str:
    return f"{value:.0f}{unit}" if unit == "%" else f"{value:.0f} {unit}"


def fit_parts(parts: Sequence[tuple[str, str]], width: int) -> list[tuple[str, str]]:
    """Parts cut to ``width`` cells in all (the last one kept ending in …), then padded."""
    out: list[tuple[str, str]] = []
    left = width
    for text, part in parts:
        if left <= 0:
            break
        size = cell_len(text)
        if size > left:
            out.append((cut(text, left), part))
            left = 0
            break
        out.append((text, part))
        left -= size
    if left > 0:
        out.append((" " * left, ""))
    return out


def card_probe_text(
    probes: Sequence[ProbeSample], *, allocator: bool = False, span_s: float | None = None
) -> str:
    """The trainer that drives a card, as its probe measured it:
    ``trainer rank 1 · wait 61% · step 211 ms · 590 samples/s`` (``+1 more`` when several
    processes drive it; ``tie guessed`` where the card was only guessed from the local rank)."""
    if not probes:
        return ""
    first = probes[0]
    text = "trainer " + probe_row(first, allocator=allocator, card=False, span_s=span_s)
    if first.tie == "guess":
        text += " (card guessed from the local rank)"
    if len(probes) > 1:
        text += f" · +{len(probes) - 1} more"
    return text


def panel_data(
    card: CardReading | None,
    verdict: Verdict | None,
    history: CardHistory | None,
    interval_s: float | None,
    probes: Sequence[ProbeSample] = (),
    energy: EnergyFigures | None = None,
    span_s: float | None = None,
) -> PanelData:
    """What the panel shows for a card (pure: tests call it alone). ``probes``: the probed
    trainers tied to this card; ``energy``: the card's since the dashboard started;
    ``span_s``: the window their data wait was measured over (the why's)."""
    if card is None:
        return PanelData(interval_s=interval_s)
    hist = history or CardHistory()
    gpm = gpm_text(card.extras)
    util = Chart("cardpanel--util", f"{util_label(card)} {fmt(card.util_pct, '%')}", gpm,
                 values=tuple(hist.util))
    frac = card.power_frac
    throttled = throttle_reasons(card.extras)
    warn = f"throttled: {', '.join(throttled)}" if throttled else ""
    peak = 1.0
    if frac is not None:
        label = f"Power {100 * frac:.0f}% of cap · {card.power_w:.0f}/{card.power_cap_w:.0f} W"
    else:
        # No cap: watts, scaled to their own peak, no cap line.
        peak = max([v for v in hist.power if v] or [1.0])
        label = f"Power {fmt(card.power_w, ' W')}"
        if card.power_w is not None:
            label += " (no cap known)"
    if frac is None:
        power = Chart("cardpanel--power", label, "", warn, tuple(hist.power), peak, "W")
    else:
        power = Chart("cardpanel--power", label, "┈ cap", warn,
                      tuple(hist.power), POWER_TOP_PCT, "%", 100.0)
    mem_label = f"VRAM {fmt(card.mem_pct, '%')}"
    if card.mem_used_mib is not None and card.mem_total_mib:
        mem_label += f" · {card.mem_used_mib / 1024:.0f}/{card.mem_total_mib / 1024:.0f} GiB"
    mem = Chart("cardpanel--mem", mem_label, values=tuple(hist.mem))
    kind = verdict.kind if verdict and verdict.kind in VERDICT_KINDS else "unknown"
    return PanelData(
        card_id=clean(card.id, 40),
        temp=fmt(card.temp_c, "°C"),
        stale=f"stale {card.stale_s:.0f} s" if card.stale_s is not None else "",
        name=clean(card.name or "unnamed card", 60),
        kind=kind,
        cause=verdict.cause if verdict else None,
        charts=(util, power, mem),
        why=verdict.why[0] if verdict and verdict.why else "",
        interval_s=interval_s,
        probe=card_probe_text(probes, allocator=kind == "fragmenting", span_s=span_s),
        energy=_energy_text(energy),
        pushed=max(hist.pushed, len(hist.util)),
    )


def job_panel_data(
    verdict: Verdict, probes: Sequence[ProbeSample], interval_s: float | None,
    span_s: float | None = None,
) -> PanelData:
    """What the panel shows with no card but probed trainers (no accelerator tool): the job's
    verdict from the probes and the host, the trainers' measured figures, no chart."""
    why = [w for w in verdict.why if w.lower() != NO_TOOL_LINE]
    kind = verdict.kind if verdict.kind in VERDICT_KINDS else "unknown"
    return PanelData(
        card_id="job",
        name="no accelerator tool: figures from the job and the host only",
        kind=kind,
        cause=verdict.cause,
        why=why[0] if why else "",
        interval_s=interval_s,
        probe=card_probe_text(probes, allocator=kind == "fragmenting", span_s=span_s),
    )


def _energy_text(energy: EnergyFigures | None) -> str:
    if energy is None:
        return ""
    if energy.joules is None:
        return "no power figures"
    return f"{format_energy(energy.joules)} used"


class CardDetail(Vertical):
    """The selected card in full: its charts (`CardPanel`) and, one key away, why and advice
    (`WhyView`): while that is open the charts keep one row each and the reasons get the rest.
    """

    def __init__(self, id: str | None = None) -> None:
        super().__init__(id=id)
        self.panel = CardPanel(id="card-panel")
        self.why = WhyView(id="why")
        #: The job line's full text, shown at the top of the open why view ("" for none).
        self.job_text = ""

    def compose(self) -> ComposeResult:
        yield self.panel
        yield self.why

    def set_why_open(self, value: bool) -> None:
        self.why.display = value
        self.set_class(value, "-why-open")
        self.panel.set_why_open(value)
        self._size_panel()
        self.why.forget()  # redraw the reasons when it opens
        if value:
            self.why.scroll_home(animate=False)

    def _size_panel(self) -> None:
        # Open: title, the probe's line, each chart's header and one row of it; no chart (no
        # accelerator tool): the title and the probe's line, the rest is the reasons'.
        lines = 1 if not self.panel.data.charts else 7
        self.panel.styles.height = lines + self.panel._extra_lines() if self.why.display \
            else "1fr"

    def show(
        self,
        card: CardReading | None,
        verdict: Verdict | None,
        history: CardHistory | None,
        interval_s: float | None = None,
        probes: Sequence[ProbeSample] = (),
        energy: EnergyFigures | None = None,
        *,
        job: Verdict | None = None,
        job_text: str = "",
        span_s: float | None = None,
    ) -> None:
        """``job``: with no card (no accelerator tool), the job's verdict from its probes.
        ``job_text``: the job line's full text (that line may be cut at a word)."""
        if card is None and job is not None:
            self.panel.show(job_panel_data(job, probes, interval_s, span_s))
            if self.why.display:
                self._size_panel()
                self.why.show(job)
            return
        self.panel.show(
            panel_data(card, verdict, history, interval_s, probes, energy, span_s)
        )
        if card is not None and self.why.display:
            self._size_panel()
            self.why.show(verdict, job_text)
