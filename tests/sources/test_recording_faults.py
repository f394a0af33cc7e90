"""Recordings are never lost: existing files, the replayed file, full disks, dead ends.

The disk-full cases run on a real, tiny tmpfs (mounting needs root; skipped with the reason
otherwise) and on ``/dev/full``; the CLI cases run the real ``check`` against fake tools.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpusat_tui.collectors import all_specs
from gpusat_tui.errors import RecordingError
from gpusat_tui.model import Frame, RecordingHeader
from gpusat_tui.sources.recording.reader import read_recording
from gpusat_tui.sources.recording.recorder import Recorder
from gpusat_tui.sources.recording.recording_source import RecordingSource
from tests.fakes.tool import FakeBin, Step
from tests.recording_helpers import ListSource, header, rich_frame, write_recording
from tests.scenarios import SCENARIOS

REPO = Path(__file__).resolve().parents[2]


# -- a real small disk -------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 256 KiB tmpfs, filled up to leave about 4 KiB free. Needs mount rights."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    try:
        run = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0777", "tmpfs", str(mnt)],
            capture_output=True, text=True, timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    if run.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {run.stderr.strip() or run.returncode}")
    try:
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        (mnt / "filler").write_bytes(b"\0" * max(0, free - 4 * 1024))
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=10)


def _assert_valid_recording(path: Path) -> list[Frame]:
    """Every line whole and parseable, header first, ending with a newline."""
    data = path.read_bytes()
    assert data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    RecordingHeader.model_validate_json(lines[0])
    frames = [Frame.model_validate_json(line) for line in lines[1:]]
    _, reader = read_recording(path)
    assert len(list(reader)) == len(frames)
    assert reader.skipped == 0
    return frames


# -- existing files: an explicit choice, always -----------------------------------------------


def test_an_existing_recording_is_never_truncated_without_a_choice(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "run.jsonl", [rich_frame(i) for i in range(3)])
    before = path.read_bytes()
    with pytest.raises(RecordingError, match=r"already exists.*--append.*--force"):
        Recorder(path, header())
    assert path.read_bytes() == before


def test_an_empty_existing_file_holds_nothing_to_lose(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.touch()
    with Recorder(path, header()) as rec:
        rec.write(rich_frame(0))
    assert [f.seq for f in _assert_valid_recording(path)] == [0]


def test_force_overwrites(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "run.jsonl", [rich_frame(i) for i in range(3)])
    with Recorder(path, header(), mode="overwrite") as rec:
        rec.write(rich_frame(7))
    assert [f.seq for f in _assert_valid_recording(path)] == [7]


def test_append_keeps_the_header_and_continues_the_sequence(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "run.jsonl", [rich_frame(i) for i in range(3)])
    first_header = path.read_bytes().split(b"\n")[0]
    other = header().model_copy(update={"host": "elsewhere"})
    with Recorder(path, other, mode="append") as rec:
        assert rec.appended and rec.seq_offset == 3
        rec.update_header(other.model_copy(update={"tools": {"x": "1"}}))  # no-op on append
        for i in range(2):
            rec.write(rich_frame(i, t0=1_800_000_000.0))
    assert path.read_bytes().split(b"\n")[0] == first_header
    assert [f.seq for f in _assert_valid_recording(path)] == [0, 1, 2, 3, 4]


def test_append_after_a_torn_last_line_keeps_that_line_apart(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "run.jsonl", [rich_frame(i) for i in range(2)])
    with path.open("ab") as fh:
        fh.write(b'{"t": 1700000002.0, "seq": 2, "cards": [{"vend')  # killed mid-write
    with Recorder(path, header(), mode="append") as rec:
        rec.write(rich_frame(0))  # a new session's first poll
    _, reader = read_recording(path)
    assert [f.seq for f in reader] == [0, 1, 2]  # continues after the last *good* frame (1)
    assert reader.skipped == 1  # the torn line, alone on its line


def test_append_refuses_a_file_that_is_not_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my precious notes\n")
    with pytest.raises(RecordingError, match=r"cannot append.*not JSON"):
        Recorder(path, header(), mode="append")
    assert path.read_text() == "my precious notes\n"


def test_append_to_a_missing_file_starts_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    with Recorder(path, header(), mode="append") as rec:
        rec.write(rich_frame(0))
    assert len(_assert_valid_recording(path)) == 1


@pytest.mark.parametrize("how", ["same path", "symlink", "hard link", "other spelling"])
@pytest.mark.parametrize("mode", ["new", "overwrite", "append"])
def test_the_replayed_file_is_never_a_record_target(tmp_path: Path, how: str, mode: str) -> None:
    source = write_recording(tmp_path / "run.jsonl", [rich_frame(i) for i in range(3)])
    before = source.read_bytes()
    target = {
        "same path": source,
        "symlink": tmp_path / "link.jsonl",
        "hard link": tmp_path / "hard.jsonl",
        "other spelling": tmp_path / "." / "run.jsonl",
    }[how]
    if how == "symlink":
        target.symlink_to(source)
    elif how == "hard link":
        os.link(source, target)
    with pytest.raises(RecordingError, match="recording being replayed"):
        Recorder(target, header(), mode=mode, protect=[source])  # type: ignore[arg-type]
    assert source.read_bytes() == before


def test_a_fifo_nobody_reads_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(RecordingError, match="FIFO that nobody reads"):
        Recorder(fifo, header())


# -- full disks -------------------------------------------------------------------------------


def test_dev_full_at_the_start_is_one_clear_error() -> None:
    with pytest.raises(RecordingError, match="No space left on device"):
        Recorder("/dev/full", header())


async def test_a_full_disk_stops_the_recording_not_the_stream(small_disk: Path) -> None:
    frames = [rich_frame(i) for i in range(40)]  # ~1.3 KiB each: the disk fills part-way
    said: list[str] = []
    path = small_disk / "run.jsonl"
    src = RecordingSource(ListSource(frames), path, header(), on_failure=said.append)
    seen = [f async for f in src.frames()]
    await src.aclose()
    # Every frame went on to the consumer, in order, however the recording fared.
    assert [f.seq for f in seen] == list(range(40))
    assert src.failure is not None and len(said) == 1
    assert "No space left on device" in said[0] and "monitoring goes on" in said[0]
    assert "RECORDING STOPPED (No space left on device)" in src.label
    # The failure is on the frame that could not be written, once.
    noted = [f.seq for f in seen if any("recording stopped" in n for n in f.notes)]
    assert len(noted) == 1
    kept = _assert_valid_recording(path)
    assert 0 < len(kept) < 40
    assert [f.seq for f in kept] == list(range(len(kept)))
    assert noted[0] == len(kept)  # the first frame that did not fit
    assert src.recorder.frames_written == len(kept)


def test_a_partial_write_is_cut_back_to_the_last_whole_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC after half a line went out (as a real disk does): the half line is removed."""
    real_write = os.write
    calls = {"n": 0}

    def failing(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 1:  # the third frame: half of it, then the disk is full
            return real_write(fd, data[: len(data) // 2])
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    path = tmp_path / "run.jsonl"
    rec = Recorder(path, header())
    rec.write(rich_frame(0))
    rec.write(rich_frame(1))
    monkeypatch.setattr(os, "write", failing)
    with pytest.raises(RecordingError, match="No space left"):
        rec.write(rich_frame(2))
    monkeypatch.undo()
    assert rec.closed
    assert [f.seq for f in _assert_valid_recording(path)] == [0, 1]


def test_eio_is_handled_like_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.jsonl"
    said: list[str] = []
    frames = [rich_frame(i) for i in range(5)]
    src = RecordingSource(ListSource(frames), path, header(), on_failure=said.append)
    real_write = os.write

    def eio(fd: int, data: bytes) -> int:
        if b'"seq":3' in data:
            raise OSError(5, "Input/output error")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", eio)

    async def run() -> list[Frame]:
        return [f async for f in src.frames()]

    import asyncio

    seen = asyncio.run(run())
    monkeypatch.undo()
    assert [f.seq for f in seen] == [0, 1, 2, 3, 4]
    assert len(said) == 1 and "Input/output error" in said[0]
    assert [f.seq for f in _assert_valid_recording(path)] == [0, 1, 2]


# -- the real CLI -----------------------------------------------------------------------------


def _fake_tool(fake_bin: FakeBin, polls: int = 60) -> None:
    scenario = SCENARIOS["saturated_steady"]
    spec = next(s for s in all_specs() if s.tool == scenario.tool)
    fake_bin.add_for_spec(
        spec,
        [Step(cards=tuple(scenario.cards(k)), processes=tuple(scenario.tool_processes(k)))
         for k in range(polls)],
    )


def _gpusat(fake_bin: FakeBin, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpusat_tui", *args], env=fake_bin.env(), cwd=REPO,
        capture_output=True, text=True, timeout=timeout,
    )


def test_check_refuses_an_existing_recording_and_leaves_it(fake_bin: FakeBin,
                                                           tmp_path: Path) -> None:
    _fake_tool(fake_bin)
    path = write_recording(tmp_path / "run.jsonl", [rich_frame(i) for i in range(3)])
    before = path.read_bytes()
    run = _gpusat(fake_bin, "check", "--duration", "0.3", "--interval", "0.1",
                  "--record", str(path))
    assert run.returncode == 2
    assert "already exists" in run.stderr and "--force" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
    assert path.read_bytes() == before
    run = _gpusat(fake_bin, "check", "--json", "--duration", "0.3", "--interval", "0.1",
                  "--record", str(path), "--append")
    assert run.returncode == 0, run.stderr
    frames = _assert_valid_recording(path)
    assert [f.seq for f in frames][:3] == [0, 1, 2] and len(frames) > 3
    assert path.read_bytes().startswith(before)


def test_replay_and_record_of_the_same_file_is_refused(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "run.jsonl", [rich_frame(i) for i in range(3)])
    (tmp_path / "link.jsonl").symlink_to(path)
    before = path.read_bytes()
    for target, extra in ((path, []), (tmp_path / "link.jsonl", ["--force"]),
                          (tmp_path / "link.jsonl", ["--append"])):
        run = subprocess.run(
            [sys.executable, "-m", "gpusat_tui", "--replay", str(path), "--record", str(target),
             *extra],
            cwd=REPO, capture_output=True, text=True, timeout=60,
        )
        assert run.returncode == 2
        assert "recording being replayed" in run.stderr, run.stderr
        assert "Traceback" not in run.stderr
        assert path.read_bytes() == before


def test_check_on_a_full_disk_keeps_polling_and_reports(fake_bin: FakeBin,
                                                        small_disk: Path) -> None:
    _fake_tool(fake_bin)
    path = small_disk / "run.jsonl"
    run = _gpusat(fake_bin, "check", "--json", "--duration", "3", "--interval", "0.1",
                  "--record", str(path))
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "recording stopped" in lines[0]
    assert "No space left on device" in lines[0]
    report = json.loads(run.stdout)
    assert report["samples"] >= 8  # polling went on after the disk filled
    kept = _assert_valid_recording(path)
    assert 0 < len(kept) < report["samples"]
    assert sum("recording stopped" in n for n in report["notes"]) == 1


def test_check_record_to_dev_full_is_refused_at_the_start(fake_bin: FakeBin) -> None:
    _fake_tool(fake_bin)
    run = _gpusat(fake_bin, "check", "--duration", "0.3", "--record", "/dev/full")
    assert run.returncode == 2
    assert "No space left on device" in run.stderr and "Traceback" not in run.stderr
