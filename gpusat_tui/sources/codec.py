"""Recording files on disk: plain JSONL, or zstd / gzip in independent blocks with an index.

The reader side turns any of them into one *logical* stream of JSONL bytes that can be
``seek``-ed and ``readline``-d like a plain file, so the frame reader, replay's seek-by-bisection
and ``report`` work the same on all three and never learn which one they read.

Compressed layout (the same idea for both formats; both stay readable by ``zstd -d`` and
``gunzip``, which skip our index records):

* The text is cut into **blocks**: a zstd frame, or a gzip member. The header line is a block of
  its own; after it a block is closed every `BLOCK_BYTES` of text (about 100 frames of 8 cards).
  A block can be decompressed on its own, so a seek decompresses at most one block.
* Every line is **flushed** the moment it is written (zstd ``FLUSH_BLOCK``, zlib
  ``Z_SYNC_FLUSH``) and handed to the kernel in one ``os.write``: a Ctrl-C, SIGTERM, SIGHUP or
  SIGKILL of the recorder loses no line that was written, only the block's end marker. The
  reader decodes such an unfinished last block as far as it goes. Cost: a few bytes per line.
* After a block is closed, a fixed-size **index record** follows it: a zstd *skippable frame*, or
  an *empty gzip member* carrying the record in its FEXTRA field. It holds where the block
  starts, its compressed and uncompressed lengths and a CRC. Since the record sits right after
  its block, the record of the block before sits right before the block's start: the reader
  walks the chain from the file's end backwards (a few bytes per block, no decompression) and
  knows every block's logical offset at once. A broken chain (a corrupt record) falls back to a
  forward scan for records; a block that fails to decompress becomes blank lines of its length
  (the reader skips them) and a note. This is what the seekable-zstd format does with one table
  at the end, spread so that a file that was never closed (a crash, a live recording) is
  indexed too. Chosen over a sidecar index, which gets lost when the recording is copied.

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
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from gpusat_tui.errors import RecordingError

__all__ = [
    "BLOCK_BYTES",
    "BlockWriter",
    "Format",
    "LogicalFile",
    "format_for_name",
    "open_logical",
    "sniff",
]

Format = Literal["plain", "gzip", "zstd"]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
#: Text per compressed block. Larger compresses a little better; a seek decompresses one
#: block (1 MiB of JSON: about 1 ms with zstd).
BLOCK_BYTES = 1 << 20
#: zstd level: 3 is zstd's default; 6 measured ~10 % smaller for ~1.6x the CPU per frame.
ZSTD_LEVEL = 3
GZIP_LEVEL = 6

# The index record: magic, layout version, block start / compressed length / logical start /
# logical length, CRC32 of the fields before it.
_REC = struct.Struct("<4sB3xQQQQI")
_REC_MAGIC = b"GSTI"
_REC_VERSION = 1
_ZSTD_SKIP = struct.Struct("<II")
_ZSTD_SKIP_MAGIC = 0x184D2A5E
_GZIP_SUBFIELD = b"GS"
#: The gzip framing of a record: header with FEXTRA, one subfield, an empty deflate stream
#: (03 00), CRC32 0 and size 0.
_GZIP_HEAD = GZIP_MAGIC + b"\x08\x04" + b"\0\0\0\0" + b"\x00\xff"
_GZIP_TAIL = b"\x03\x00" + b"\0\0\0\0" + b"\0\0\0\0"
_ZSTD_REC_PREFIX = _ZSTD_SKIP.pack(_ZSTD_SKIP_MAGIC, _REC.size)
_GZIP_REC_PREFIX = (
    _GZIP_HEAD + struct.pack("<H", 4 + _REC.size) + _GZIP_SUBFIELD + struct.pack("<H", _REC.size)
)
_REC_PREFIX: dict[str, bytes] = {"zstd": _ZSTD_REC_PREFIX, "gzip": _GZIP_REC_PREFIX}
_REC_SUFFIX: dict[str, bytes] = {"zstd": b"", "gzip": _GZIP_TAIL}
#: How far back from the end to look for the last record when the file ends mid-block.
_TAIL_SEARCH = 4 * BLOCK_BYTES
#: Longest header line looked for when joining parts.
MAX_HEADER_BYTES = 1 << 20
#: Decode in pieces so that a corrupt stretch keeps what came before it.
_DECODE_CHUNK = 64 * 1024


_KNOWN_SUFFIXES = frozenset({".jsonl", ".json", ".zst", ".zstd", ".gz"})


def format_for_name(path: str | os.PathLike[str]) -> Format:
    """The format a recording written to ``path`` gets: by its name's last suffix."""
    suffix = Path(path).suffix.lower()
    if suffix in {".zst", ".zstd"}:
        return "zstd"
    if suffix == ".gz":
        return "gzip"
    return "plain"


