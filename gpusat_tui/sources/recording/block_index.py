"""The on-disk layout of a compressed recording: zstd or gzip in independent blocks, each
followed by an index record.

Both formats stay readable by ``zstd -d`` and ``gunzip``, which skip our index records.

* The text is cut into **blocks**: a zstd frame, or a gzip member. The header line is a block of
  its own; after it a block is closed every `BLOCK_BYTES` of text (about 100 frames of 8 cards).
  A block can be decompressed on its own, so a seek decompresses at most one block.
* After a block is closed, a fixed-size **index record** follows it: a zstd *skippable frame*, or
  an *empty gzip member* carrying the record in its FEXTRA field. It holds where the block
  starts, its compressed and uncompressed lengths and a CRC. Since the record sits right after
  its block, the record of the block before sits right before the block's start: the reader
  walks the chain from the file's end backwards (a few bytes per block, no decompression) and
  knows every block's logical offset at once. This is what the seekable-zstd format does with
  one table at the end, spread so that a file that was never closed (a crash, a live
  recording) is indexed too. Chosen over a sidecar index, which gets lost when the recording is
  copied.

This module is the layout alone (names, magics, the record); `block_writer` writes it and
`block_reader` reads it back. The layout is an interface (docs/recording.md).
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "BLOCK_BYTES",
    "GZIP_MAGIC",
    "ZSTD_MAGIC",
    "Block",
    "Format",
    "format_for_name",
    "parse_record",
    "part_path",
    "record_bytes",
    "record_prefix",
    "record_size",
    "sniff",
]

Format = Literal["plain", "gzip", "zstd"]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
#: Text per compressed block. Larger compresses a little better; a seek decompresses one
#: block (1 MiB of JSON: about 1 ms with zstd).
BLOCK_BYTES = 1 << 20

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


@dataclass
class Block:
    """One stretch of the logical stream and where its compressed bytes are."""

    c_start: int
    c_len: int
    u_start: int
    u_len: int
    #: True for a stretch without an index record (the unfinished last block, or a block whose
    #: record was damaged): its length was found by decoding it.
    unindexed: bool = False


def record_prefix(fmt: str) -> bytes:
    """The bytes every index record of ``fmt`` starts with (what a scan for records looks for)."""
    return _REC_PREFIX[fmt]


def record_bytes(fmt: str, c_start: int, c_len: int, u_start: int, u_len: int) -> bytes:
    """The index record of one block, framed for ``fmt``."""
    fields = _REC.pack(_REC_MAGIC, _REC_VERSION, c_start, c_len, u_start, u_len, 0)[:-4]
    crc = zlib.crc32(fields)
    return _REC_PREFIX[fmt] + fields + struct.pack("<I", crc) + _REC_SUFFIX[fmt]


def record_size(fmt: str) -> int:
    """Bytes of one framed index record of ``fmt``."""
    return len(_REC_PREFIX[fmt]) + _REC.size + len(_REC_SUFFIX[fmt])


def parse_record(fmt: str, data: bytes, at: int) -> Block | None:
    """The record framed in ``data`` (found at file offset ``at``), if valid and self-consistent."""
    prefix, suffix = _REC_PREFIX[fmt], _REC_SUFFIX[fmt]
    if len(data) != record_size(fmt) or not data.startswith(prefix) or not data.endswith(suffix):
        return None
    body = data[len(prefix):len(prefix) + _REC.size]
    magic, version, c_start, c_len, u_start, u_len, crc = _REC.unpack(body)
    if magic != _REC_MAGIC or version != _REC_VERSION or zlib.crc32(body[:-4]) != crc:
        return None
    if c_start + c_len != at:  # a record sits right after its block
        return None
    return Block(c_start=c_start, c_len=c_len, u_start=u_start, u_len=u_len)
