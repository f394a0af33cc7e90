"""Compressed recordings written by other tools: independent frames with no index records.

Real files written by the ``zstandard`` library's streaming writer (a frame flushed every 100
lines, as log shippers do), by the ``zstd`` command line tool (chunks compressed one by one and
joined, as ``cat a.zst b.zst`` does) and by ``gzip`` members back to back; then garbled in the
middle frame or cut mid-block, and read by ``report`` in a real process.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from gpusat_tui.sources.recording.reader import read_recording
from tests.recording_helpers import header, rich_frame

REPO = Path(__file__).resolve().parents[2]
FRAMES = 1000
PER_FRAME = 100  # lines per compressed frame
ZSTD_CLI = shutil.which("zstd")
needs_cli = pytest.mark.skipif(
    ZSTD_CLI is None, reason="the zstd command line tool is not installed"
)


def _lines() -> list[bytes]:
    head = header().model_dump_json().encode() + b"\n"
    return [head] + [rich_frame(s).model_dump_json().encode() + b"\n" for s in range(FRAMES)]


def _chunks() -> list[bytes]:
    lines = _lines()
    return [b"".join(lines[i:i + PER_FRAME]) for i in range(0, len(lines), PER_FRAME)]


def _library_frames() -> list[bytes]:
    """One zstd frame per chunk, from the library's streaming writer (FLUSH_FRAME)."""
    out: list[bytes] = []
    for chunk in _chunks():
        buf = io.BytesIO()
        writer = zstandard.ZstdCompressor(write_checksum=True).stream_writer(buf, closefd=False)
        writer.write(chunk)
        writer.flush(zstandard.FLUSH_FRAME)
        out.append(buf.getvalue())
    # The same bytes as one writer flushing a frame every PER_FRAME lines.
    buf = io.BytesIO()
    writer = zstandard.ZstdCompressor(write_checksum=True).stream_writer(buf, closefd=False)
    for chunk in _chunks():
        writer.write(chunk)
        writer.flush(zstandard.FLUSH_FRAME)
    assert buf.getvalue() == b"".join(out)
    return out


def _cli_frames(tmp_path: Path) -> list[bytes]:
    assert ZSTD_CLI is not None
    out: list[bytes] = []
    for chunk in _chunks():
        done = subprocess.run([ZSTD_CLI, "-q", "-c", "-3"], input=chunk, capture_output=True,
                              check=True, timeout=60)
        out.append(done.stdout)
    return out


def _gzip_members() -> list[bytes]:
    return [gzip.compress(chunk) for chunk in _chunks()]


def _frames(kind: str, tmp_path: Path) -> list[bytes]:
    if kind == "zstandard":
        return _library_frames()
    if kind == "zstd-cli":
        return _cli_frames(tmp_path)
    return _gzip_members()


KINDS = [
    "zstandard",
    pytest.param("zstd-cli", marks=needs_cli),
    "gzip",
]


def _read(path: Path) -> tuple[list[int], list[str]]:
    _, reader = read_recording(path)
    with reader:
        seqs = [f.seq for f in reader]
    return seqs, reader.notes


def _report(path: Path) -> tuple[dict[str, object], str]:
    out = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "report", "--json", str(path)],
        capture_output=True, text=True, cwd=REPO, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), out.stderr


def _suffix(kind: str) -> str:
    return ".jsonl.gz" if kind == "gzip" else ".jsonl.zst"


@pytest.mark.parametrize("kind", KINDS)
def test_every_frame_of_a_multi_frame_file_loads(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"run{_suffix(kind)}"
    path.write_bytes(b"".join(_frames(kind, tmp_path)))
    seqs, notes = _read(path)
    assert seqs == list(range(FRAMES))
    assert notes == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_garbled_middle_frame_loses_that_frame_only(tmp_path: Path, kind: str) -> None:
    frames = _frames(kind, tmp_path)
    mid = len(frames) // 2
    bad = bytearray(frames[mid])
    at = len(bad) // 2
    bad[at:at + 64] = bytes(range(64))
    path = tmp_path / f"run{_suffix(kind)}"
    path.write_bytes(b"".join([*frames[:mid], bytes(bad), *frames[mid + 1:]]))

    seqs, notes = _read(path)
    # Line k of the text (k >= 1) is frame seq k - 1; frame `mid` holds lines mid*100 ...
    in_bad = set(range(mid * PER_FRAME - 1, (mid + 1) * PER_FRAME - 1))
    assert set(range(FRAMES)) - in_bad <= set(seqs), "every frame outside the damage loads"
    assert seqs == sorted(seqs) and len(seqs) < FRAMES
    assert len(notes) == 1 and "damaged compressed block skipped" in notes[0]
    assert f"{FRAMES - len(seqs)} polls missing" in notes[0]

    data, stderr = _report(path)
    assert data["samples"] == len(seqs)
    assert data["skipped_lines"] >= 1
    assert any("damaged compressed block" in n for n in data["file_notes"])  # type: ignore[union-attr]
    assert "damaged compressed block" in stderr


@pytest.mark.parametrize("kind", ["zstandard", pytest.param("zstd-cli", marks=needs_cli)])
def test_a_zstd_file_cut_mid_block_says_it_ended_early(tmp_path: Path, kind: str) -> None:
    frames = _frames(kind, tmp_path)
    whole = b"".join(frames)
    # Cut inside the 7th frame's (only) block: its text cannot be decoded in part.
    start = sum(len(f) for f in frames[:6])
    path = tmp_path / "run.jsonl.zst"
    path.write_bytes(whole[:start + len(frames[6]) // 2])

    seqs, notes = _read(path)
    assert seqs == list(range(6 * PER_FRAME - 1)), "everything before the cut frame loads"
    assert len(notes) == 1 and "ended early" in notes[0]

    data, stderr = _report(path)
    assert data["samples"] == len(seqs)
    assert data["skipped_lines"] == 1
    assert any("ended early" in n for n in data["file_notes"])  # type: ignore[union-attr]
    assert "ended early" in stderr


def test_a_gzip_file_cut_mid_member_counts_the_torn_line(tmp_path: Path) -> None:
    """The gzip path the zstd one is held to: the cut's torn line is skipped and said."""
    whole = b"".join(_gzip_members())
    path = tmp_path / "run.jsonl.gz"
    path.write_bytes(whole[: len(whole) * 2 // 3])
    data, _ = _report(path)
    assert data["skipped_lines"] == 1
    assert any("truncated" in n for n in data["file_notes"])  # type: ignore[union-attr]


def test_an_unfinished_block_of_our_own_writer_is_not_a_cut(tmp_path: Path) -> None:
    """This project's writer flushes a block per line: a file that stops there lost nothing."""
    from gpusat_tui.sources.recording.recorder import Recorder, make_header

    path = tmp_path / "run.jsonl.zst"
    rec = Recorder(path, make_header({"hy-smi": "1.0"}, 1.0))
    try:
        for seq in range(20):
            rec.write(rich_frame(seq))
        seqs, notes = _read(path)  # the block is still open: no end marker, no index
    finally:
        rec.close()
    assert seqs == list(range(20))
    assert notes == []