def part_path(base: str | os.PathLike[str], part: int) -> Path:
    """Part ``part`` of a rotated recording: ``run.jsonl.zst`` -> ``run.0001.jsonl.zst``.

    Part 0 is the name given. The number goes before the first of the known suffixes
    (``.jsonl``, ``.zst``, ``.gz``...), or at the end of a name without them.
    """
    base = Path(base)
    if part == 0:
        return base
    name = base.name
    cut = len(name)
    for suffix in reversed(base.suffixes):
        if suffix.lower() not in _KNOWN_SUFFIXES or cut - len(suffix) <= 0:
            break
        cut -= len(suffix)
    return base.with_name(f"{name[:cut]}.{part:04d}{name[cut:]}")


def sniff(first: bytes) -> Format:
    """The format of a file from its first bytes (the name may lie)."""
    if first.startswith(ZSTD_MAGIC):
        return "zstd"
    if first.startswith(GZIP_MAGIC):
        return "gzip"
    return "plain"


def _record_bytes(fmt: str, c_start: int, c_len: int, u_start: int, u_len: int) -> bytes:
    fields = _REC.pack(_REC_MAGIC, _REC_VERSION, c_start, c_len, u_start, u_len, 0)[:-4]
    crc = zlib.crc32(fields)
    return _REC_PREFIX[fmt] + fields + struct.pack("<I", crc) + _REC_SUFFIX[fmt]


def _record_size(fmt: str) -> int:
    return len(_REC_PREFIX[fmt]) + _REC.size + len(_REC_SUFFIX[fmt])


def _parse_record(fmt: str, data: bytes, at: int) -> _Block | None:
    """The record framed in ``data`` (found at file offset ``at``), if valid and self-consistent."""
    prefix, suffix = _REC_PREFIX[fmt], _REC_SUFFIX[fmt]
    if len(data) != _record_size(fmt) or not data.startswith(prefix) or not data.endswith(suffix):
        return None
    body = data[len(prefix):len(prefix) + _REC.size]
    magic, version, c_start, c_len, u_start, u_len, crc = _REC.unpack(body)
    if magic != _REC_MAGIC or version != _REC_VERSION or zlib.crc32(body[:-4]) != crc:
        return None
    if c_start + c_len != at:  # a record sits right after its block
        return None
    return _Block(c_start=c_start, c_len=c_len, u_start=u_start, u_len=u_len)


# -- writing ---------------------------------------------------------------------------------


