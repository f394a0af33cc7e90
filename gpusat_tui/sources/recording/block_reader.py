"""Reading a compressed recording back: its text as a seekable raw stream.

The reader walks the index records' chain from the file's end (`block_index`) and knows every
block's logical offset at once. A broken chain (a corrupt record) falls back to a forward scan
for records; a block that fails to decompress becomes blank lines of its length (the reader
skips them) and a note; an unfinished last block (a crash, a live recording) decodes as far as
its last flush. `codec` joins this stream with plain files and the other parts of a session.
"""

from __future__ import annotations

import bisect
import io
import os
import zlib
from pathlib import Path
from typing import IO, Protocol

from gpusat_tui.sources.recording.block_index import (
    BLOCK_BYTES,
    Block,
    Format,
    parse_record,
    record_prefix,
    record_size,
)
from gpusat_tui.sources.recording.compressed_frames import walk_frames

__all__ = ["IndexedRaw", "LogicalRaw"]

#: How far back from the end to look for the last record when the file ends mid-block.
_TAIL_SEARCH = 4 * BLOCK_BYTES
#: Decode in pieces so that a corrupt stretch keeps what came before it.
_DECODE_CHUNK = 64 * 1024


class _DecompressObj(Protocol):
    """What zstandard's and zlib's streaming decompressors both offer."""

    def decompress(self, data: bytes, /) -> bytes: ...

    @property
    def eof(self) -> bool: ...


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
        self._blocks: list[Block] = []
        self._indexed: list[Block] = []
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
        blocks: list[Block] = []
        c_pos = u_pos = 0
        for block in [*indexed, None]:
            c_end = c_size if block is None else block.c_start
            if c_end > c_pos:  # bytes with no record: the unfinished last block, or damage
                for extra in self._unindexed(c_pos, c_end, u_pos):
                    blocks.append(extra)
                    u_pos += extra.u_len
            if block is None:
                break
            blocks.append(Block(block.c_start, block.c_len, u_pos, block.u_len))
            u_pos += block.u_len
            c_pos = block.c_start + block.c_len + record_size(self.fmt)
        self._blocks = blocks
        self._starts = [b.u_start for b in blocks]
        self._size = blocks[-1].u_start + blocks[-1].u_len if blocks else 0
        self._cache = None  # the last block may have grown or been indexed
        return True

    def _read_at(self, offset: int, length: int) -> bytes:
        self._fh.seek(offset)
        return self._fh.read(length)

    def _walk_back(self, c_size: int) -> list[Block] | None:
        """Blocks found by following the records from the end; None if the chain breaks."""
        rec_size = record_size(self.fmt)
        end = c_size
        last = None
        if end >= rec_size:
            last = parse_record(self.fmt, self._read_at(end - rec_size, rec_size), end - rec_size)
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
            prev = parse_record(self.fmt, self._read_at(at, rec_size), at)
            if prev is None:
                return None
            chain.append(prev)
        chain.reverse()
        if chain[0].c_start in known:
            return self._indexed[: known[chain[0].c_start]] + chain
        return chain

    def _records_in(self, start: int, end: int) -> list[Block]:
        data = self._read_at(start, end - start)
        prefix, rec_size = record_prefix(self.fmt), record_size(self.fmt)
        found: list[Block] = []
        at = data.find(prefix)
        while at >= 0:
            block = parse_record(self.fmt, data[at:at + rec_size], start + at)
            if block is not None:
                found.append(block)
            at = data.find(prefix, at + 1)
        return found

    def _scan_forward(self, c_size: int) -> list[Block]:
        """Every valid record in the file, in order (the slow path, after damage)."""
        found: list[Block] = []
        step = 8 * BLOCK_BYTES
        overlap = record_size(self.fmt)
        for start in range(0, c_size, step):
            for block in self._records_in(start, min(c_size, start + step + overlap)):
                if not found or block.c_start >= found[-1].c_start + found[-1].c_len:
                    found.append(block)
        return found

    def _unindexed(self, c_start: int, c_end: int, u_start: int) -> list[Block]:
        """A stretch without a record: the unfinished last block, damage, or the frames of a
        file written by another tool (see `compressed_frames`)."""
        data = self._read_at(c_start, c_end - c_start)
        blocks: list[Block] = []
        for span in walk_frames(self.fmt, data, at_end=c_end >= self._c_size):
            start = c_start + span.c_start
            if span.damaged_bytes:
                self.damaged.add(start)
                self.damaged_bytes[start] = span.damaged_bytes
            if span.cut_bytes:
                self.cut_bytes = span.cut_bytes
            if span.u_len:
                blocks.append(Block(start, span.c_len, u_start, span.u_len, unindexed=True))
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
