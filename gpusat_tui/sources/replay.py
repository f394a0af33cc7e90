"""Read recordings back: a streaming reader and a `ReplaySource` with pause, speed and seek.

Safety: a recording is data only. Every line goes through pydantic (``Frame``); nothing in a
file is ever executed, imported or passed to a shell, and replay never runs a vendor tool or
looks at a process.

Tolerance: the header decides whether a file is readable at all (`read_recording` raises
`RecordingError` with one clear message for an empty file, a missing header or a newer
``schema_version``). After that, bad lines never stop a replay: a truncated last line (the
recording was killed mid-write), a line that is not JSON or not a Frame, or a second header is
skipped and counted, with a reason. Unknown fields (written by a newer gpusat-tui of the same
schema) are ignored by the models (``extra="ignore"``); the reader loads the frame and notes the
field names and how many lines carried them.

Bounded reads: the header may be at most `MAX_HEADER_BYTES` and any other line at most
`MAX_LINE_BYTES`; a longer line is skipped (read through in chunks, never held) and counted, so an
endless stream without newlines cannot fill memory. Only regular files are read: a FIFO, a
character device (``/dev/zero``) or a socket is refused with one message, and the file is opened
non-blocking, so an ``open()`` never waits on a writer that does not come.

Clock steps: frames are replayed in file order, which is the recording's own ``seq`` order. A
frame whose ``t`` is earlier than the one before it (the host's clock was stepped back) is counted
in ``steps_back`` and said once in ``notes``; `report` places such frames by their poll order.

Large files: nothing is held but the current line. Seeking does not build an index: it bisects
on byte offsets, reading one line at each step (Frames are time-ordered), so a seek in a 24 h
recording reads ~20 lines, and memory stays independent of the file's length. The duration is
read lazily from the file's tail.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO

import pydantic_core
from pydantic import ValidationError

from gpusat_tui import __version__
from gpusat_tui.errors import RecordingError
from gpusat_tui.model import (
    SCHEMA_VERSION,
    CardProcess,
    CardReading,
    Frame,
    HostSample,
    ProcessSample,
    RecordingHeader,
    ToolError,
)
from gpusat_tui.sources.closing import ClosedOnExit

__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_LINE_BYTES",
    "SPEEDS",
    "FrameReader",
    "ReplaySource",
    "last_frame",
    "open_recording_file",
    "parse_header",
    "read_line",
    "read_recording",
]

#: Speed steps for the ``+`` / ``-`` keys.
SPEEDS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: Reasons kept for display; the count goes on.
MAX_REASONS = 50
#: A gap in the recording longer than this many intervals (suspend, a stopped job) is replayed
#: as this long: nobody wants to stare at a frozen screen for an hour.
MAX_GAP_INTERVALS = 5.0
#: The longest header line read (a real one is well under 1 KiB).
MAX_HEADER_BYTES = 64 * 1024
#: The longest frame line read; longer lines are skipped and counted. A frame of 8 cards is
#: ~10 KiB; one with a thousand processes and every tool's raw output ~1 MiB.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: The most of a file's end read when looking for its last frame.
_MAX_TAIL_BYTES = 64 * 1024 * 1024
#: Below this many bytes, a seek scans lines instead of bisecting further.
_SCAN_BYTES = 64 * 1024
#: How much of the file's end to read first when looking for the last frame.
_TAIL_BYTES = 256 * 1024

_NESTED: dict[str, type] = {
    "cards": CardReading,
    "card_processes": CardProcess,
    "processes": ProcessSample,
    "host": HostSample,
    "errors": ToolError,
}


def read_line(
    fh: IO[bytes], limit: int | None = None, *, skip_rest: bool = True
) -> tuple[bytes, bool]:
    """One line of at most ``limit`` bytes: ``(line, too_long)``.

    A longer line is read through to its end in chunks (never held; not at all with
    ``skip_rest=False``), and ``(b"", True)`` is returned with the file positioned after it.
    ``(b"", False)`` is the end of the file.
    """
    if limit is None:
        limit = MAX_LINE_BYTES
    line = fh.readline(limit + 1)
    if len(line) <= limit or line.endswith(b"\n"):
        return line, False
    if not skip_rest:
        return b"", True
    # Only up to the file's size now: a writer that keeps growing the line cannot keep the
    # reader chasing it (the rest, read later, is one more bad line).
    try:
        end = os.fstat(fh.fileno()).st_size
    except (OSError, ValueError, AttributeError):
        end = None
    while end is None or fh.tell() < end:
        chunk = fh.readline(1 << 20)
        if not chunk or chunk.endswith(b"\n"):
            break
    return b"", True


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s >= 10 else f"{s:.3g} s"


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / 1024:g} KiB"


def last_frame(fh: IO[bytes], data_start: int, size: int | None = None) -> Frame | None:
    """The last good frame of a recording, read from its tail (cheap on any size).

    Reads the last 256 KiB first, then four times more each round, up to `_MAX_TAIL_BYTES`: a
    file whose end is one endless line does not get read whole into memory.
    """
    if size is None:
        size = os.fstat(fh.fileno()).st_size
    span = _TAIL_BYTES
    while True:
        start = max(data_start, size - span)
        fh.seek(start)
        pieces = fh.read(size - start).split(b"\n")
        if start > data_start:
            pieces = pieces[1:]  # the first piece may be the end of a longer line
        for line in reversed(pieces):
            if line.strip() and len(line) <= MAX_LINE_BYTES:
                try:
                    return Frame.model_validate_json(line)
                except ValueError:
                    continue
        if start <= data_start or span >= _MAX_TAIL_BYTES:
            return None
        span *= 4


def _unknown_keys(obj: dict[str, object]) -> list[str]:
    """Field names in a Frame's JSON that this version's models do not know ("cards[].foo")."""
    unknown = [key for key in obj if key not in Frame.model_fields]
    for key, model in _NESTED.items():
        value = obj.get(key)
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                suffix = "[]" if isinstance(value, list) else ""
                unknown.extend(
                    f"{key}{suffix}.{k}" for k in item if k not in model.model_fields  # type: ignore[attr-defined]
                )
    return unknown


def _first_error(exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in err["loc"]) or "line"
    return f"{loc}: {err['msg']}"


def parse_header(
    path: Path, first: bytes, too_long: bool = False
) -> tuple[RecordingHeader, list[str]]:
    """Refuse, with one message, anything that is not a header we can read."""
    if too_long:
        raise RecordingError(
            f"{path} is not a gpusat-tui recording: its first line is longer than "
            f"{MAX_HEADER_BYTES // 1024} KiB (a header is a few hundred bytes)"
        )
    if not first.strip():
        raise RecordingError(
            f"{path} is empty: no header and no frames "
            "(was the recording stopped before it started?)"
        )
    try:
        obj = pydantic_core.from_json(first.strip())
    except ValueError:
        raise RecordingError(
            f"{path} is not a gpusat-tui recording: its first line is not JSON "
            "(expected a header line)"
        ) from None
    if not isinstance(obj, dict) or obj.get("type") != "header":
        if isinstance(obj, dict) and "t" in obj:
            raise RecordingError(
                f"{path} has no header line (its first line is a frame): "
                "refusing to guess its format"
            )
        raise RecordingError(
            f"{path} is not a gpusat-tui recording: its first line is not a header"
        )
    version = obj.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RecordingError(f"{path}: header has no valid schema_version ({version!r})")
    if version > SCHEMA_VERSION:
        raise RecordingError(
            f"{path} was written with recording schema_version {version}; this gpusat-tui "
            f"({__version__}) reads up to {SCHEMA_VERSION}: upgrade gpusat-tui to read it"
        )
    try:
        header = RecordingHeader.model_validate(obj)
    except ValidationError as exc:
        raise RecordingError(f"{path}: header is invalid ({_first_error(exc)})") from None
    unknown = [f"header.{k}" for k in obj if k not in RecordingHeader.model_fields]
    return header, unknown


class FrameReader(ClosedOnExit):
    """Iterate a recording's Frames one line at a time, skipping and counting bad lines.

    ``skipped`` counts bad lines, ``reasons`` says why (the first `MAX_REASONS`),
    ``unknown_fields`` names fields this version ignored and ``unknown_lines`` counts the lines
    that carried them. ``check_unknown=False`` skips that check (a little faster: `report`
    uses it for the bulk of a long file).
    """

    def __init__(
        self,
        fh: IO[bytes],
        path: Path,
        *,
        line_no: int | None = 1,
        check_unknown: bool = True,
    ) -> None:
        self._fh: IO[bytes] | None = fh
        self.path = path
        #: Line number of the last line read, or None after a seek (unknown).
        self.line_no = line_no
        self.check_unknown = check_unknown
        self.skipped = 0
        self.reasons: list[str] = []
        self.unknown_fields: set[str] = set()
        self.unknown_lines = 0
        self._bad_offsets: set[int] = set()
        #: Byte offset where the last returned frame's line started.
        self.last_offset = 0
        #: Frames whose ``t`` went back from the frame before (clock stepped back), and the
        #: largest step in seconds. Counted in file order; reset by a seek.
        self.steps_back = 0
        self.largest_step_back = 0.0
        self._last_t: float | None = None
        self._back_offsets: set[int] = set()

    # -- position --------------------------------------------------------------------------
    @property
    def fh(self) -> IO[bytes]:
        if self._fh is None:
            raise RecordingError(f"{self.path} is closed")
        return self._fh

    def tell(self) -> int:
        return self.fh.tell()

    def seek(self, offset: int) -> None:
        """Go to a line start; line numbers are unknown from here on."""
        self.fh.seek(offset)
        self.line_no = None
        self._last_t = None  # the frame before is not known: no step back can be judged

    # -- reading ---------------------------------------------------------------------------
    def _skip(self, offset: int, reason: str) -> None:
        if offset in self._bad_offsets:  # seen before a backward seek: count once
            return
        if len(self._bad_offsets) < 100_000:
            self._bad_offsets.add(offset)
        self.skipped += 1
        if len(self.reasons) < MAX_REASONS:
            where = f"line {self.line_no}" if self.line_no is not None else f"byte {offset}"
            self.reasons.append(f"{where}: {reason}")

    def parse_line(self, line: bytes, offset: int) -> Frame | None:
        """One line -> Frame, or None (counted) when it is not a usable frame."""
        text = line.strip()
        if not text:
            return None  # a blank line carries nothing; not worth a warning
        truncated = not line.endswith(b"\n")
        try:
            if self.check_unknown:
                obj = pydantic_core.from_json(text)
                if isinstance(obj, dict) and obj.get("type") == "header":
                    self._skip(offset, "a second header (recordings concatenated?): skipped")
                    return None
                frame = Frame.model_validate(obj)
                if isinstance(obj, dict):
                    unknown = _unknown_keys(obj)
                    if unknown:
                        self.unknown_lines += 1
                        if len(self.unknown_fields) < 100:
                            self.unknown_fields.update(unknown)
            else:
                frame = Frame.model_validate_json(text)
        except ValidationError as exc:
            if truncated:
                self._skip(offset, "truncated (the recording stopped mid-write)")
            else:
                self._skip(offset, f"not a frame ({_first_error(exc)})")
            return None
        except ValueError as exc:  # pydantic_core.from_json: not JSON
            if truncated:
                self._skip(offset, "truncated (the recording stopped mid-write)")
            else:
                self._skip(offset, f"not JSON ({str(exc)[:80]})")
            return None
        return frame

    def read_frame(self) -> Frame | None:
        """The next good Frame, or None at the end of the file."""
        fh = self.fh
        while True:
            offset = fh.tell()
            line, too_long = read_line(fh)
            if too_long:
                if self.line_no is not None:
                    self.line_no += 1
                self._skip(offset, f"longer than {_size(MAX_LINE_BYTES)}: not read")
                continue
            if not line:
                return None
            if self.line_no is not None:
                self.line_no += 1
            frame = self.parse_line(line, offset)
            if frame is not None:
                self.last_offset = offset
                self._check_step(frame, offset)
                return frame

    def _check_step(self, frame: Frame, offset: int) -> None:
        last, self._last_t = self._last_t, frame.t
        if last is None or frame.t >= last or offset in self._back_offsets:
            return
        if len(self._back_offsets) < 100_000:
            self._back_offsets.add(offset)
        self.steps_back += 1
        self.largest_step_back = max(self.largest_step_back, last - frame.t)

    def __iter__(self) -> Iterator[Frame]:
        return self

    def __next__(self) -> Frame:
        frame = self.read_frame()
        if frame is None:
            self.close()
            raise StopIteration
        return frame

    # -- lifetime --------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._fh is None

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    @property
    def notes(self) -> list[str]:
        """Plain words for the status line / report about what was skipped or ignored."""
        notes: list[str] = []
        if self.skipped:
            notes.append(
                f"{self.skipped} bad line{'s' if self.skipped != 1 else ''} skipped"
                + (f" ({self.reasons[0]}" + (", ..." if self.skipped > 1 else "") + ")")
            )
        if self.unknown_fields:
            names = ", ".join(sorted(self.unknown_fields)[:5])
            notes.append(
                f"{self.unknown_lines} line{'s' if self.unknown_lines != 1 else ''} with "
                f"fields this version ignores ({names}): written by a newer gpusat-tui?"
            )
        if self.steps_back:
            notes.append(
                f"the recorded clock went back {self.steps_back} time"
                f"{'s' if self.steps_back != 1 else ''} (largest step "
                f"{_seconds(self.largest_step_back)}): frames are taken in the order they "
                "were polled (seq)"
            )
        return notes


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def open_recording_file(path: Path) -> IO[bytes]:
    """Open a recording for reading; refuse anything but a regular file, without blocking.

    ``O_NONBLOCK`` makes ``open()`` of a FIFO return at once instead of waiting for a writer;
    the file is then checked with ``fstat`` (no race with a path swapped in between) and
    refused unless it is a regular file: a stream (``/dev/zero``, a pipe) has no end to seek
    to and no tail to read a duration from.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except IsADirectoryError:
        raise RecordingError(f"{path} is a folder, not a recording") from None
    except OSError as exc:
        raise RecordingError(f"cannot open {path}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise RecordingError(
                f"{path} is {what}, not a recording file: only regular files are read"
            )
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_recording(
    path: str | os.PathLike[str], *, check_unknown: bool = True
) -> tuple[RecordingHeader, FrameReader]:
    """Open a recording: its header, and a streaming iterator of its good Frames.

    Raises `RecordingError` (one clear message) for a file that cannot be read at all. The
    iterator closes the file when exhausted; close it yourself (or use ``with``) if you stop
    early. Unknown header fields are reported in the reader's ``unknown_fields``.
    """
    path = Path(path)
    fh = open_recording_file(path)
    try:
        header, unknown = parse_header(path, *read_line(fh, MAX_HEADER_BYTES, skip_rest=False))
    except BaseException:
        fh.close()
        raise
    reader = FrameReader(fh, path, line_no=1, check_unknown=check_unknown)
    reader.unknown_fields.update(unknown)
    return header, reader


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
        path: str | os.PathLike[str],
        speed: float = 1.0,
        realtime: bool = True,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        *,
        hold_at_end: bool | None = None,
        check_unknown: bool = True,
    ) -> None:
        self.path = Path(path)
        self.header, self._reader = read_recording(self.path, check_unknown=check_unknown)
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
        self._tail_cache: tuple[int, float | None] = (-1, None)
        interval = self.header.interval_s or 1.0
        self._max_gap = MAX_GAP_INTERVALS * max(interval, 1.0)

    # -- what the status line shows ---------------------------------------------------------
    @property
    def label(self) -> str:
        return f"replay {self.path.name}"

    @property
    def skipped(self) -> int:
        return self._reader.skipped

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
        """Seconds from the first to the last good frame (read from the file's tail)."""
        last = self._last_t()
        if last is None or self._t0 is None:
            return 0.0
        return max(0.0, last - self._t0)

    def _last_t(self) -> float | None:
        try:
            size = os.fstat(self._reader.fh.fileno()).st_size
        except (OSError, RecordingError):
            return self._tail_cache[1]
        if size == self._tail_cache[0]:
            return self._tail_cache[1]
        with open_recording_file(self.path) as fh:
            frame = last_frame(fh, self._data_start, size)
        last = frame.t if frame is not None else None
        self._tail_cache = (size, last)
        return last

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

    def _offset_for(self, abs_t: float) -> int:
        """Byte offset of the first line whose frame has ``t >= abs_t`` (bisect on bytes)."""
        size = os.fstat(self._reader.fh.fileno()).st_size
        lo, hi = self._data_start, size
        while hi - lo > _SCAN_BYTES:
            mid = (lo + hi) // 2
            start = self._line_start_at_or_after(mid)
            found = self._frame_at(start, hi) if start < hi else None
            if found is None:
                hi = mid
                continue
            frame, offset = found
            if frame.t < abs_t:
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
                if Frame.model_validate_json(line).t >= abs_t:
                    return offset
            except ValueError:
                continue
            best = fh.tell()

    def _do_seek(self) -> None:
        target = self._seek_target
        if target is None or self._t0 is None:
            return
        offset = self._offset_for(self._t0 + target - 1e-6)
        self._reader.seek(offset)
        self._pending = None
        self._seek_target = None
        self.generation += 1

    # -- the stream --------------------------------------------------------------------------
    async def _nap(self, seconds: float | None) -> None:
        """Sleep ``seconds`` (None: until poked), but wake at once on any control change."""
        assert self._wake is not None
        waker = asyncio.ensure_future(self._wake.wait())
        tasks: set[asyncio.Future[object]] = {waker}
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

    async def frames(self) -> AsyncIterator[Frame]:
        """Yield frames at recorded pace / speed; controls act between and during waits."""
        self._wake = asyncio.Event()
        prev_t: float | None = None
        while not self._closed:
            if self._seek_target is not None:
                self._do_seek()
                prev_t = None  # the frame sought to is shown at once, even when paused
            frame = self._next()
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
            if prev_t is not None and not await self._wait(frame.t - prev_t):
                if self._closed:
                    return
                continue  # a seek came in while waiting: this frame is dropped
            prev_t = frame.t
            self._current = frame
            yield frame

    async def aclose(self) -> None:
        """Stop the stream and close the file."""
        self._closed = True
        self._poke()
        self._reader.close()
