"""Replay recordings: a `ReplaySource` with pause, speed and seek (reading: `sources.reader`).

Safety: a recording is data only (see `sources.reader`); replay never runs a vendor tool or
looks at a process. Bad lines, overlong lines, clock steps and non-regular files are the
reader's business: they are skipped and counted or refused there, and ``notes`` says so.

Large files: nothing is held but the current line. Seeking bisects on offsets in the
recording's text (for a compressed file `codec` decompresses one block per step), reading one
line at each step (Frames are time-ordered), so a seek in a 24 h
recording reads ~20 lines, and memory stays independent of the file's length. The duration is
read lazily from the file's tail.

Following (``follow=True``): at the end, instead of stopping, the source looks every
`FOLLOW_POLL_S` for lines a live recorder appended (plain or compressed) or for its next
rotated part, and plays them as they come.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusat_tui.errors import RecordingError
from gpusat_tui.model import Frame
from gpusat_tui.sources.recording.block_index import part_path
from gpusat_tui.sources.recording.codec import parts_stream, refresh_stream, stream_size
from gpusat_tui.sources.recording.poll_order import PollOrder
from gpusat_tui.sources.recording.reader import (
    RecordingPaths,
    last_frame,
    read_line,
    read_recording,
)

# The reading names stay importable from here (callers written before the split).
__all__ = [
    "SPEEDS",
    "ReplaySource",
]

#: Speed steps for the ``+`` / ``-`` keys.
SPEEDS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: A gap in the recording longer than this many intervals (suspend, a stopped job) is replayed
#: as this long: nobody wants to stare at a frozen screen for an hour.
MAX_GAP_INTERVALS = 5.0
#: Below this many bytes, a seek scans lines instead of bisecting further.
_SCAN_BYTES = 64 * 1024
#: Following a live recording: how often to look for new lines.
FOLLOW_POLL_S = 0.5
#: Where the clock steps back, a frame is placed this many intervals at most after the one
#: before (as `report` does: its ``GAP_INTERVALS``).
STEP_BACK_INTERVALS = 3.0


@dataclass(frozen=True)
class _Tail:
    """The last frame's time and poll number (for the duration)."""

    t: float
    seq: int


def _time(frame: Frame) -> float:
    return frame.t


def _seq(frame: Frame) -> float:
    return float(frame.seq)


