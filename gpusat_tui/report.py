"""``gpusat-tui report FILE.jsonl``: what a recorded session was doing, re-judged from raw figures.

Headless (never imports Textual). Per card: time spent in each verdict, util / power / VRAM
timelines drawn with plotext, the worst stretches with their why and advice; ``--json`` gives the
same per-card figures in the ``check --json`` shape plus ``verdict_share`` (fraction of the
session per verdict kind) per card and for the job. The text is written by `report_text`.

How a session is judged depends on its size, because judging is the costly part (the verdict
engine spends ~1 ms per card per poll on a 30 s window):

* **every poll** (small recordings: up to `EXACT_CARD_POLLS` card-polls, e.g. 40 min of one
  card, 5 min of eight): frames go through `VerdictTracker` one by one exactly as in the live
  UI, hysteresis included, so the report says what the badge said. Each verdict holds from its
  poll to the next one (a gap is counted as at most `GAP_INTERVALS` intervals).
* **sampled windows** (larger recordings): the file is cut into at most `MAX_WINDOWS` equal
  byte ranges; at the start of each, one verdict window (``window_s`` seconds of consecutive
  polls) is read and judged with the pure `judge`, and its verdict stands for the whole range,
  up to the next window. The rest of the file is never parsed, so a 24 h, 8-card recording
  (~1 GB) is reported in about a second in constant memory. The cost: a stretch shorter than
  a range (24 h / 96 = 15 min) can be missed or over-counted, and figures (mean/min/max) come
  from the sampled windows (``last`` from the file's last frame). The JSON says which way it
  was judged (``judged``).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict, Field

from gpusat_tui.analysis.tracker import VerdictTracker
from gpusat_tui.analysis.verdict import judge
from gpusat_tui.check_report import (
    CheckBuilder,
    CheckCard,
    CheckReport,
    CheckVerdict,
    overall_verdict,
)
from gpusat_tui.errors import RecordingError
from gpusat_tui.model import VERDICT_KINDS, Assessment, Frame, RecordingHeader, Verdict
from gpusat_tui.output import emit, say
from gpusat_tui.report_text import render_text
from gpusat_tui.sources.codec import stream_size
from gpusat_tui.sources.poll_order import PollOrder
from gpusat_tui.sources.reader import FrameReader, RecordingPaths, last_frame, read_recording

__all__ = [
    "EXACT_CARD_POLLS",
    "MAX_WINDOWS",
    "ReportCard",
    "ReportJSON",
    "SessionReport",
    "Stretch",
    "analyse",
    "render_text",
    "run_report",
]

#: Up to this many (polls x cards), every poll is judged with the live tracker.
EXACT_CARD_POLLS = 2400
#: Above that, at most this many sampled windows are judged.
MAX_WINDOWS = 96
#: A gap between polls counts as at most this many intervals of the verdict before it.
GAP_INTERVALS = 3.0
#: A stretch is explained by the verdict this many polls before its end (see `Runs`).
EXPLAIN_LAG_POLLS = 4
#: Kinds that make a stretch "worst" (idle and unknown are not a training problem).
BAD_KINDS: tuple[str, ...] = ("starving", "fragmenting", "imbalanced", "stalled")
JOB_ID = "job"
#: Chart values (percentages) outside ±this are skipped, not drawn (plotext overflows on 1e308).
CHART_LIMIT = 1000.0


# --- JSON shape: check's, plus verdict_share ---------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Stretch(_Out):
    """A run of one verdict: seconds from the session start, with what the engine said."""

    kind: str
    cause: str | None = None
    start_s: float
    end_s: float
    why: list[str] = Field(default_factory=list)
    advice: list[str] = Field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s


class ReportCard(CheckCard):
    """`check`'s card, plus where its time went. ``verdict`` is the verdict it spent most
    time in (not ``unknown`` if it had any other), with the why/advice of its longest run."""

    verdict_share: dict[str, float] = Field(default_factory=dict)
    worst: list[Stretch] = Field(default_factory=list)


class ReportJSON(CheckReport):
    """The one JSON object ``report --json`` prints (`CheckReport` plus the session's shares)."""

    cards: list[ReportCard] = Field(default_factory=list)  # type: ignore[assignment]
    #: Fraction of the session per kind of the job verdict (all cards together).
    verdict_share: dict[str, float] = Field(default_factory=dict)
    job_worst: list[Stretch] = Field(default_factory=list)
    file: str
    #: "every poll" or "N sampled windows of W s" (see the module docstring).
    judged: str
    skipped_lines: int = 0
    #: What reading the file found: bad lines, damaged compressed blocks, a file that ended
    #: early, a clock that went back (the text report's notes about the file).
    file_notes: list[str] = Field(default_factory=list)
    header: RecordingHeader


# --- analysis ----------------------------------------------------------------------------------


@dataclass
class Runs:
    """Time per kind and the runs of equal verdicts of one card (or the job).

    A run's why/advice are those of the verdict ``lag`` polls before its end: the tracker's
    evidence window grows through a run (so late is better than early), but its very last
    polls already hold some of the next state, which the hysteresis has not shown yet.
    """

    lag: int = 0
    seconds: Counter[str] = field(default_factory=Counter)
    runs: list[Stretch] = field(default_factory=list)
    _recent: deque[Verdict] = field(default_factory=deque)

    def add(self, verdict: Verdict, start: float, end: float) -> None:
        span = max(0.0, end - start)
        self.seconds[verdict.kind] += span
        last = self.runs[-1] if self.runs else None
        if last is not None and (last.kind, last.cause) == (verdict.kind, verdict.cause) and (
            abs(last.end_s - start) < 1e-6
        ):
            self._recent.append(verdict)
            if len(self._recent) > self.lag + 1:
                self._recent.popleft()
            told = self._recent[0]
            self.runs[-1] = last.model_copy(
                update={"end_s": end, "why": list(told.why), "advice": list(told.advice)}
            )
        else:
            self._recent = deque([verdict])
            self.runs.append(
                Stretch(kind=verdict.kind, cause=verdict.cause, start_s=start, end_s=end,
                        why=list(verdict.why), advice=list(verdict.advice))
            )

    def share(self) -> dict[str, float]:
        total = sum(self.seconds.values())
        if total <= 0:
            return {}
        return {k: round(self.seconds[k] / total, 4) for k in VERDICT_KINDS if self.seconds[k]}

    def dominant(self) -> str:
        known = {k: s for k, s in self.seconds.items() if k != "unknown" and s > 0}
        pool = known or dict(self.seconds)
        if not pool:
            return "unknown"
        return max(pool, key=lambda k: (pool[k], -VERDICT_KINDS.index(k)))  # type: ignore[arg-type]

    def longest(self, kind: str) -> Stretch | None:
        runs = [r for r in self.runs if r.kind == kind]
        return max(runs, key=lambda r: r.seconds) if runs else None

    def worst(self, n: int = 3) -> list[Stretch]:
        bad = [r for r in self.runs if r.kind in BAD_KINDS and r.seconds > 0]
        return sorted(bad, key=lambda r: (-r.seconds, r.start_s))[:n]


@dataclass
class _Timeline:
    """Per card, figures averaged into fixed time bins (for the charts)."""

    bins: int
    span_s: float
    sums: dict[str, list[list[float]]] = field(default_factory=dict)

    FIELDS = ("util", "power", "vram")

    def add(self, card_id: str, rel_t: float, util: float | None, power: float | None,
            vram: float | None) -> None:
        if card_id not in self.sums:
            self.sums[card_id] = [[0.0, 0.0] * 3 for _ in range(self.bins)]
        b = min(self.bins - 1, max(0, int(rel_t / self.span_s * self.bins))) if self.span_s else 0
        row = self.sums[card_id][b]
        for i, value in enumerate((util, power, vram)):
            # Charted as % (of 100, of the cap): anything far outside is not a figure, and
            # summing 1e308s would overflow to inf.
            if value is not None and math.isfinite(value) and -CHART_LIMIT <= value <= CHART_LIMIT:
                row[2 * i] += value
                row[2 * i + 1] += 1

    def series(self, card_id: str) -> tuple[list[float], dict[str, list[float | None]]]:
        """Bin centres (seconds) and, per field, the bin means (None where no figure)."""
        rows = self.sums.get(card_id, [])
        width = self.span_s / self.bins if self.bins else 0.0
        xs = [(i + 0.5) * width for i in range(len(rows))]
        out: dict[str, list[float | None]] = {}
        for i, name in enumerate(self.FIELDS):
            out[name] = [r[2 * i] / r[2 * i + 1] if r[2 * i + 1] else None for r in rows]
        return xs, out


@dataclass
class SessionReport:
    """Everything `render_text` and the JSON need, gathered in one pass."""

    path: Path
    header: RecordingHeader
    builder: CheckBuilder
    judged: str
    duration_s: float
    samples: int
    cards: dict[str, Runs]
    job: Runs
    timeline: _Timeline
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    #: Data the file layer could not read (damaged compressed blocks, a cut end): also on stderr.
    loss_notes: list[str] = field(default_factory=list)

    def to_json(self) -> ReportJSON:
        base = self.builder.report(self.duration_s)
        cards: list[ReportCard] = []
        for card in base.cards:
            runs = self.cards.get(card.id, Runs())
            kind = runs.dominant()
            longest = runs.longest(kind)
            verdict = CheckVerdict(
                kind=kind,
                cause=longest.cause if longest else None,
                why=list(longest.why) if longest else [],
                advice=list(longest.advice) if longest else [],
            )
            data = card.model_dump(exclude={"verdict"})
            cards.append(
                ReportCard(**data, verdict=verdict, verdict_share=runs.share(),
                           worst=runs.worst())
            )
        overall = overall_verdict([c.verdict.kind for c in cards], self.job.dominant())
        dump = base.model_dump(exclude={"cards", "verdict", "samples"})
        return ReportJSON(
            **dump,
            samples=self.samples,
            cards=cards,
            verdict=overall,
            verdict_share=self.job.share(),
            job_worst=self.job.worst(),
            file=str(self.path),
            judged=self.judged,
            skipped_lines=self.skipped,
            file_notes=list(self.notes),
            header=self.header,
        )


def _figures(frame: Frame, t0: float, timeline: _Timeline) -> None:
    rel = frame.t - t0
    for card in frame.cards:
        if card.stale_s is not None:
            continue
        frac = card.power_frac
        timeline.add(card.id, rel, card.util_pct, None if frac is None else 100.0 * frac,
                     card.mem_pct)


def _count_lines(fh: IO[bytes], start: int) -> int:
    """Non-empty lines from ``start``: a fast byte count, no parsing."""
    count = 0
    last = b"\n"
    fh.seek(start)
    while chunk := fh.read(8 * 1024 * 1024):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (0 if last == b"\n" else 1)


def _span(header: RecordingHeader, first: Frame, last: Frame) -> float:
    """Seconds from the first to the last frame; from their ``seq`` when the clock says less
    than nothing (it was stepped back during the recording)."""
    if last.t >= first.t:
        return last.t - first.t
    return max(0, last.seq - first.seq) * _interval(header, first, None)


def _interval(header: RecordingHeader, first: Frame, second: Frame | None) -> float:
    if header.interval_s and header.interval_s > 0:
        return header.interval_s
    if second is not None and second.t > first.t:
        return second.t - first.t
    return 1.0


def analyse(
    path: RecordingPaths,
    *,
    window_s: float = 30.0,
    bins: int = 100,
    exact_card_polls: int = EXACT_CARD_POLLS,
    max_windows: int = MAX_WINDOWS,
) -> SessionReport:
    """Read and judge a recording (see the module docstring for the two ways)."""
    header, reader = read_recording(path, check_unknown=False)
    path = reader.path
    with reader:
        data_start = reader.tell()
        first = reader.read_frame()
        if first is None:
            raise RecordingError(f"{path} has a header but no frames: nothing to report")
        first_offset = reader.last_offset
        first_len = max(1, reader.tell() - first_offset)
        last = last_frame(reader.fh, data_start) or first
        size = stream_size(reader.fh)
        est_polls = max(1, (size - first_offset) // first_len)
        n_cards = max(1, len(first.cards))
        span = _span(header, first, last)
        timeline = _Timeline(bins=max(1, bins), span_s=span)
        if est_polls * n_cards <= exact_card_polls:
            # Small file: also note fields this version does not know (newer writer).
            reader.check_unknown = True
            report = _analyse_exact(path, header, reader, first, timeline)
        else:
            report = _analyse_windows(
                path, header, reader, first, last, timeline, data_start, window_s,
                max_windows,
            )
        # A damaged or cut-off stretch of a compressed file counts like a bad line.
        report.skipped = reader.skipped + reader.stream_lost
        report.notes = reader.notes
        report.loss_notes = report.notes[: len(reader.stream_notes)]  # they come first
    return report


def _analyse_exact(
    path: Path, header: RecordingHeader, reader: FrameReader, first: Frame, timeline: _Timeline
) -> SessionReport:
    tracker = VerdictTracker(window_s=30.0)
    builder = CheckBuilder()
    cards: dict[str, Runs] = {}
    job = Runs(lag=EXPLAIN_LAG_POLLS)
    t0 = first.t
    prev: tuple[Frame, Assessment] | None = None
    interval: float | None = header.interval_s if header.interval_s else None

    def credit(frame: Frame, assessment: Assessment, end: float) -> None:
        start = frame.t - t0
        for card_id, verdict in assessment.cards.items():
            cards.setdefault(card_id, Runs(lag=EXPLAIN_LAG_POLLS)).add(verdict, start, end)
        job.add(assessment.job, start, end)

    frame: Frame | None = first
    samples = 0
    # Where the recorded clock steps back, frames are placed by their poll order instead
    # (`PollOrder`, as replay does): durations never go negative and the tracker's time window
    # stays whole.
    order = PollOrder(GAP_INTERVALS)
    while frame is not None:
        samples += 1
        frame = order.place(frame, interval or 1.0)
        assessment = tracker.push(frame)
        builder.add(frame, assessment)
        _figures(frame, t0, timeline)
        if prev is not None:
            if interval is None:
                interval = max(1e-3, frame.t - prev[0].t)
            gap = min(max(0.0, frame.t - prev[0].t), GAP_INTERVALS * interval)
            credit(prev[0], prev[1], prev[0].t - t0 + gap)
        prev = (frame, assessment)
        frame = reader.read_frame()
    assert prev is not None
    credit(prev[0], prev[1], prev[0].t - t0 + (interval or 1.0))
    duration = prev[0].t - t0 + (interval or 1.0)
    return SessionReport(
        path=path, header=header, builder=builder, judged="every poll",
        duration_s=duration, samples=samples, cards=cards, job=job, timeline=timeline,
    )


def _analyse_windows(
    path: Path,
    header: RecordingHeader,
    reader: FrameReader,
    first: Frame,
    last: Frame,
    timeline: _Timeline,
    data_start: int,
    window_s: float,
    max_windows: int,
) -> SessionReport:
    builder = CheckBuilder()
    cards: dict[str, Runs] = {}
    job = Runs()
    t0 = first.t
    fh = reader.fh
    size = stream_size(fh)
    span = _span(header, first, last)
    interval = _interval(header, first, None)
    # A window ends after window_s seconds, or after this many polls if the clock went back.
    max_polls = int(window_s / interval) * 2 + 10
    n_windows = max(1, min(max_windows, math.ceil(span / window_s) if window_s > 0 else 1))
    starts: list[tuple[float, Assessment]] = []
    for k in range(n_windows):
        offset = data_start + (size - data_start) * k // n_windows
        if offset > data_start:
            fh.seek(offset - 1)
            fh.readline()  # move to the next line start
        else:
            fh.seek(data_start)
        reader.line_no = None
        window: list[Frame] = []
        while True:
            frame = reader.read_frame()
            if frame is None or (window and frame.t - window[0].t >= window_s):
                break
            window.append(frame)
            if len(window) >= max_polls:
                break
        if not window:
            continue
        if starts and window[0].t - t0 <= starts[-1][0]:
            continue  # windows overlap (a long gap, or few lines): already judged
        assessment = judge(window)
        for frame in window:
            builder.add(frame, assessment)
            _figures(frame, t0, timeline)
        starts.append((window[0].t - t0 if k else 0.0, assessment))
    if last.t > (starts[-1][0] + t0 if starts else t0):
        builder.add(last)
    end_of_session = span + interval
    for i, (start, assessment) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else end_of_session
        for card_id, verdict in assessment.cards.items():
            cards.setdefault(card_id, Runs()).add(verdict, start, end)
        job.add(assessment.job, start, end)
    if last.seq > first.seq:
        # The poll counter says how many polls the session made: no need to count ~1 GB of
        # lines (0.3 s). Bad lines that were read are not samples.
        samples = last.seq - first.seq + 1 - reader.skipped
    else:  # no usable counter (files joined, or an old writer): count the lines
        samples = _count_lines(fh, data_start) - reader.skipped
    return SessionReport(
        path=path, header=header, builder=builder,
        judged=f"{len(starts)} sampled windows of {window_s:g} s",
        duration_s=end_of_session, samples=samples, cards=cards, job=job, timeline=timeline,
    )


def run_report(args: argparse.Namespace) -> int:
    """Entry point of ``gpusat-tui report``: 0 on success, 1 when the file cannot be reported.

    Output that cannot be written raises `OutputFailed` (74 or 141: see `gpusat_tui.output`).
    """
    try:
        report = analyse(args.file)
    except RecordingError as exc:
        say("gpusat-tui report", exc)
        return 1
    for note in report.loss_notes:
        say("gpusat-tui report", f"warning: {note}")
    if args.json:
        emit(report.to_json().model_dump_json())
        return 0
    width = args.width or shutil.get_terminal_size((100, 24)).columns
    try:
        tty = sys.stdout is not None and sys.stdout.isatty()
    except (ValueError, OSError):
        tty = False
    color = tty and "NO_COLOR" not in os.environ
    emit(render_text(report, width=min(max(40, width - 1), 1000), color=color))
    return 0
