"""One compressed recording file: zstd or gzip in independent blocks, each followed by an index.

Both formats stay readable by ``zstd -d`` and ``gunzip``, which skip our index records.

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

The writer (`BlockWriter`) only turns lines into bytes; the `Recorder` writes them. The reader
(`IndexedRaw`) gives the file's text as a seekable raw stream; `codec` joins it with plain files
and the other parts of a session.
"""

from __future__ import annotations

import bisect
import io
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal, Protocol

from gpusat_tui.sources.recording.compressed_frames import walk_frames

__all__ = [
    "BLOCK_BYTES",
    "BlockWriter",
    "Format",
    "IndexedRaw",
    "LogicalRaw",
    "format_for_name",
    "part_path",
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


class _CompressObj(Protocol):
    """What zstandard's and zlib's streaming compressors both offer."""

    def compress(self, data: bytes, /) -> bytes: ...

    def flush(self, mode: int, /) -> bytes: ...


class _DecompressObj(Protocol):
    """What zstandard's and zlib's streaming decompressors both offer."""

    def decompress(self, data: bytes, /) -> bytes: ...

    @property
    def eof(self) -> bool: ...


class _Encoder:
    """One block's compressor: zstd frame or gzip member."""

    def __init__(self, fmt: Format) -> None:
        self.fmt = fmt
        self._obj: _CompressObj
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

        obj: _DecompressObj = zstandard.ZstdDecompressor().decompressobj()
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


class LogicalRaw(io.RawIOBase):
    """A read-only raw stream over text of known length ``_size``, positioned at ``_pos``.

    Subclasses give ``readinto``; seeking is only moving ``_pos`` (reads find their place).
    """

    _pos = 0
    _size = 0

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


class IndexedRaw(LogicalRaw):
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
        #: Blocks that failed to decode (by compressed start), and the bytes lost in each.
        self.damaged: set[int] = set()
        self.damaged_bytes: dict[int, int] = {}
        #: Bytes of an unfinished zstd block at the file's end: it was cut there.
        self.cut_bytes = 0
        self.refresh()

    # -- index -----------------------------------------------------------------------------
    def refresh(self) -> bool:
        """Re-read the index if the file grew (a recording still being written); True if so."""
        c_size = os.fstat(self._fh.fileno()).st_size
        if c_size == self._c_size:
            return False
        self._c_size = c_size
        self.cut_bytes = 0  # said again below if the end is still cut
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
        """A stretch without a record: the unfinished last block, damage, or the frames of a
        file written by another tool (see `compressed_frames`)."""
        data = self._read_at(c_start, c_end - c_start)
        blocks: list[_Block] = []
        for span in walk_frames(self.fmt, data, at_end=c_end >= self._c_size):
            start = c_start + span.c_start
            if span.damaged_bytes:
                self.damaged.add(start)
                self.damaged_bytes[start] = span.damaged_bytes
            if span.cut_bytes:
                self.cut_bytes = span.cut_bytes
            if span.u_len:
                blocks.append(_Block(start, span.c_len, u_start, span.u_len, unindexed=True))
                u_start += span.u_len
        return blocks

    # -- bytes -----------------------------------------------------------------------------
    def _text(self, i: int) -> bytes:
        if self._cache is not None and self._cache[0] == i:
            return self._cache[1]
        block = self._blocks[i]
        text, damaged = _decode(self.fmt, self._read_at(block.c_start, block.c_len))
        if damaged or len(text) != block.u_len:
            self.damaged.add(block.c_start)
            self.damaged_bytes.setdefault(block.c_start, block.c_len)
            # Keep the logical offsets right: the whole lines that decoded, then blank lines
            # (which the reader skips) for the rest.
            whole = text[: text.rfind(b"\n", 0, block.u_len) + 1]
            text = whole + b"\n" * (block.u_len - len(whole))
        self._cache = (i, text)
        return text

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]  # BufferedReader only passes memoryviews
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
