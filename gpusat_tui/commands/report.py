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

import math
import os
import shutil
import sys
from pathlib import Path
from typing import IO

from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.commands.check_report import (
    CheckBuilder,
)
from gpusat_tui.commands.options import ReportOptions
from gpusat_tui.commands.report_text import render_text
from gpusat_tui.commands.session_report import (
    Runs,
    SessionReport,
    Timeline,
)
from gpusat_tui.errors import RecordingError
from gpusat_tui.model import Assessment, Frame, RecordingHeader
from gpusat_tui.output import emit, say
from gpusat_tui.sources.recording.codec import stream_size
from gpusat_tui.sources.recording.poll_order import PollOrder
from gpusat_tui.sources.recording.reader import (
    FrameReader,
    RecordingPaths,
    last_frame,
    read_recording,
)

__all__ = ["EXACT_CARD_POLLS", "MAX_WINDOWS", "analyse", "run_report"]

#: Up to this many (polls x cards), every poll is judged with the live tracker.
EXACT_CARD_POLLS = 2400
#: Above that, at most this many sampled windows are judged.
MAX_WINDOWS = 96
#: A gap between polls counts as at most this many intervals of the verdict before it.
GAP_INTERVALS = 3.0
#: A stretch is explained by the verdict this many polls before its end (see `Runs`).
EXPLAIN_LAG_POLLS = 4


def _figures(frame: Frame, t0: float, timeline: Timeline) -> None:
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
        timeline = Timeline(bins=max(1, bins), span_s=span)
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
    path: Path, header: RecordingHeader, reader: FrameReader, first: Frame, timeline: Timeline
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
    timeline: Timeline,
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


def run_report(options: ReportOptions) -> int:
    """Entry point of ``gpusat-tui report``: 0 on success, 1 when the file cannot be reported.

    Output that cannot be written raises `OutputFailed` (74 or 141: see `gpusat_tui.output`).
    """
    try:
        report = analyse(list(options.files))
    except RecordingError as exc:
        say("gpusat-tui report", exc)
        return 1
    for note in report.loss_notes:
        say("gpusat-tui report", f"warning: {note}")
    if options.json:
        emit(report.to_json().model_dump_json())
        return 0
    width = options.width or shutil.get_terminal_size((100, 24)).columns
    try:
        tty = sys.stdout is not None and sys.stdout.isatty()
    except (ValueError, OSError):
        tty = False
    color = tty and "NO_COLOR" not in os.environ
    emit(render_text(report, width=min(max(40, width - 1), 1000), color=color))
    return 0
