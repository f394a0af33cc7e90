"""Independent compressed frames in a stretch of a file, found by decoding, past any damage.

A recording written by something else than this project's writer (the ``zstandard`` library's
streaming writer flushing frames, ``zstd`` on chunks joined with ``cat``, a log shipper, gzip
members back to back) has no index records: its frames are found here by decoding each one to
its end. A frame that fails to decode keeps the text before the failure; the reader then looks
for the next frame's magic number and goes on from there, so one garbled frame costs that frame
and nothing after it. Cost: the stretch is decoded once to learn its frames' lengths (the text
is counted, not kept).

A stretch that ends inside a frame is a file still being written or one cut short. For zstd the
block headers say which: a frame that stops on a block boundary lost nothing (this project's
writer flushes a block per line), one that stops inside a block lost that block's text, which
zstd cannot decode in part; those bytes are reported as ``cut_bytes``.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

__all__ = ["FrameSpan", "walk_frames"]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MEMBER_MAGIC = b"\x1f\x8b\x08"
#: zstd skippable frames: magic 0x184D2A50..0x184D2A5F, then a 4-byte length.
_SKIP_HEAD = struct.Struct("<II")
_DECODE_CHUNK = 64 * 1024
#: zstd block header: 3 bytes, little endian: last-block bit, 2-bit type, 21-bit size.
_BLOCK_RLE = 1
_BLOCK_RESERVED = 3


@dataclass
class FrameSpan:
    """One frame's place: compressed start and length, decoded length, what was lost in it."""

    c_start: int
    c_len: int
    u_len: int
    #: Compressed bytes that could not be decoded (from the failure to the next frame found).
    damaged_bytes: int = 0
    #: Bytes of an unfinished zstd block at the stretch's end (the file was cut there).
    cut_bytes: int = 0


def _magic(fmt: str) -> bytes:
    return ZSTD_MAGIC if fmt == "zstd" else GZIP_MEMBER_MAGIC


def _skippable_len(data: bytes, at: int) -> int:
    """Length of a zstd skippable frame starting at ``at`` (0 if there is none)."""
    if len(data) - at < _SKIP_HEAD.size:
        return 0
    magic: int
    size: int
    magic, size = _SKIP_HEAD.unpack_from(data, at)
    if magic & 0xFFFFFFF0 != 0x184D2A50:
        return 0
    return min(_SKIP_HEAD.size + size, len(data) - at)


def _decode_one(fmt: str, data: bytes, at: int) -> tuple[int, int, bool]:
    """Decode the frame at ``at``: (decoded length, compressed length, whether it failed).

    A frame that ends with the data (unfinished) takes all of it and has not failed.
    """
    obj: Any  # zstd's or zlib's decompressor: the same decompress / eof / unused_data
    if fmt == "zstd":
        import zstandard

        obj = zstandard.ZstdDecompressor().decompressobj()
        error: type[Exception] = zstandard.ZstdError
    else:
        obj = zlib.decompressobj(31)
        error = zlib.error
    out = 0
    pos = at
    while pos < len(data):
        piece = data[pos:pos + _DECODE_CHUNK]
        try:
            out += len(obj.decompress(piece))
        except error:
            return out, pos - at, True
        pos += len(piece)
        if obj.eof:
            return out, pos - len(obj.unused_data) - at, False
    return out, pos - at, False


def _zstd_cut_bytes(data: bytes, at: int) -> int:
    """Bytes of an unfinished zstd frame at ``at`` after its last whole block (0: none lost)."""
    import zstandard

    try:
        pos = at + zstandard.frame_header_size(data[at:at + 18])
    except zstandard.ZstdError:
        return len(data) - at
    while pos + 3 <= len(data):
        head = int.from_bytes(data[pos:pos + 3], "little")
        kind, size = (head >> 1) & 3, head >> 3
        if kind == _BLOCK_RESERVED:
            return len(data) - pos
        end = pos + 3 + (1 if kind == _BLOCK_RLE else size)
        if end > len(data):
            return len(data) - pos
        pos = end
        if head & 1:  # the last block: only the checksum (if any) can be missing
            return 0
    return len(data) - pos


def _next_frame(fmt: str, data: bytes, after: int) -> int:
    """Where the next frame that decodes starts after ``after`` (``len(data)`` if none)."""
    magic = _magic(fmt)
    at = data.find(magic, after)
    while at >= 0:
        out, _, failed = _decode_one(fmt, data, at)
        if not failed or out:
            return at
        at = data.find(magic, at + 1)
    return len(data)


def walk_frames(fmt: str, data: bytes, *, at_end: bool) -> list[FrameSpan]:
    """The frames in ``data`` (offsets relative to it), with what was lost in each.

    Skippable frames (index records) are passed over. Bytes before the first frame that
    decodes, or between a failed frame and the next one, count as damage of the frame before
    (or of an empty span). ``at_end``: the data runs to the file's end, so a zstd frame that
    stops mid-block was cut there.
    """
    spans: list[FrameSpan] = []
    pos = 0
    while pos < len(data):
        if fmt == "zstd" and (skip := _skippable_len(data, pos)):
            pos += skip
            continue
        if not data.startswith(_magic(fmt), pos):
            nxt = _next_frame(fmt, data, pos + 1)
            spans.append(FrameSpan(pos, nxt - pos, 0, damaged_bytes=nxt - pos))
            pos = nxt
            continue
        out, used, failed = _decode_one(fmt, data, pos)
        if failed:
            nxt = _next_frame(fmt, data, pos + 1)
            spans.append(FrameSpan(pos, nxt - pos, out, damaged_bytes=nxt - pos - used))
            pos = nxt
            continue
        span = FrameSpan(pos, used, out)
        if pos + used >= len(data) and fmt == "zstd" and at_end:
            span.cut_bytes = _zstd_cut_bytes(data, pos)
        spans.append(span)
        pos += max(used, 1)
    return spans
