"""Compressed recordings (zstd, gzip), rotation and following a live recording.

Real files, real child processes and real signals: the recorder runs in a child that prints
each frame's seq once `Recorder.write` returned, so the test knows exactly what must be in the
file whatever kills it.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import zstandard

from gpusat_tui import cli
from gpusat_tui.commands import option_values
from gpusat_tui.commands.report import analyse
from gpusat_tui.errors import RecordingError
from gpusat_tui.model import Frame
from gpusat_tui.sources.recording import block_index
from gpusat_tui.sources.recording.block_index import format_for_name, part_path, sniff
from gpusat_tui.sources.recording.codec import session_paths
from gpusat_tui.sources.recording.reader import read_recording
from gpusat_tui.sources.recording.recorder import Recorder, make_header
from gpusat_tui.sources.recording.replay import ReplaySource
from tests.recording_helpers import rich_frame

REPO = Path(__file__).resolve().parents[2]
SUFFIXES = {"plain": ".jsonl", "gzip": ".jsonl.gz", "zstd": ".jsonl.zst"}


def record(path: Path, n: int, *, start: int = 0, **kw: object) -> Recorder:
    with Recorder(path, make_header({"hy-smi": "1.0"}, 1.0), **kw) as rec:  # type: ignore[arg-type]
        for seq in range(start, start + n):
            rec.write(rich_frame(seq))
    return rec


def frames_of(path: object) -> tuple[list[Frame], list[str]]:
    _, reader = read_recording(path)  # type: ignore[arg-type]
    with reader:
        frames = list(reader)
        return frames, reader.notes


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of ~3 frames, so that a short recording has many of them."""
    monkeypatch.setattr(block_index, "BLOCK_BYTES", 8 * 1024)


@pytest.mark.parametrize("fmt", list(SUFFIXES))
def test_round_trip_each_format(tmp_path: Path, fmt: str, small_blocks: None) -> None:
    path = tmp_path / f"run{SUFFIXES[fmt]}"
    record(path, 40)
    assert format_for_name(path) == fmt
    assert sniff(path.read_bytes()[:4]) == fmt
    frames, notes = frames_of(path)
    assert frames == [rich_frame(seq) for seq in range(40)]
    assert notes == []


def test_compressed_files_are_smaller_and_standard(tmp_path: Path, small_blocks: None) -> None:
    """zstd -d / gunzip read them (our index records are skipped) and give the plain text."""
    for fmt in SUFFIXES:
        record(tmp_path / f"run{SUFFIXES[fmt]}", 60)
    plain = (tmp_path / "run.jsonl").read_bytes()
    text_gz = gzip.decompress((tmp_path / "run.jsonl.gz").read_bytes())
    zst = (tmp_path / "run.jsonl.zst").read_bytes()
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(zst), read_across_frames=True)
    text_zst = reader.read()
    # The header line carries started_at, which differs between the three files.
    assert text_gz.split(b"\n")[1:] == plain.split(b"\n")[1:]
    assert text_zst.split(b"\n")[1:] == plain.split(b"\n")[1:]
    assert len(zst) < len(plain) / 4
    assert (tmp_path / "run.jsonl.gz").stat().st_size < len(plain) / 3