class BlockWriter:
    """Encodes lines for a compressed recording: flushed per line, a block every `BLOCK_BYTES`.

    It only turns text into bytes; the `Recorder` writes them (one ``os.write`` per line) and
    decides what a failed write means. Offsets assume every byte returned was written.
    """

    def __init__(self, fmt: Format, *, block_bytes: int | None = None) -> None:
        if fmt == "plain":
            raise ValueError("BlockWriter is for compressed formats")
        self.fmt = fmt
        self.block_bytes = BLOCK_BYTES if block_bytes is None else block_bytes
        self.reset()

    def reset(self) -> None:
        """Start from an empty file (the caller truncated it)."""
        self.c_offset = self.u_offset = 0
        self._block_c_start = self._block_u_start = 0
        self._encoder: _Encoder | None = None

    def add_line(self, line: bytes) -> bytes:
        """The bytes that put one line (ending in ``\\n``) on disk, flushed; closes a full block."""
        if self._encoder is None:
            self._encoder = _Encoder(self.fmt)
            self._block_c_start, self._block_u_start = self.c_offset, self.u_offset
        data = self._encoder.add(line)
        self.c_offset += len(data)
        self.u_offset += len(line)
        if self.u_offset - self._block_u_start >= self.block_bytes:
            data += self.end_block()
        return data

    def end_block(self) -> bytes:
        """The bytes that close the open block (if any) and write its index record."""
        if self._encoder is None:
            return b""
        tail = self._encoder.finish()
        self._encoder = None
        c_len = self.c_offset + len(tail) - self._block_c_start
        record = _record_bytes(
            self.fmt, self._block_c_start, c_len, self._block_u_start,
            self.u_offset - self._block_u_start,
        )
        self.c_offset += len(tail) + len(record)
        return tail + record


class _Encoder:
    """One block's compressor: zstd frame or gzip member."""

    def __init__(self, fmt: Format) -> None:
        self.fmt = fmt
        if fmt == "zstd":
            import zstandard

            self._zstd = zstandard
            self._obj = zstandard.ZstdCompressor(
                level=ZSTD_LEVEL, write_checksum=True
            ).compressobj()
        else:
            self._obj = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)

    def add(self, line: bytes) -> bytes:
        if self.fmt == "zstd":
            return self._obj.compress(line) + self._obj.flush(self._zstd.COMPRESSOBJ_FLUSH_BLOCK)
        return self._obj.compress(line) + self._obj.flush(zlib.Z_SYNC_FLUSH)

    def finish(self) -> bytes:
        if self.fmt == "zstd":
            return self._obj.flush(self._zstd.COMPRESSOBJ_FLUSH_FINISH)
        return self._obj.flush(zlib.Z_FINISH)


# -- reading ---------------------------------------------------------------------------------


@dataclass
class _Block:
    """One stretch of the logical stream and where its compressed bytes are."""

    c_start: int
    c_len: int
    u_start: int
    u_len: int
    #: True for a stretch without an index record (the unfinished last block, or a block whose
    #: record was damaged): its length was found by decoding it.
    unindexed: bool = False


def _decode(fmt: str, data: bytes) -> tuple[bytes, bool]:
    """Decompress one block as far as it goes: (text, whether it was damaged).

    A block cut short (a crash, a live recording) decodes up to its last flush and is not
    damaged; bytes that fail to decode end the block there and mark it damaged.
    """
    if fmt == "zstd":
        import zstandard

        obj = zstandard.ZstdDecompressor().decompressobj()
        error: type[Exception] = zstandard.ZstdError
    else:
        obj = zlib.decompressobj(31)
        error = zlib.error
    out: list[bytes] = []
    for start in range(0, len(data), _DECODE_CHUNK):
        try:
            out.append(obj.decompress(data[start:start + _DECODE_CHUNK]))
        except error:
            return b"".join(out), True
        if obj.eof:
            break
    return b"".join(out), False


