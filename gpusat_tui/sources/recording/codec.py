"""Recording files as one stream of JSONL text: plain, gzip or zstd, one file or a session's parts.

The reader side turns any of them into one *logical* stream of JSONL bytes that can be
``seek``-ed and ``readline``-d like a plain file, so the frame reader, replay's seek-by-bisection
and ``report`` work the same on all and never learn which one they read. The compressed layout
is `block_index`'s (read by `block_reader`); the rotated parts of a session
(``run.jsonl.zst``, ``run.0001.jsonl.zst``...) are joined here, each later part without its
header line.

The format is detected from the first bytes, never from the name; the writer picks it from the
name (``.zst`` / ``.zstd``: zstd, ``.gz``: gzip, anything else: plain).
"""

from __future__ import annotations

import bisect
import glob
import io
import json
import math
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from gpusat_tui.errors import RecordingError
from gpusat_tui.sources.recording.block_index import part_path, sniff
from gpusat_tui.sources.recording.block_reader import IndexedRaw, LogicalRaw

__all__ = [
    "LogicalFile",
    "open_logical",
    "open_regular",
    "open_stream",
    "parts_stream",
    "refresh_stream",
    "session_paths",
    "stream_size",
]

#: Longest header line looked for when joining parts.
MAX_HEADER_BYTES = 1 << 20


class _PlainRaw(io.FileIO):
    """A plain file, with the same ``size`` / ``refresh`` / ``damaged`` as the compressed one."""

    damaged: frozenset[int] = frozenset()
    cut_bytes = 0

    @property
    def size(self) -> int:
        return os.fstat(self.fileno()).st_size

    def refresh(self) -> bool:
        return True


class LogicalFile:
    """One or more recording files read as one stream of JSONL text.

    ``parts`` after the first contribute their lines after their header line (a rotated
    recording's every part starts with a header). ``open()`` gives a seekable binary file
    object over the whole; offsets are logical (positions in the text, not in the files).
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        if not paths:
            raise RecordingError("no recording given")
        self.paths = list(paths)

    @property
    def name(self) -> str:
        first = self.paths[0].name
        return first if len(self.paths) == 1 else f"{first} (+{len(self.paths) - 1} parts)"

    def open(self) -> PartsStream:
        return PartsStream(self.paths)


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def open_regular(path: Path) -> IO[bytes]:
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
        return os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise


def _open_raw(path: Path) -> IndexedRaw | _PlainRaw:
    fh = open_regular(path)
    try:
        fmt = sniff(os.pread(fh.fileno(), 4, 0))
        if fmt == "plain":
            return _PlainRaw(os.dup(fh.fileno()), "rb")
        return IndexedRaw(path, fmt, os.fdopen(os.dup(fh.fileno()), "rb"))
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ImportError:
        raise RecordingError(
            f"{path} is zstd-compressed and the 'zstandard' package is not installed"
        ) from None
    finally:
        fh.close()


class PartsStream(LogicalRaw):
    """The parts' logical streams back to back (later parts without their header line)."""

    def __init__(self, paths: Sequence[Path]) -> None:
        super().__init__()
        self.paths = list(paths)
        self._raws: list[IndexedRaw | _PlainRaw] = []
        try:
            for path in self.paths:
                self._raws.append(_open_raw(path))
        except BaseException:
            self.close()
            raise
        self._skips = [0] + [self._header_len(r) for r in self._raws[1:]]
        self._pos = 0
        self._layout()

    def part_header(self, i: int) -> bytes:
        """The first line of part ``i`` (its header), for the reader to check."""
        raw = self._raws[i]
        raw.seek(0)
        return raw.read(max(self._skips[i], 1) if i else MAX_HEADER_BYTES).split(b"\n", 1)[0]

    @staticmethod
    def _header_len(raw: IndexedRaw | _PlainRaw) -> int:
        """Length of a part's first line (its header), which the joined stream leaves out."""
        raw.seek(0)
        seen = b""
        while len(seen) < MAX_HEADER_BYTES:
            chunk = raw.read(64 * 1024)
            if not chunk:
                return 0
            seen += chunk
            end = seen.find(b"\n")
            if end >= 0:
                return end + 1
        return 0

    def _layout(self) -> None:
        self._starts: list[int] = []
        total = 0
        for raw, skip in zip(self._raws, self._skips, strict=True):
            self._starts.append(total)
            total += max(0, raw.size - skip)
        self._size = total

    def add_part(self, path: Path) -> None:
        """Append a part that appeared later (rotation while following).

        The recorder creates a part and then writes its header: until the header line is
        whole, the part is refused (`RecordingError`; try again later), since its first bytes
        cannot yet tell its format nor where its frames start.
        """
        raw = _open_raw(path)
        skip = self._header_len(raw)
        if not skip:
            raw.close()
            raise RecordingError(f"{path} has no whole header line yet")
        self.paths.append(path)
        self._raws.append(raw)
        self._skips.append(skip)
        self._layout()

    def refresh(self) -> bool:
        """Re-read sizes and indexes (files still being written); True if anything grew."""
        before = self._size
        for raw in self._raws:
            raw.refresh()
        self._layout()
        return self._size != before

    @property
    def damaged_blocks(self) -> int:
        return sum(len(raw.damaged) for raw in self._raws)

    @property
    def lost_stretches(self) -> int:
        """Stretches of compressed data that gave no text: damaged blocks and a cut end."""
        return self.damaged_blocks + sum(
            1 for raw in self._raws if getattr(raw, "cut_bytes", 0)
        )

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]  # BufferedReader only passes memoryviews
        if self._pos >= self._size:
            return 0
        i = bisect.bisect_right(self._starts, self._pos) - 1
        while i + 1 < len(self._starts) and self._starts[i + 1] == self._starts[i]:
            i += 1  # skip empty parts
        raw = self._raws[i]
        raw.seek(self._skips[i] + self._pos - self._starts[i])
        end = self._starts[i + 1] if i + 1 < len(self._starts) else self._size
        n = raw.readinto(buffer[: min(len(buffer), end - self._pos)])
        n = n or 0
        self._pos += n
        return n

    def close(self) -> None:
        for raw in getattr(self, "_raws", []):
            raw.close()
        super().close()

    @property
    def notes(self) -> list[str]:
        """What the reader should tell: damaged compressed blocks skipped, a file cut short."""
        notes: list[str] = []
        n = self.damaged_blocks
        if n:
            lost = sum(sum(getattr(raw, "damaged_bytes", {}).values()) for raw in self._raws)
            notes.append(
                f"{n} damaged compressed block{'s' if n != 1 else ''} skipped "
                f"({_size(lost)} of compressed data could not be decoded: the frames in "
                f"{'them' if n != 1 else 'it'} are lost; the rest loads)"
            )
        for path, raw in zip(self.paths, self._raws, strict=True):
            cut = getattr(raw, "cut_bytes", 0)
            if cut:
                notes.append(
                    f"{path.name} ended early: its last {_size(cut)} (an unfinished compressed "
                    "block) could not be decoded; the frames in it are lost"
                )
        return notes


