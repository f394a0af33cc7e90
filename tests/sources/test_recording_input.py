"""Recordings that are not recordings: streams, FIFOs, endless lines, clocks that step back,
figures no chart can draw. Each must give one clear line or a report, never a hang or a crash."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusat_tui.commands.report import analyse
from gpusat_tui.commands.report_text import render_text
from gpusat_tui.errors import RecordingError
from gpusat_tui.model import CardReading, Frame
from gpusat_tui.sources.recording.reader import (
    MAX_HEADER_BYTES,
    MAX_LINE_BYTES,
    FrameReader,
    read_recording,
)
from gpusat_tui.sources.recording.replay import ReplaySource
from tests.recording_helpers import header, rich_frame, write_recording

REPO = Path(__file__).resolve().parents[2]
PY = [sys.executable, "-m", "gpusat_tui"]


def _run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([*PY, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


# -- not regular files --------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["report"], ["report", "--json"], ["--replay"]])
def test_dev_zero_is_refused_with_one_line(command: list[str]) -> None:
    run = _run(*command, "/dev/zero")
    assert run.returncode in (1, 2)
    assert run.stderr.strip().splitlines() == [
        f"gpusat-tui{' report' if command[0] == 'report' else ''}: /dev/zero is a character "
        "device, not a recording file: only regular files are read"
    ]


@pytest.mark.parametrize("command", [["report"], ["--replay"]])
def test_a_fifo_nobody_writes_is_refused_at_once(tmp_path: Path, command: list[str]) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    run = _run(*command, str(fifo), timeout=30)  # a blocking open() would hang here
    assert run.returncode in (1, 2)
    assert "is a FIFO (named pipe), not a recording file" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="is a folder"):
        read_recording(tmp_path)


# -- endless lines ----------------------------------------------------------------------------


def test_a_header_line_without_end_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "endless.jsonl"
    with path.open("wb") as fh:  # 64 MiB of one "line" (sparse: costs no disk)
        fh.write(b'{"type": "header", "x": "')
        fh.truncate(64 << 20)
    with pytest.raises(RecordingError, match="first line is longer than 64 KiB"):
        read_recording(path)
    run = _run("report", str(path))
    assert run.returncode == 1 and "longer than 64 KiB" in run.stderr


def test_header_cap_is_what_the_readme_says() -> None:
    readme = (REPO / "docs" / "recording.md").read_text()
    assert f"{MAX_HEADER_BYTES // 1024} KiB" in readme
    assert f"{MAX_LINE_BYTES // (1 << 20)} MiB" in readme


def test_an_overlong_frame_line_is_skipped_and_counted(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import gpusat_tui.sources.recording.reader as reader_module

    monkeypatch.setattr(reader_module, "MAX_LINE_BYTES", 4096)
    path = write_recording(tmp_path / "run.jsonl", [rich_frame(0)])
    with path.open("ab") as fh:
        fh.write(b"x" * 100_000 + b"\n")  # one line far over the cap
        fh.write(rich_frame(1).model_dump_json().encode() + b"\n")
        fh.write(b"y" * 50_000)  # and a last one that never ends
    _, reader = read_recording(path)
    assert [f.seq for f in reader] == [0, 1]
    assert reader.skipped == 2
    assert all("longer than" in r for r in reader.reasons)


def test_reader_memory_stays_bounded_on_a_growing_file_without_newlines(tmp_path: Path) -> None:
    """A writer that never ends its line: the reader skips in chunks, never holds it."""
    path = write_recording(tmp_path / "run.jsonl", [rich_frame(0)])
    with path.open("ab") as fh:
        fh.truncate(path.stat().st_size + (256 << 20))  # 256 MiB of one sparse line
    # The child's own peak RSS is VmHWM: ru_maxrss would carry the pytest parent's high-water
    # mark across fork and exec (Linux keeps it), hundreds of MiB once torch is imported.
    code = (
        "import sys\n"
        "from gpusat_tui.sources.recording.replay import read_recording\n"
        "_, r = read_recording(sys.argv[1])\n"
        "n = sum(1 for _ in r)\n"
        "hwm = next(l for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
        "print(n, r.skipped, int(hwm.split()[1]) // 1024)\n"
    )
    run = subprocess.run([sys.executable, "-c", code, str(path)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    frames, skipped, peak_mib = (int(x) for x in run.stdout.split())
    assert (frames, skipped) == (1, 1)
    assert peak_mib < 200  # 256 MiB were never held at once (16 MiB line cap + chunks)


# -- clocks that step back ------------------------------------------------------------------------


def _stepped_back(tmp_path: Path) -> Path:
    """40 polls at 1 s; at poll 20 the clock is stepped back one hour (NTP, a VM restore)."""
    frames = []
    for i in range(40):
        t = 1.7e9 + i - (3600.0 if i >= 20 else 0.0)
        frames.append(rich_frame(i).model_copy(update={"t": t}))
    return write_recording(tmp_path / "stepped.jsonl", frames)


def test_report_orders_by_seq_and_says_the_clock_went_back(tmp_path: Path) -> None:
    report = analyse(_stepped_back(tmp_path))
    assert 39.0 <= report.duration_s <= 42.0  # 40 polls at 1 s, never negative
    assert any("clock went back 1 time" in n and "largest step 3599 s" in n for n in report.notes)
    data = report.to_json()
    for card in data.cards:
        assert sum(card.verdict_share.values()) == pytest.approx(1.0, abs=1e-3)
        assert all(s.end_s >= s.start_s >= 0 for s in card.worst)
    text = render_text(report, width=100)
    assert "polls over 4" in text and "-" not in text.splitlines()[0].split("over")[1]


def test_report_never_prints_a_negative_duration_even_when_all_goes_back(tmp_path: Path) -> None:
    frames = [rich_frame(i).model_copy(update={"t": 1.7e9 - i}) for i in range(10)]
    path = write_recording(tmp_path / "backwards.jsonl", frames)
    run = _run("report", str(path))
    assert run.returncode == 0, run.stderr
    first = run.stdout.splitlines()[0]
    assert "10 polls over 10 s" in first
    assert "clock went back 9 times" in run.stdout
    data = json.loads(_run("report", "--json", str(path)).stdout)
    assert data["duration_s"] >= 0


def test_the_windowed_report_of_a_stepped_back_long_file_is_sane(tmp_path: Path) -> None:
    report = analyse(_stepped_back(tmp_path), exact_card_polls=1, window_s=10)
    assert report.duration_s >= 0
    assert all(s.end_s >= s.start_s for runs in report.cards.values() for s in runs.runs)


def test_replay_counts_steps_back(tmp_path: Path) -> None:
    src = ReplaySource(_stepped_back(tmp_path), realtime=False)
    reader: FrameReader = src._reader
    while reader.read_frame() is not None:
        pass
    assert reader.steps_back == 1
    assert any("clock went back" in n for n in src.notes)


# -- figures no chart can draw --------------------------------------------------------------


def test_charts_skip_values_no_chart_can_draw(tmp_path: Path) -> None:
    frames = []
    for i in range(12):
        cards = [CardReading.model_construct(
            vendor="nvidia", index=0, name="x", util_pct=1e308 if i % 2 else 50.0,
            mem_pct=float("inf") if i % 3 else 40.0, power_w=1e300, power_cap_w=1e-300,
            mem_used_mib=None, mem_total_mib=None, temp_c=None, uuid=None, bus_id=None,
            extras={}, tool="t", stale_s=None,
        )]
        frames.append(Frame.model_construct(t=1.7e9 + i, seq=i, cards=cards, card_processes=[],
                                            processes=[], host=None, errors=[], notes=[],
                                            monitor_cpu_pct=None, raw={}))
    path = tmp_path / "absurd.jsonl"
    with path.open("w") as fh:
        fh.write(header().model_dump_json() + "\n")
        for frame in frames:  # what a broken or hostile writer could put in a file
            fh.write(json.dumps(frame.model_dump(), allow_nan=True) + "\n")
    for color in (False, True):
        text = render_text(analyse(path), width=80, color=color)
        assert "util %" in text
    run = _run("report", str(path))
    assert run.returncode == 0 and "Traceback" not in run.stderr


def test_report_does_not_chase_a_line_that_keeps_growing(tmp_path: Path) -> None:
    """A real writer appending to an endless last line while ``report`` reads the file."""
    path = write_recording(tmp_path / "growing.jsonl", [rich_frame(i) for i in range(5)])
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\n"
        "with open(sys.argv[1], 'ab', buffering=0) as fh:\n"
        "    for _ in range(3000):  # at most ~200 MiB, ~64 MiB/s\n"
        "        fh.write(b'x' * 65536); time.sleep(0.001)\n"
    ), str(path)])
    try:
        time.sleep(0.3)
        run = _run("report", str(path), timeout=60)
        still_growing = writer.poll() is None
    finally:
        writer.kill()
        writer.wait()
    assert run.returncode == 0, run.stderr  # and it returned, while the line still grew
    assert run.stdout.startswith("gpusat-tui report: growing.jsonl")
    assert still_growing  # it returned while the writer was still at it