class _IndexedRaw(io.RawIOBase):
    """The logical (decompressed) bytes of a compressed recording, seekable by logical offset."""

    def __init__(self, path: Path, fmt: Format, fh: IO[bytes]) -> None:
        super().__init__()
        self.path = path
        self.fmt = fmt
        self._fh = fh
        self._pos = 0
        self._blocks: list[_Block] = []
        self._indexed: list[_Block] = []
        self._starts: list[int] = []
        self._size = 0
        self._c_size = -1
        self._cache: tuple[int, bytes] | None = None
        self.damaged: set[int] = set()
        self.refresh()

    # -- index -----------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Re-read the index if the file grew (a recording still being written); True if so."""
        c_size = os.fstat(self._fh.fileno()).st_size
        if c_size == self._c_size:
            return False
        self._c_size = c_size
        indexed = self._walk_back(c_size)
        if indexed is None:
            indexed = self._scan_forward(c_size)
        self._indexed = indexed
        blocks: list[_Block] = []
        c_pos = u_pos = 0
        for block in [*indexed, None]:
            c_end = c_size if block is None else block.c_start
            if c_end > c_pos:  # bytes with no record: the unfinished last block, or damage
                for extra in self._unindexed(c_pos, c_end, u_pos):
                    blocks.append(extra)
                    u_pos += extra.u_len
            if block is None:
                break
            blocks.append(_Block(block.c_start, block.c_len, u_pos, block.u_len))
            u_pos += block.u_len
            c_pos = block.c_start + block.c_len + _record_size(self.fmt)
        self._blocks = blocks
        self._starts = [b.u_start for b in blocks]
        self._size = blocks[-1].u_start + blocks[-1].u_len if blocks else 0
        self._cache = None  # the last block may have grown or been indexed
        return True

    def _read_at(self, offset: int, length: int) -> bytes:
        self._fh.seek(offset)
        return self._fh.read(length)

    def _walk_back(self, c_size: int) -> list[_Block] | None:
        """Blocks found by following the records from the end; None if the chain breaks."""
        rec_size = _record_size(self.fmt)
        end = c_size
        last = None
        if end >= rec_size:
            last = _parse_record(self.fmt, self._read_at(end - rec_size, rec_size), end - rec_size)
        if last is None:  # ends mid-block: find the last record in the tail
            found = self._records_in(max(0, c_size - _TAIL_SEARCH), c_size)
            if not found:
                return [] if c_size <= _TAIL_SEARCH else None
            last = found[-1]
        # A live file grows at the end: stop at the first block already known.
        known = {b.c_start: i for i, b in enumerate(self._indexed)}
        chain = [last]
        while chain[-1].c_start > 0 and chain[-1].c_start not in known:
            at = chain[-1].c_start - rec_size
            if at < 0:
                return None
            prev = _parse_record(self.fmt, self._read_at(at, rec_size), at)
            if prev is None:
                return None
            chain.append(prev)
        chain.reverse()
        if chain[0].c_start in known:
            return self._indexed[: known[chain[0].c_start]] + chain
        return chain

    def _records_in(self, start: int, end: int) -> list[_Block]:
        data = self._read_at(start, end - start)
        prefix, rec_size = _REC_PREFIX[self.fmt], _record_size(self.fmt)
        found: list[_Block] = []
        at = data.find(prefix)
        while at >= 0:
            block = _parse_record(self.fmt, data[at:at + rec_size], start + at)
            if block is not None:
                found.append(block)
            at = data.find(prefix, at + 1)
        return found

    def _scan_forward(self, c_size: int) -> list[_Block]:
        """Every valid record in the file, in order (the slow path, after damage)."""
        found: list[_Block] = []
        step = 8 * BLOCK_BYTES
        overlap = _record_size(self.fmt)
        for start in range(0, c_size, step):
            for block in self._records_in(start, min(c_size, start + step + overlap)):
                if not found or block.c_start >= found[-1].c_start + found[-1].c_len:
                    found.append(block)
        return found

    def _unindexed(self, c_start: int, c_end: int, u_start: int) -> list[_Block]:
        """A stretch without a record: the unfinished last block, or damage."""
        text, damaged = _decode(self.fmt, self._read_at(c_start, c_end - c_start))
        if damaged:
            self.damaged.add(c_start)
        if not text:
            return []
        return [_Block(c_start, c_end - c_start, u_start, len(text), unindexed=True)]

    # -- bytes -----------------------------------------------------------------------------
    def _text(self, i: int) -> bytes:
        if self._cache is not None and self._cache[0] == i:
            return self._cache[1]
        block = self._blocks[i]
        text, damaged = _decode(self.fmt, self._read_at(block.c_start, block.c_len))
        if damaged or len(text) != block.u_len:
            self.damaged.add(block.c_start)
            # Keep the logical offsets right: the whole lines that decoded, then blank lines
            # (which the reader skips) for the rest.
            whole = text[: text.rfind(b"\n", 0, block.u_len) + 1]
            text = whole + b"\n" * (block.u_len - len(whole))
        self._cache = (i, text)
        return text

    @property
    def size(self) -> int:
        return self._size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self._pos
        elif whence == io.SEEK_END:
            offset += self._size
        self._pos = max(0, offset)
        return self._pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._pos >= self._size or not self._blocks:
            return 0
        i = bisect.bisect_right(self._starts, self._pos) - 1
        block = self._blocks[i]
        text = self._text(i)
        start = self._pos - block.u_start
        n = min(len(buffer), len(text) - start)
        buffer[:n] = text[start:start + n]
        self._pos += n
        return n

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
        super().close()