def test_format_is_read_from_the_bytes_not_the_name(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl.zst"
    record(path, 5)
    lying = tmp_path / "run.jsonl"
    path.rename(lying)
    frames, _ = frames_of(lying)
    assert [f.seq for f in frames] == list(range(5))


@pytest.mark.parametrize("fmt", ["gzip", "zstd"])
def test_tail_cut_mid_block_loads_everything_before_the_cut(
    tmp_path: Path, fmt: str, small_blocks: None
) -> None:
    path = tmp_path / f"run{SUFFIXES[fmt]}"
    record(path, 30)
    data = path.read_bytes()
    # Cut inside the last data block (before its end marker and index record).
    for cut in (len(data) - 60, len(data) - 200, len(data) * 2 // 3):
        path.write_bytes(data[:cut])
        frames, notes = frames_of(path)
        seqs = [f.seq for f in frames]
        assert seqs == list(range(len(seqs))), "frames before the cut come back in order"
        assert len(seqs) >= 30 * cut // len(data) - 4
        assert len(notes) <= 1


@pytest.mark.parametrize("fmt", ["gzip", "zstd"])
def test_a_damaged_block_in_the_middle_is_skipped_and_counted(
    tmp_path: Path, fmt: str, small_blocks: None
) -> None:
    path = tmp_path / f"run{SUFFIXES[fmt]}"
    record(path, 60)
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 40] = bytes(40)  # zeroes: a broken stretch of one block
    path.write_bytes(bytes(data))
    frames, notes = frames_of(path)
    seqs = [f.seq for f in frames]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert 60 - 8 <= len(seqs) < 60, "one block (~3 frames) lost, the rest loads"
    assert seqs[0] == 0 and seqs[-1] == 59
    assert any("damaged compressed block" in n for n in notes)


def test_a_damaged_index_record_falls_back_to_a_scan(tmp_path: Path, small_blocks: None) -> None:
    path = tmp_path / "run.jsonl.zst"
    record(path, 40)
    data = bytearray(path.read_bytes())
    at = data.find(b"GSTI", len(data) // 2)
    data[at + 10] ^= 0xFF  # break its CRC: the chain from the end stops there
    path.write_bytes(bytes(data))
    frames, _ = frames_of(path)
    assert [f.seq for f in frames] == list(range(40))


@pytest.mark.parametrize("fmt", list(SUFFIXES))
def test_seek_in_a_compressed_replay(tmp_path: Path, fmt: str, small_blocks: None) -> None:
    path = tmp_path / f"run{SUFFIXES[fmt]}"
    record(path, 200)

    async def main() -> list[int]:
        src = ReplaySource(path, realtime=False, hold_at_end=False)
        assert src.duration == pytest.approx(199.0)
        seen: list[int] = []
        async for frame in src.frames():
            seen.append(frame.seq)
            if frame.seq == 10:
                src.seek(100.0)  # to t0 + 110
            if len(seen) > 5 and frame.seq >= 112:
                break
        await src.aclose()
        return seen

    seen = asyncio.run(main())
    assert seen[:11] == list(range(11))
    assert seen[11] in (110, 111)


def test_rotation_by_size_writes_parts_read_back_as_one_session(tmp_path: Path) -> None:
    base = tmp_path / "run.jsonl.zst"
    rec = record(base, 120, max_bytes=2 * 1024)
    assert len(rec.parts) >= 3
    assert rec.parts[1] == tmp_path / "run.0001.jsonl.zst"
    for i, part in enumerate(rec.parts):
        header, reader = read_recording(part)
        reader.close()
        assert header.part == i
    frames, notes = frames_of(str(tmp_path / "run*.jsonl.zst"))  # a quoted glob
    assert [f.seq for f in frames] == list(range(120))
    assert notes == []
    # Given out of order, they are put back in time order.
    frames, _ = frames_of([str(p) for p in reversed(rec.parts)])
    assert [f.seq for f in frames] == list(range(120))
    report = analyse(rec.parts)
    assert report.samples == 120


def test_rotation_by_age(tmp_path: Path) -> None:
    now = [0.0]
    base = tmp_path / "run.jsonl.gz"
    with Recorder(base, make_header({}, 1.0), max_age_s=10, clock=lambda: now[0]) as rec:
        for seq in range(35):
            rec.write(rich_frame(seq))
            now[0] += 1.0
    assert [p.name for p in rec.parts] == [
        "run.jsonl.gz", "run.0001.jsonl.gz", "run.0002.jsonl.gz", "run.0003.jsonl.gz",
    ]
    frames, _ = frames_of(session_paths(base, with_parts=True))
    assert [f.seq for f in frames] == list(range(35))


def test_part_names() -> None:
    assert part_path(Path("a/run.jsonl.zst"), 3) == Path("a/run.0003.jsonl.zst")
    assert part_path(Path("run.jsonl"), 12) == Path("run.0012.jsonl")
    assert part_path(Path("run.v2.jsonl.gz"), 1) == Path("run.v2.0001.jsonl.gz")
    assert part_path(Path("run"), 1) == Path("run.0001")
    assert part_path(Path("run.jsonl"), 0) == Path("run.jsonl")


def test_a_part_from_a_newer_schema_is_refused(tmp_path: Path) -> None:
    rec = record(tmp_path / "run.jsonl", 30, max_bytes=8 * 1024)
    last = rec.parts[-1]
    lines = last.read_text().splitlines(keepends=True)
    lines[0] = lines[0].replace('"schema_version":1', '"schema_version":99')
    last.write_text("".join(lines))
    with pytest.raises(RecordingError, match="schema_version 99"):
        read_recording([str(p) for p in rec.parts])


def test_an_empty_glob_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="no recording matches"):
        read_recording(str(tmp_path / "nothing*.jsonl"))


# -- real processes ---------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {repo!r})
    from gpusat_tui.sources.recording import block_index
    block_index.BLOCK_BYTES = 8 * 1024
    from gpusat_tui.sources.recording.recorder import Recorder, make_header
    from tests.recording_helpers import rich_frame
    max_bytes = int(sys.argv[2]) or None
    with Recorder(sys.argv[1], make_header({{}}, 1.0), max_bytes=max_bytes) as rec:
        for seq in range(int(sys.argv[3])):
            rec.write(rich_frame(seq))
            print(seq, flush=True)
            time.sleep(float(sys.argv[4]))
    """
)


def start_recorder(
    tmp_path: Path, path: Path, *, n: int = 10_000, max_bytes: int = 0, pause: float = 0.01
) -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(repo=str(REPO)))
    return subprocess.Popen(
        [sys.executable, str(script), str(path), str(max_bytes), str(n), str(pause)],
        stdout=subprocess.PIPE, text=True, cwd=REPO,
    )


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
@pytest.mark.parametrize("fmt", ["gzip", "zstd"])
def test_a_killed_recorder_loses_nothing_it_wrote(
    tmp_path: Path, fmt: str, signum: signal.Signals
) -> None:
    path = tmp_path / f"run{SUFFIXES[fmt]}"
    child = start_recorder(tmp_path, path)
    assert child.stdout is not None
    written = [int(child.stdout.readline()) for _ in range(25)]
    child.send_signal(signum)
    rest = child.stdout.read()
    child.wait(timeout=10)
    written += [int(x) for x in rest.split()]
    frames, _ = frames_of(path)
    got = [f.seq for f in frames]
    assert got[: len(written)] == written, "every frame the recorder wrote is readable"
    assert got == list(range(len(got)))


def test_rotation_under_load_loses_no_frame(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl.zst"
    child = start_recorder(tmp_path, path, n=400, max_bytes=4 * 1024, pause=0.0)
    child.communicate(timeout=60)
    assert child.returncode == 0
    parts = session_paths(path, with_parts=True)
    assert len(parts) >= 3
    frames, notes = frames_of(parts)
    assert [f.seq for f in frames] == list(range(400))
    assert notes == []


@pytest.mark.parametrize("fmt", ["plain", "zstd"])
def test_follow_reads_what_a_live_recorder_appends_across_rotation(
    tmp_path: Path, fmt: str
) -> None:
    path = tmp_path / f"run{SUFFIXES[fmt]}"
    child = start_recorder(tmp_path, path, n=60, max_bytes=4 * 1024, pause=0.02)
    assert child.stdout is not None
    child.stdout.readline()  # the file exists and has its first frame

    async def follow() -> tuple[list[int], str]:
        src = ReplaySource(path, realtime=False, follow=True, follow_poll_s=0.02)
        label = src.label
        seen: list[int] = []

        async def collect() -> None:
            async for frame in src.frames():
                seen.append(frame.seq)
                if frame.seq == 59:
                    return

        try:
            await asyncio.wait_for(collect(), timeout=30)
        finally:
            await src.aclose()
        return seen, label

    try:
        seen, label = asyncio.run(follow())
    finally:
        child.wait(timeout=30)
    assert label.startswith("following run")
    assert seen == list(range(60))
    assert len(session_paths(path, with_parts=True)) >= 2, "the recorder rotated meanwhile"


@pytest.mark.parametrize("fmt", list(SUFFIXES))
@pytest.mark.parametrize("written", [0, 3, 20])
@pytest.mark.parametrize("moment", ["at-start", "while-following"])
def test_follow_waits_for_a_new_part_to_have_its_header(
    tmp_path: Path, fmt: str, written: int, moment: str
) -> None:
    """The recorder creates a part, then writes its header: a follower that looks in between
    (an empty file, a few bytes, a header half written), when it starts or while it follows,
    waits for the header instead of refusing the session or misreading the part."""
    made = tmp_path / "made"
    made.mkdir()
    rec = record(made / f"run{SUFFIXES[fmt]}", 60, max_bytes=4 * 1024)
    assert len(rec.parts) >= 2
    first, second = rec.parts[0].read_bytes(), rec.parts[1].read_bytes()
    n_first, n_second = len(frames_of(rec.parts[0])[0]), len(frames_of(rec.parts[1])[0])
    base = tmp_path / f"run{SUFFIXES[fmt]}"
    base.write_bytes(first)
    part1 = part_path(base, 1)
    if moment == "at-start":
        part1.write_bytes(second[:written])  # created, header not (all) written yet

    async def follow() -> list[int]:
        src = ReplaySource(base, realtime=False, follow=True, follow_poll_s=0.01)
        seen: list[int] = []

        async def collect() -> None:
            async for frame in src.frames():
                seen.append(frame.seq)
                if len(seen) == n_first + n_second:
                    return

        async def finish_part() -> None:
            # at_end is set before the follower first looks for the next part, and this task
            # runs only while the follower awaits: by then it has looked at least once.
            while not (src.at_end and len(seen) == n_first):
                await asyncio.sleep(0.005)
            if moment == "while-following":
                part1.write_bytes(second[:written])
                # Timers fire in deadline order: after a few of these naps as long as the
                # follower's, it has looked at the unfinished part again, however busy the host.
                for _ in range(4):
                    await asyncio.sleep(0.01)
            part1.write_bytes(second)

        try:
            await asyncio.wait_for(asyncio.gather(collect(), finish_part()), timeout=30)
        finally:
            await src.aclose()
        return seen

    assert asyncio.run(follow()) == list(range(n_first + n_second))


# -- command line -----------------------------------------------------------------------------


def test_cli_sizes_and_durations() -> None:
    assert option_values.byte_size("500M") == 500 << 20
    assert option_values.byte_size("2GiB") == 2 << 30
    assert option_values.byte_size("8192") == 8192
    assert option_values.duration("90") == 90.0
    assert option_values.duration("6h") == 6 * 3600.0
    assert option_values.duration("1d") == 86400.0


@pytest.mark.parametrize(
    "argv",
    [
        ["--record", "x.jsonl", "--record-max-size", "lots"],
        ["--record", "x.jsonl", "--record-max-size", "10"],
        ["check", "--record", "x.jsonl", "--record-max-age", "-1h"],
        ["--follow"],
    ],
)
def test_cli_refuses_bad_rotation_options(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2


def test_report_on_compressed_parts_from_the_cli(tmp_path: Path) -> None:
    rec = record(tmp_path / "run.jsonl.zst", 50, max_bytes=2 * 1024)
    out = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "report", "--json", *map(str, rec.parts)],
        capture_output=True, text=True, cwd=REPO, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.returncode == 0, out.stderr
    import json

    data = json.loads(out.stdout)
    assert data["samples"] == 50