class ReplaySource:
    """A `FrameSource` that plays a recording back at its recorded pace, times ``speed``.

    Controls (called by the UI between frames; they take effect at once, even mid-wait):
    `toggle_pause`, `speed` (settable; `speed_up` / `slow_down` step through `SPEEDS`),
    `seek` (seconds, +/-), `jump_start`, `jump_end`. ``position`` and ``duration`` are seconds
    from the first frame. After a seek, ``generation`` goes up: a consumer keeping a window of
    frames (the verdict tracker) should reset it when it sees a new generation.

    With ``realtime=False`` frames come as fast as they can be read (pause still holds). At the
    end of the file, frames() ends, unless ``hold_at_end`` (default: ``realtime``) keeps it
    waiting for a seek back or `aclose`, so a replay in the UI can still be rewound.
    """

    def __init__(
        self,
        path: RecordingPaths,
        speed: float = 1.0,
        realtime: bool = True,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        *,
        hold_at_end: bool | None = None,
        check_unknown: bool = True,
        follow: bool = False,
        follow_poll_s: float = FOLLOW_POLL_S,
    ) -> None:
        self.header, self._reader = read_recording(
            path, check_unknown=check_unknown, with_parts=follow
        )
        self.path = self._reader.path
        #: Keep reading what a live recorder appends (and its next rotated parts).
        self.follow = follow
        self._reader.follow = follow
        self._follow_poll_s = follow_poll_s
        self._data_start = self._reader.tell()
        self.realtime = realtime
        self.hold_at_end = realtime if hold_at_end is None else hold_at_end
        self._sleep = sleep
        self._clock = clock
        self._wake: asyncio.Event | None = None
        self._speed = 1.0
        self.speed = speed
        self.paused = False
        self.at_end = False
        self.generation = 0
        self._closed = False
        self._seek_target: float | None = None
        self._current: Frame | None = None
        # The first frame is read now: it fixes t0 for position/seek, and a file whose frames
        # are all bad is known at once.
        self._pending: Frame | None = self._reader.read_frame()
        self._t0 = self._pending.t if self._pending is not None else None
        self._seq0 = self._pending.seq if self._pending is not None else 0
        self._tail_cache: tuple[int, _Tail | None] = (-1, None)
        interval = self.header.interval_s or 1.0
        self._interval = interval
        self._max_gap = MAX_GAP_INTERVALS * max(interval, 1.0)
        #: Where the recorded clock steps back, frames are played in seq order, placed and
        #: paced as `report` places them (one interval per poll after the frame before).
        self._order = PollOrder(STEP_BACK_INTERVALS)

    # -- what the status line shows ---------------------------------------------------------
    @property
    def label(self) -> str:
        parts = len(self.paths)
        name = self.path.name if parts < 2 else f"{self.path.name} (+{parts - 1} parts)"
        return f"following {name}" if self.follow else f"replay {name}"

    @property
    def paths(self) -> list[Path]:
        """The files of the session (more appear while following a rotating recorder)."""
        if self._reader.closed:
            return [self.path]
        stream = parts_stream(self._reader.fh)
        return list(stream.paths) if stream is not None else [self.path]

    @property
    def skipped(self) -> int:
        """Bad lines, and stretches of a compressed file that could not be read."""
        return self._reader.skipped + self._reader.stream_lost

    @property
    def reasons(self) -> list[str]:
        return self._reader.reasons

    @property
    def notes(self) -> list[str]:
        return self._reader.notes

    @property
    def unknown_fields(self) -> set[str]:
        return self._reader.unknown_fields

    @property
    def current(self) -> Frame | None:
        """The frame most recently yielded."""
        return self._current

    @property
    def position(self) -> float:
        """Seconds from the first frame to the frame on screen (or to a pending seek)."""
        if self._seek_target is not None:
            return self._seek_target
        if self._current is None or self._t0 is None:
            return 0.0
        return max(0.0, self._current.t - self._t0)

    @property
    def duration(self) -> float:
        """Seconds from the first to the last good frame (read from the file's tail).

        Where the clock stepped back, from the poll count (``seq``), as `report` measures it;
        never less than the position already played.
        """
        last = self._last()
        if last is None or self._t0 is None:
            return 0.0
        if self._clock_stepped(last):
            span = max(0, last.seq - self._seq0) * self._interval
        else:
            span = last.t - self._t0
        played = self._current.t - self._t0 if self._current is not None else 0.0
        return max(0.0, span, played)

    def _clock_stepped(self, last: _Tail | None = None) -> bool:
        """Whether the recorded clock went back (seen so far, or between first and last)."""
        if self._order.stepped or self._reader.steps_back:
            return True
        last = last or self._last()
        return last is not None and self._t0 is not None and last.t < self._t0

    def _last(self) -> _Tail | None:
        try:
            fh = self._reader.fh
            refresh_stream(fh)  # the file may still be growing
            size = stream_size(fh)
        except (OSError, RecordingError):
            return self._tail_cache[1]
        if size == self._tail_cache[0]:
            return self._tail_cache[1]
        frame = last_frame(fh, self._data_start, size)
        self._tail_cache = (size, None if frame is None else _Tail(frame.t, frame.seq))
        return self._tail_cache[1]

    # -- controls ---------------------------------------------------------------------------
    @property
    def speed(self) -> float:
        return self._speed

    @speed.setter
    def speed(self, value: float) -> None:
        if not value > 0:
            raise ValueError(f"speed must be > 0, got {value!r}")
        self._speed = min(max(float(value), SPEEDS[0]), SPEEDS[-1])
        self._poke()

    def speed_up(self) -> float:
        """Next step in `SPEEDS` (the ``+`` key)."""
        self.speed = next((s for s in SPEEDS if s > self._speed + 1e-9), SPEEDS[-1])
        return self._speed

    def slow_down(self) -> float:
        """Previous step in `SPEEDS` (the ``-`` key)."""
        self.speed = next((s for s in reversed(SPEEDS) if s < self._speed - 1e-9), SPEEDS[0])
        return self._speed

    def toggle_pause(self) -> bool:
        """Pause or resume; returns the new ``paused``."""
        self.paused = not self.paused
        self._poke()
        return self.paused

    def seek(self, delta_s: float) -> None:
        """Move the replay by ``delta_s`` seconds of recording (negative: back), clamped."""
        self._seek_to(self.position + delta_s)

    def jump_start(self) -> None:
        self._seek_to(0.0)

    def jump_end(self) -> None:
        self._seek_to(self.duration)

    def _seek_to(self, target: float) -> None:
        if self._t0 is None:
            return
        self._seek_target = min(max(0.0, target), self.duration)
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    # -- seeking ---------------------------------------------------------------------------
    def _line_start_at_or_after(self, pos: int) -> int:
        if pos <= self._data_start:
            return self._data_start
        fh = self._reader.fh
        fh.seek(pos - 1)
        read_line(fh)  # the rest of the line that holds byte pos-1 (just "\n" at a boundary)
        return fh.tell()

    def _frame_at(self, start: int, end: int) -> tuple[Frame, int] | None:
        """First good frame whose line starts in [start, end), with its line start."""
        fh = self._reader.fh
        fh.seek(start)
        while fh.tell() < end:
            offset = fh.tell()
            line, too_long = read_line(fh)
            if too_long:
                continue
            if not line:
                return None
            try:
                return Frame.model_validate_json(line), offset
            except ValueError:
                continue  # bad lines are counted when the reader gets to them
        return None

    def _offset_for(self, target: float, key: Callable[[Frame], float] = _time) -> int:
        """Byte offset of the first line whose frame has ``key >= target`` (bisect on bytes);
        ``key`` is the frame's ``t``, or its ``seq`` where the clock stepped back."""
        size = stream_size(self._reader.fh)
        lo, hi = self._data_start, size
        while hi - lo > _SCAN_BYTES:
            mid = (lo + hi) // 2
            start = self._line_start_at_or_after(mid)
            found = self._frame_at(start, hi) if start < hi else None
            if found is None:
                hi = mid
                continue
            frame, offset = found
            if key(frame) < target:
                lo = self._reader.fh.tell()  # the line after it
            else:
                hi = offset
        # Linear scan of the last stretch.
        fh = self._reader.fh
        fh.seek(lo)
        best = lo
        while True:
            offset = fh.tell()
            line, too_long = read_line(fh)
            if too_long:
                best = fh.tell()
                continue
            if not line:
                return best
            try:
                if key(Frame.model_validate_json(line)) >= target:
                    return offset
            except ValueError:
                continue
            best = fh.tell()

    def _do_seek(self) -> None:
        target = self._seek_target
        if target is None or self._t0 is None:
            return
        if self._clock_stepped():
            # Recorded times do not sort: go by poll count, and place what follows from there.
            offset = self._offset_for(self._seq0 + target / self._interval - 1e-6, _seq)
            self._order.restart(anchor=self._t0 + target)
        else:
            offset = self._offset_for(self._t0 + target - 1e-6)
            self._order.restart()
        self._reader.seek(offset)
        self._pending = None
        self._seek_target = None
        self.generation += 1

    # -- the stream --------------------------------------------------------------------------
    async def _nap(self, seconds: float | None) -> None:
        """Sleep ``seconds`` (None: until poked), but wake at once on any control change."""
        assert self._wake is not None
        waker = asyncio.ensure_future(self._wake.wait())
        tasks: set[asyncio.Future[Any]] = {waker}
        if seconds is not None:
            tasks.add(asyncio.ensure_future(self._sleep(seconds)))
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()

    async def _wait(self, recorded_s: float) -> bool:
        """Wait ``recorded_s`` seconds of recording at the current speed, honouring pause.

        Returns False when a seek or close interrupted the wait.
        """
        assert self._wake is not None
        remaining = min(max(0.0, recorded_s), self._max_gap)
        last = self._clock()
        while True:
            self._wake.clear()
            if self._closed or self._seek_target is not None:
                return False
            if self.paused:
                await self._nap(None)
                last = self._clock()
                continue
            if remaining <= 0 or not self.realtime:
                return True
            await self._nap(remaining / self._speed)
            now = self._clock()
            remaining -= (now - last) * self._speed
            last = now

    def _next(self) -> Frame | None:
        if self._pending is not None:
            frame, self._pending = self._pending, None
            return frame
        if self._reader.closed:
            return None
        return self._reader.read_frame()

    async def frames(self) -> AsyncGenerator[Frame, None]:
        """Yield frames at recorded pace / speed; controls act between and during waits."""
        self._wake = asyncio.Event()
        prev_t: float | None = None
        while not self._closed:
            if self._seek_target is not None:
                self._do_seek()
                prev_t = None  # the frame sought to is shown at once, even when paused
            frame = self._next()
            if frame is None and self.follow and not self._reader.closed:
                self.at_end = True
                await self._await_growth()
                prev_t = None  # caught up with the recorder: show what it adds as it comes
                continue
            if frame is None:
                self.at_end = True
                if not self.hold_at_end or self._t0 is None:  # no frame at all: nothing to seek
                    return
                self._wake.clear()
                while not self._closed and self._seek_target is None:
                    await self._nap(None)
                    self._wake.clear()
                continue
            self.at_end = False
            frame = self._order.place(frame, self._interval)
            if prev_t is not None and not await self._wait(frame.t - prev_t):
                if self._closed:
                    return
                continue  # a seek came in while waiting: this frame is dropped
            prev_t = frame.t
            if self._t0 is None:  # following a recording that had no frame yet
                self._t0 = frame.t
            self._current = frame
            yield frame

    async def _await_growth(self) -> None:
        """Following: wait until the recorder appended a line or started its next part."""
        assert self._wake is not None
        while not self._closed and self._seek_target is None:
            self._wake.clear()
            if refresh_stream(self._reader.fh) or self._next_part():
                return
            await self._nap(self._follow_poll_s)

    def _next_part(self) -> bool:
        """Add the recorder's next rotated part once it exists; True if one was added."""
        stream = parts_stream(self._reader.fh)
        paths = stream.paths if stream is not None else None
        if stream is None or not paths:
            return False
        candidate = part_path(paths[0], len(paths))
        if not candidate.exists():
            return False
        try:
            stream.add_part(candidate)
        except RecordingError:
            return False  # not readable yet (its header is being written): next time
        return True

    async def aclose(self) -> None:
        """Stop the stream and close the file."""
        self._closed = True
        self._poke()
        self._reader.close()
