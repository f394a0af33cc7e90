"""The status line's facts, read off the source: what it is, its interval, where a replay
stands, and whether frames stopped coming.

Read with ``getattr``, never by the source's class: live, replay, recording wrappers, the
fleet and tests' sources all say what they can. Cost: a source that misspells an attribute
shows nothing for it rather than failing.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusat_tui.model import Frame
from gpusat_tui.sources import FrameSource, replay_controls
from gpusat_tui.text import clean
from gpusat_tui.ui.widgets.status import StatusInfo, status_from_frame


def mmss(seconds: float | None) -> str:
    """``1:05`` or ``1:02:05``; ``?`` where unknown."""
    if seconds is None:
        return "?"
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def source_label(source: FrameSource | None, paused: bool) -> str:
    """``replay demo.jsonl 0:58/1:38 at 1x PAUSED``: the source's own label, a replay's place."""
    if source is None:
        return "no source"
    label = clean(getattr(source, "label", "source"), 80)
    replay = replay_controls(source)
    if replay is not None:
        label += f" {mmss(replay.position)}/{mmss(replay.duration)} at {replay.speed:g}x"
    if paused:
        label += " PAUSED"
    return label


def source_interval(source: FrameSource | None, given: float | None) -> float | None:
    """Seconds between frames: the one given, else the recording's or the source's own."""
    if given is not None:
        return given
    header = getattr(source, "header", None)
    interval: float | None = getattr(header, "interval_s", None) or getattr(
        source, "interval", None)
    return interval


def replay_end(source: FrameSource | None) -> str | None:
    """What a replay at the end of its file says (a wait there is not a hang)."""
    if getattr(source, "at_end", False) is not True:
        return None
    if getattr(source, "follow", False):
        return "caught up: waiting for the recorder's next frame"
    return "end of recording"


@dataclass(frozen=True)
class SourceWatch:
    """What the app knows of its source besides the source itself."""

    source: FrameSource | None
    interval: float | None
    paused: bool
    #: Why the source ended (None: it runs).
    ended: str | None
    #: When the newest frame arrived, else when the app started.
    since: float


def quiet_s(watch: SourceWatch, now: float) -> float | None:
    """Seconds without a frame, when that is far longer than the interval (a hung source)."""
    if watch.paused or watch.ended or watch.source is None or replay_end(watch.source):
        return None
    interval = source_interval(watch.source, watch.interval) or 1.0
    quiet = now - watch.since
    return quiet if quiet > max(3 * interval, 3.0) else None


def status_info(
    watch: SourceWatch, frame: Frame | None, own_cpu_pct: float | None, now: float
) -> StatusInfo:
    """Everything the status line shows now."""
    stale, errors = status_from_frame(frame)
    return StatusInfo(
        source=source_label(watch.source, watch.paused),
        interval_s=source_interval(watch.source, watch.interval),
        own_cpu_pct=own_cpu_pct,
        quiet_s=quiet_s(watch, now),
        stale=stale,
        errors=errors,
        skipped=int(getattr(watch.source, "skipped", 0) or 0),
        ended=watch.ended or replay_end(watch.source),
    )