class _PlainRaw(io.FileIO):
    """A plain file, with the same ``size`` / ``refresh`` / ``damaged`` as the compressed one."""

    damaged: frozenset[int] = frozenset()

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

    def open(self) -> _Stream:
        return _Stream(self.paths)


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


def _open_raw(path: Path) -> _IndexedRaw | _PlainRaw:
    fh = open_regular(path)
    try:
        fmt = sniff(os.pread(fh.fileno(), 4, 0))
        if fmt == "plain":
            return _PlainRaw(os.dup(fh.fileno()), "rb")
        return _IndexedRaw(path, fmt, os.fdopen(os.dup(fh.fileno()), "rb"))
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ImportError:
        raise RecordingError(
            f"{path} is zstd-compressed and the 'zstandard' package is not installed"
        ) from None
    finally:
        fh.close()


class _Stream(io.RawIOBase):
    """The parts' logical streams back to back (later parts without their header line)."""

    def __init__(self, paths: Sequence[Path]) -> None:
        super().__init__()
        self.paths = list(paths)
        self._raws: list[_IndexedRaw | _PlainRaw] = []
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
    def _header_len(raw: _IndexedRaw | _PlainRaw) -> int:
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
        """Append a part that appeared later (rotation while following)."""
        raw = _open_raw(path)
        self.paths.append(path)
        self._raws.append(raw)
        self._skips.append(self._header_len(raw))
        self._layout()

    def refresh(self) -> bool:
        """Re-read sizes and indexes (files still being written); True if anything grew."""
        before = self._size
        for raw in self._raws:
            raw.refresh()
        self._layout()
        return self._size != before

    @property
    def size(self) -> int:
        return self._size

    @property
    def damaged_blocks(self) -> int:
        return sum(len(raw.damaged) for raw in self._raws)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self._pos
        elif whence == io.SEEK_END:
            offset += self._size
        self._pos = max(0, offset)
        return self._pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._pos >= self._size:
            return 0
        i = bisect.bisect_right(self._starts, self._pos) - 1
        while i + 1 < len(self._starts) and self._starts[i + 1] == self._starts[i]:
            i += 1  # skip empty parts
        raw = self._raws[i]
        raw.seek(self._skips[i] + self._pos - self._starts[i])
        end = self._starts[i + 1] if i + 1 < len(self._starts) else self._size
        n = raw.readinto(buffer[: min(len(buffer), end - self._pos)])  # type: ignore[arg-type]
        n = n or 0
        self._pos += n
        return n

    def close(self) -> None:
        for raw in getattr(self, "_raws", []):
            raw.close()
        super().close()

    @property
    def notes(self) -> list[str]:
        """What the reader should tell: damaged compressed blocks that were skipped."""
        n = self.damaged_blocks
        if not n:
            return []
        return [
            f"{n} damaged compressed block{'s' if n != 1 else ''} skipped "
            f"(the frames in {'them' if n != 1 else 'it'} are lost; the rest loads)"
        ]


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
        while (candidate := part_path(paths[0], n)).exists():
            if candidate not in paths:
                paths.append(candidate)
            n += 1
    unique = list(dict.fromkeys(paths))
    if len(unique) < 2:
        return unique
    return sorted(unique, key=lambda p: (*_order_key(p), p.name))


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
    return io.BufferedReader(logical.open(), buffer_size)  # type: ignore[return-value]
