"""Reading recordings: a streaming, bounded `FrameReader` and the file-level helpers.

Safety: a recording is data only. Every line goes through pydantic (``Frame``); nothing in a
file is ever executed, imported or passed to a shell.

Tolerance: the header decides whether a file is readable at all (`read_recording` raises
`RecordingError` with one clear message for an empty file, a missing header or a newer
``schema_version``). After that, bad lines never stop a reader: a truncated last line (the
recording was killed mid-write), a line that is not JSON or not a Frame, or a second header is
skipped and counted, with a reason. Unknown fields (written by a newer gpusat-tui of the same
schema) are ignored by the models (``extra="ignore"``); the reader loads the frame and notes the
field names and how many lines carried them.

Bounded reads: the header may be at most `MAX_HEADER_BYTES` and any other line at most
`MAX_LINE_BYTES`; a longer line is skipped (read through in chunks, never held) and counted, so an
endless stream without newlines cannot fill memory. Only regular files are read: a FIFO, a
character device (``/dev/zero``) or a socket is refused with one message, and the file is opened
non-blocking, so an ``open()`` never waits on a writer that does not come.

Clock steps: frames are read in file order, which is the recording's own ``seq`` order. A
frame whose ``t`` is earlier than the one before it (the host's clock was stepped back) is counted
in ``steps_back`` and said once in ``notes``; `report` places such frames by their poll order.

Formats and sessions: the bytes come through `codec`, which turns a plain, gzip or zstd file, or
the rotated parts of one session, into one seekable stream of JSONL text; offsets here are
offsets in that text.

`sources.replay` plays these frames at recorded pace; `report` reads them in bulk; the recorder
uses `parse_header` and `last_frame` to append to an existing file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import pydantic_core
from pydantic import BaseModel, ValidationError

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
from gpusat_tui.sources.recording.closing import ClosedOnExit
from gpusat_tui.sources.recording.codec import (
    open_logical,
    open_regular,
    open_stream,
    parts_stream,
    session_paths,
    stream_size,
)

__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_LINE_BYTES",
    "MAX_REASONS",
    "FrameReader",
    "last_frame",
    "open_recording_file",
    "parse_header",
    "read_line",
    "read_recording",
]

#: Reasons kept for display; the count goes on.
MAX_REASONS = 50
#: The longest header line read (a real one is well under 1 KiB).
MAX_HEADER_BYTES = 64 * 1024
#: The longest frame line read; longer lines are skipped and counted. A frame of 8 cards is
#: ~10 KiB; one with a thousand processes and every tool's raw output ~1 MiB.
MAX_LINE_BYTES = 16 * 1024 * 1024
#: How much of the file's end to read first when looking for the last frame.
_TAIL_BYTES = 256 * 1024
#: The most of a file's end read when looking for its last frame.
_MAX_TAIL_BYTES = 64 * 1024 * 1024

_NESTED: dict[str, type[BaseModel]] = {
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
        end: int | None = stream_size(fh)
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
    file whose end is one endless line does not get read whole into memory. The stream's
    position is kept, so a reader using it goes on where it was.
    """
    if size is None:
        size = stream_size(fh)
    here = fh.tell()
    span = _TAIL_BYTES
    try:
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
    finally:
        fh.seek(here)


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
                    f"{key}{suffix}.{k}" for k in item if k not in model.model_fields
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
        #: Reading a recording that is still being written (see `read_frame`).
        self.follow = False
        self._stream_notes: list[str] = []
        self._stream_lost = 0
        #: Polls missing between frames read in a row (``seq`` jumped), told with damage.
        self.missing_polls = 0
        self._last_seq: int | None = None
        self._gap_offsets: set[int] = set()

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
        self._last_seq = None

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
        """The next good Frame, or None at the end of the file.

        With ``follow`` set, a last line without its newline is a line still being written:
        it is left for the next call instead of being counted as truncated.
        """
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
            if self.follow and not line.endswith(b"\n"):
                fh.seek(offset)
                return None
            if self.line_no is not None:
                self.line_no += 1
            frame = self.parse_line(line, offset)
            if frame is not None:
                self.last_offset = offset
                self._check_step(frame, offset)
                return frame

    def _check_step(self, frame: Frame, offset: int) -> None:
        last_seq, self._last_seq = self._last_seq, frame.seq
        if last_seq is not None and frame.seq > last_seq + 1 and offset not in self._gap_offsets:
            if len(self._gap_offsets) < 100_000:
                self._gap_offsets.add(offset)  # counted once, whatever seeks come later
            self.missing_polls += frame.seq - last_seq - 1
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
            self._stream_notes = self.stream_notes
            self._stream_lost = self.stream_lost
            self._fh.close()
            self._fh = None

    @property
    def stream_notes(self) -> list[str]:
        """What the file layer has to say (damaged compressed blocks, a file that ended early),
        kept past close."""
        if self._fh is None:
            return self._stream_notes
        return list(getattr(getattr(self._fh, "raw", None), "notes", None) or [])

    @property
    def stream_lost(self) -> int:
        """Stretches of a compressed file that gave no text (damaged blocks, a cut end)."""
        if self._fh is None:
            return self._stream_lost
        return int(getattr(getattr(self._fh, "raw", None), "lost_stretches", 0) or 0)

    @property
    def notes(self) -> list[str]:
        """Plain words for the status line / report about what was skipped or ignored."""
        notes = self.stream_notes
        if notes and self.missing_polls:
            notes[0] += (
                f"; {self.missing_polls} poll{'s' if self.missing_polls != 1 else ''} missing "
                "between the frames read, by their seq"
            )
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


#: Open one recording file, refusing anything but a regular file (see `codec.open_regular`).
open_recording_file = open_regular

RecordingPaths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def read_recording(
    path: RecordingPaths, *, check_unknown: bool = True, with_parts: bool = False
) -> tuple[RecordingHeader, FrameReader]:
    """Open a recording: its header, and a streaming iterator of its good Frames.

    ``path`` is one file (plain, gzip or zstd: told by its first bytes) or several names and
    globs: the parts of one session (rotated files), joined in time order. ``with_parts`` adds
    the rotated parts of the first file that exist. Raises `RecordingError` (one clear message)
    for a file that cannot be read at all. The iterator closes the file when exhausted; close
    it yourself (or use ``with``) if you stop early. Unknown header fields are reported in the
    reader's ``unknown_fields``.
    """
    paths = session_paths(path, with_parts=with_parts)
    if not paths:
        raise RecordingError("no recording given")
    fh = open_stream(open_logical(paths))
    try:
        header, unknown = parse_header(
            paths[0], *read_line(fh, MAX_HEADER_BYTES, skip_rest=False)
        )
        parts = parts_stream(fh)
        assert parts is not None, "open_stream reads through a PartsStream"
        for i, part in enumerate(paths[1:], start=1):
            parse_header(part, parts.part_header(i))
    except BaseException:
        fh.close()
        raise
    reader = FrameReader(fh, paths[0], line_no=1, check_unknown=check_unknown)
    reader.unknown_fields.update(unknown)
    return header, reader
