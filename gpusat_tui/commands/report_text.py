"""``gpusat-tui report``'s text: the header, each card's time in verdict, figures, a plotext chart
and its worst stretches, the trainers' probe figures and the tool errors.

Apart from `report` (which judges the recording and builds the JSON) so that the judging can be
read and tested without the drawing. Every line but the charts' goes through `clean_block`: the
charts carry plotext's colour codes, and their text comes only from numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime

from gpusat_tui.analysis.verdicts.probe_only import NO_TOOL_LINE
from gpusat_tui.commands.job_lines import energy_line, job_words, total_energy_line
from gpusat_tui.commands.probe_lines import probe_line, probe_who, stack_lines
from gpusat_tui.commands.session_report import Runs, SessionReport, Stretch
from gpusat_tui.text import clean, clean_block

__all__ = ["render_text"]


def _dur(seconds: float) -> str:
    seconds = max(0, round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h} h {m:02d} min"
    if m:
        return f"{m} min {s:02d} s"
    return f"{s} s"


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _share_line(runs: Runs) -> str:
    share = runs.share()
    parts = [
        f"{kind} {100 * frac:.0f} % ({_dur(runs.seconds[kind])})"
        for kind, frac in sorted(share.items(), key=lambda kv: -kv[1])
    ]
    return " · ".join(parts) if parts else "no verdict"


def _chart(xs: Sequence[float], series: dict[str, list[float | None]], width: int,
           color: bool, span_s: float) -> str:
    """util / power / VRAM (all in % of their maximum) against time, one plotext chart.

    The legend is a line of its own (plotext's sits on top of the data). Without colour each
    series is drawn with its own letter, so the chart still reads in a log file.
    """
    import plotext as plt

    unit, scale = ("hours", 3600.0) if span_s >= 3 * 3600 else (
        ("minutes", 60.0) if span_s >= 180 else ("seconds", 1.0))
    plt.clf()
    plt.plotsize(max(30, width), 12)
    plt.theme("pro" if color else "clear")
    styles = {"util": ("util %", "green", "u"), "power": ("power % of cap", "orange", "p"),
              "vram": ("VRAM %", "cyan", "v")}
    legend: list[str] = []
    for name, values in series.items():
        # Clamped to the chart's 0-100 (a card can draw a little over its cap).
        pts = [
            (x / scale, min(100.0, max(0.0, v)))
            for x, v in zip(xs, values, strict=False)
            if v is not None and math.isfinite(v) and math.isfinite(x / scale)
        ]
        if not pts:
            continue
        label, colour, mark = styles[name]
        px, py = zip(*pts, strict=True)
        if color:
            plt.plot(list(px), list(py), color=colour, marker="braille")
            legend.append(f"{colour}: {label}")
        else:
            plt.plot(list(px), list(py), marker=mark)
            legend.append(f"{mark} = {label}")
    if not legend:
        return "  (no figures to draw)"
    plt.ylim(0, 100)
    plt.xlabel(unit + " since start")
    text: str = plt.build()
    chart = text if color else plt.uncolorize(text)
    return "      " + " · ".join(legend) + "\n" + chart


def render_text(report: SessionReport, *, width: int = 100, color: bool = False) -> str:
    """The human report: header, job shares, then per card shares, figures, chart, stretches."""
    data = report.to_json()
    hdr = report.header
    tools = ", ".join(
        f"{clean(t, 40)} {clean(v, 40)}" if v else clean(t, 40) for t, v in hdr.tools.items()
    ) or "no tool named"
    when = _when(hdr.started_at)
    lines = [
        f"gpusat-tui report: {clean(report.path.name, 120)} — {len(data.cards)} card"
        f"{'s' if len(data.cards) != 1 else ''}, {report.samples} polls over "
        f"{_dur(report.duration_s)}",
        f"recorded on {clean(hdr.host, 80) or 'an unnamed host'} at {when} with {tools}"
        f" (gpusat-tui {clean(hdr.gpusat_tui_version, 40)}, every {hdr.interval_s or '?'} s)",
        f"judged: {report.judged}",
    ]
    lines += [f"note: {clean(note, 500)}" for note in report.notes]
    lines += ["", f"Job: {_share_line(report.job)}  →  overall: {data.verdict}"]
    lines += [f"  job {job_words(job)}" for job in data.jobs]
    if data.cards:
        lines.append(f"  energy of all cards: {total_energy_line(data.cards)}")
    else:  # the verdicts stood on the probes and the host: the job's stretches are all there is
        lines.append(f"  {NO_TOOL_LINE}")
    if len(data.cards) != 1:  # with one card the job's stretches are the card's
        if not data.job_worst:
            lines.append("  worst stretches: none (never starving, fragmenting, imbalanced or "
                         "stalled)")
        for stretch in data.job_worst:
            lines += _stretch_lines(stretch)
    # Every line but the charts' goes through clean_block as well (charts carry colour codes).
    out = [clean_block("\n".join(lines))]
    for card in data.cards:
        runs = report.cards.get(card.id)
        part = [
            "",
            f"── {clean(card.id, 40)} {clean(card.name or '', 60)} ".ljust(width, "─"),
            f"time in verdict: {_share_line(runs) if runs is not None else 'no verdict'}",
            f"util % {_stats(card.util_pct)} · power W {_stats(card.power_w)}"
            + (f" of {card.power_cap_w:.0f}" if card.power_cap_w else "")
            + f" · VRAM % {_stats(card.mem_pct)} · temp °C {_stats(card.temp_c)}",
            f"energy: {energy_line(card.energy)}",
        ]
        out.append(clean_block("\n".join(part)))
        xs, series = report.timeline.series(card.id)
        out.append(_chart(xs, series, width, color, report.timeline.span_s))
        part = []
        worst = card.worst
        if worst:
            part.append("worst stretches:")
            for stretch in worst:
                part += _stretch_lines(stretch)
        else:
            part.append(
                "worst stretches: none (never starving, fragmenting, imbalanced or stalled)"
            )
        out.append(clean_block("\n".join(part)))
    probed = [p for p in data.processes if p.probe is not None]
    if probed:  # what the probe measured inside each trainer
        part = ["", "Trainers (measured in the trainer by its probe, means over the session):"]
        for p in probed:
            if p.probe is not None:
                part.append(f"  {probe_who(p.pid, p.probe)}: {probe_line(p.probe)}")
                part += [f"    {line}" for line in stack_lines(p.probe)]
        out.append(clean_block("\n".join(part)))
    if data.errors:
        part = ["", "Tool errors:"]
        part += [
            f"  [{clean(e.kind, 20)}] {clean(e.message, 500)} ({e.count} polls)"
            for e in data.errors
        ]
        out.append(clean_block("\n".join(part)))
    return "\n".join(out)


def _when(started_at: float | None) -> str:
    if not started_at:
        return "unknown time"
    try:
        return datetime.fromtimestamp(started_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, OSError, ValueError):  # a header from a hostile or broken writer
        return "an impossible time"


def _stats(stats: object) -> str:
    mean, lo, hi = (getattr(stats, k) for k in ("mean", "min", "max"))
    if mean is None:
        return "–"
    return f"{mean:.0f} ({lo:.0f}–{hi:.0f})"


def _stretch_lines(stretch: Stretch) -> list[str]:
    kind = stretch.kind + (f" ({stretch.cause})" if stretch.cause else "")
    out = [
        f"  {_clock(stretch.start_s)}–{_clock(stretch.end_s)}  {kind}, {_dur(stretch.seconds)}"
    ]
    # The no-tool line is said once, under the job (every stretch of such a recording has it).
    out += [f"      why: {clean(why, 500)}" for why in stretch.why if why != NO_TOOL_LINE]
    out += [f"      try: {clean(advice, 500)}" for advice in stretch.advice]
    return out