def _size(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} bytes"


def parts_stream(fh: IO[bytes]) -> PartsStream | None:
    """The parts of a session under a reader from `open_stream`; None for any other file."""
    raw = getattr(fh, "raw", None)
    return raw if isinstance(raw, PartsStream) else None


def stream_size(fh: IO[bytes]) -> int:
    """Logical length of a stream from `open_stream` (or of a plain file object)."""
    raw = getattr(fh, "raw", None)
    size = getattr(raw, "size", None)
    if isinstance(size, int):
        return size
    return os.fstat(fh.fileno()).st_size


def refresh_stream(fh: IO[bytes]) -> bool:
    """Pick up what a recorder appended since the stream was opened; True if it grew."""
    raw = getattr(fh, "raw", None)
    refresh = getattr(raw, "refresh", None)
    return bool(refresh()) if callable(refresh) else False


_GLOB_CHARS = frozenset("*?[")


def session_paths(
    args: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], *, with_parts: bool = False
) -> list[Path]:
    """The files of one session, in time order, from names and globs.

    A name that exists is taken as it is; one that does not and holds ``*?[`` is expanded (so a
    quoted ``'run*.jsonl.zst'`` works as well as the shell's expansion). ``with_parts`` adds the
    rotated parts of the first name that already exist (``run.0001.jsonl.zst``...). Files are
    ordered by their header's ``started_at`` and ``part``, then by name.
    """
    if isinstance(args, (str, os.PathLike)):
        args = [args]
    paths: list[Path] = []
    for arg in args:
        text = os.fspath(arg)
        if not os.path.lexists(text) and _GLOB_CHARS & set(text):
            matches = sorted(Path(m) for m in glob.glob(text))
            if not matches:
                raise RecordingError(f"no recording matches {text!r}")
            paths.extend(matches)
        else:
            paths.append(Path(text))
    if with_parts and paths:
        n = 1
        while (candidate := part_path(paths[0], n)).exists() and _has_header_line(candidate):
            if candidate not in paths:
                paths.append(candidate)
            n += 1
    unique = list(dict.fromkeys(paths))
    if len(unique) < 2:
        return unique
    return sorted(unique, key=lambda p: (*_order_key(p), p.name))


def _has_header_line(path: Path) -> bool:
    """Whether a part's first line is whole: a part being created (empty, or its header half
    written) is not yet part of the session a follower reads."""
    try:
        raw = _open_raw(path)
    except RecordingError:
        return False
    try:
        return PartsStream._header_len(raw) > 0
    finally:
        raw.close()


def _order_key(path: Path) -> tuple[float, int]:
    """(started_at, part) from a file's header line; files that have none sort last."""
    try:
        raw = _open_raw(path)
    except RecordingError:
        return (math.inf, 0)
    try:
        raw.seek(0)
        first = raw.read(MAX_HEADER_BYTES).split(b"\n", 1)[0]
    finally:
        raw.close()
    try:
        obj = json.loads(first)
        started = float(obj.get("started_at") or math.inf)
        part = int(obj.get("part") or 0)
    except (ValueError, TypeError, AttributeError):
        return (math.inf, 0)
    return (started if math.isfinite(started) else math.inf, part)


def open_logical(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str]) -> LogicalFile:
    """A `LogicalFile` over one recording or the parts of one session."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return LogicalFile([Path(p) for p in paths])


def open_stream(logical: LogicalFile, buffer_size: int = 64 * 1024) -> IO[bytes]:
    """A buffered, seekable reader of the logical text (what `FrameReader` reads)."""
    return io.BufferedReader(logical.open(), buffer_size)
