"""The recorder: header, one whole flushed line per frame, and files that survive being killed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gpusat_tui import __version__
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.collectors import all_specs
from gpusat_tui.errors import RecordingError
from gpusat_tui.model import SCHEMA_VERSION, Frame, RecordingHeader
from gpusat_tui.sources import FrameSource
from gpusat_tui.sources.recording.reader import read_recording
from gpusat_tui.sources.recording.recorder import Recorder, make_header
from gpusat_tui.sources.recording.recording_source import RecordingSource
from tests.fakes.tool import FakeBin, Step
from tests.recording_helpers import ListSource, header, rich_frame, write_recording
from tests.scenarios import SCENARIOS, Scenario

REPO = Path(__file__).resolve().parents[2]


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    frames = [rich_frame(i) for i in range(12)]
    path = write_recording(tmp_path / "s.jsonl", frames)
    hdr, reader = read_recording(path)
    assert hdr == header()
    back = list(reader)
    assert back == frames
    assert reader.skipped == 0
    assert reader.unknown_fields == set()
    # Spot-check that None, extras and raw text survived as themselves.
    assert back[0].cards[0].power_w is None
    assert back[3].raw == {"hy-smi": "garbage \x1b[31m output\n"}
    assert back[5].cards[1].extras == {"hbm_bw_pct": 12.5, "note": "x", "missing": None}


def test_file_layout_is_header_then_one_frame_per_line(tmp_path: Path) -> None:
    frames = [rich_frame(i) for i in range(3)]
    path = write_recording(tmp_path / "s.jsonl", frames)
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""  # ends with a newline: no torn last line
    assert len(lines) == 1 + 3 + 1
    head = json.loads(lines[0])
    assert head["type"] == "header"
    assert head["schema_version"] == SCHEMA_VERSION
    assert [json.loads(line)["seq"] for line in lines[1:4]] == [0, 1, 2]
    # Raw figures only: no verdict is ever written.
    assert b"verdict" not in path.read_bytes()


def test_each_line_is_one_write_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bytes] = []
    real_write = os.write

    def spy(fd: int, data: bytes) -> int:
        calls.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spy)
    with Recorder(tmp_path / "s.jsonl", header()) as rec:
        for i in range(5):
            rec.write(rich_frame(i))
    assert len(calls) == 6
    assert all(c.endswith(b"\n") and c.count(b"\n") == 1 for c in calls)
    assert rec.frames_written == 5
    assert rec.bytes_written == sum(len(c) for c in calls) == (tmp_path / "s.jsonl").stat().st_size


def test_short_write_is_completed_not_torn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    state = {"n": 0}

    def short(fd: int, data: bytes) -> int:
        state["n"] += 1
        if state["n"] == 2:  # the first frame line goes out in two pieces
            return real_write(fd, data[:10])
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", short)
    path = tmp_path / "s.jsonl"
    with Recorder(path, header()) as rec:
        rec.write(rich_frame(0))
        rec.write(rich_frame(1))
    monkeypatch.undo()
    _, reader = read_recording(path)
    assert [f.seq for f in reader] == [0, 1]
    assert reader.skipped == 0


def test_header_is_written_at_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    rec = Recorder(path, header())
    try:
        # Killed before the first poll: the file is still a valid, empty recording.
        hdr, reader = read_recording(path)
        assert hdr == header()
        assert list(reader) == []
    finally:
        rec.close()


def test_make_header_says_who_where_what(monkeypatch: pytest.MonkeyPatch) -> None:
    before = time.time()
    hdr = make_header({"hy-smi": "1.4", "rocm-smi": None}, 0.5)
    assert hdr.schema_version == SCHEMA_VERSION
    assert hdr.gpusat_tui_version == __version__
    assert hdr.host == socket.gethostname()
    assert hdr.tools == {"hy-smi": "1.4", "rocm-smi": None}
    assert hdr.interval_s == 0.5
    assert hdr.started_at is not None and before <= hdr.started_at <= time.time()


def test_unwritable_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match=r"cannot record to .*nope.*s\.jsonl"):
        Recorder(tmp_path / "nope" / "s.jsonl", header())


def test_write_after_close_is_an_error_and_close_twice_is_fine(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "s.jsonl", header())
    rec.close()
    rec.close()
    assert rec.closed
    with pytest.raises(RecordingError, match="already closed"):
        rec.write(rich_frame(0))


def test_with_block_closes_recorder_and_reader_and_keeps_the_error(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with pytest.raises(KeyError, match="boom"), Recorder(path, header()) as rec:
        rec.write(rich_frame(0))
        raise KeyError("boom")
    assert rec.closed
    _, reader = read_recording(path)
    with pytest.raises(KeyError, match="bang"), reader as same:
        assert same is reader
        assert next(reader) == rich_frame(0)
        raise KeyError("bang")
    assert reader.closed


def test_update_header_only_before_first_frame(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Recorder(path, header()) as rec:
        new = header().model_copy(update={"tools": {"hy-smi": "9.9"}})
        rec.update_header(new)
        rec.write(rich_frame(0))
        with pytest.raises(RecordingError, match="before the first frame"):
            rec.update_header(header())
    hdr, reader = read_recording(path)
    assert hdr.tools == {"hy-smi": "9.9"}
    assert [f.seq for f in reader] == [0]


async def test_recording_source_passes_frames_through_and_records(tmp_path: Path) -> None:
    frames = [rich_frame(i) for i in range(6)]
    inner = ListSource(frames, versions={"hy-smi": "1.4.2", "rocm-smi": None})
    hdr = make_header({"hy-smi": None}, 1.0)
    src = RecordingSource(inner, tmp_path / "run.jsonl", hdr)
    assert isinstance(src, FrameSource)
    assert src.label == "memory · recording to run.jsonl"
    seen = [f async for f in src.frames()]
    await src.aclose()
    assert seen == frames
    assert inner.closed
    back_header, reader = read_recording(tmp_path / "run.jsonl")
    assert list(reader) == frames
    # Versions learnt on the first poll made it into the header.
    assert back_header.tools == {"hy-smi": "1.4.2", "rocm-smi": None}
    assert back_header.host == hdr.host


async def test_consumer_crash_loses_no_written_frame(tmp_path: Path) -> None:
    frames = [rich_frame(i) for i in range(10)]
    src = RecordingSource(ListSource(frames), tmp_path / "run.jsonl", header())
    with pytest.raises(RuntimeError):
        async for frame in src.frames():
            if frame.seq == 4:
                raise RuntimeError("UI crashed")
    _, reader = read_recording(tmp_path / "run.jsonl")
    # Each frame is written before it is handed on, so the one that crashed the UI is kept.
    assert [f.seq for f in reader] == [0, 1, 2, 3, 4]
    await src.aclose()
    assert src.recorder.closed


_RECORDING_SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    from gpusat_tui.model import CardReading, Frame
    from gpusat_tui.sources.recording.recorder import make_header
    from gpusat_tui.sources.recording.recording_source import RecordingSource

    class Busy:
        label = "busy"
        async def frames(self):
            i = 0
            while True:
                # ~40 KiB lines: a torn write would show up as a broken line.
                yield Frame(t=1000.0 + i, seq=i, raw={"tool": "x" * 40000},
                            cards=[CardReading(vendor="amd", index=0, util_pct=i % 100)])
                i += 1
                await asyncio.sleep(0.002)
        async def aclose(self):
            pass

    async def main():
        src = RecordingSource(Busy(), sys.argv[1], make_header({}, 0.002))
        async for frame in src.frames():
            if frame.seq == 20:
                print("ready", flush=True)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)
    """
)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_killed_recorder_leaves_every_line_parseable(tmp_path: Path, sig: signal.Signals) -> None:
    """A real signal to a real recording process, mid-stream: every line still parses."""
    script = tmp_path / "rec.py"
    script.write_text(_RECORDING_SCRIPT)
    path = tmp_path / "killed.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path)], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.1)
        proc.send_signal(sig)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    data = path.read_bytes()
    # SIGKILL can cut the line being written: Linux ends a write to a regular file early when
    # a fatal signal is pending (seen once beside a disk hog, with these 40 KiB lines). That
    # torn line can only be the last one; the reader skips it and loses nothing before it.
    torn = not data.endswith(b"\n")
    assert not torn or sig == signal.SIGKILL, data[-200:]
    lines = data.split(b"\n")[:-1]
    RecordingHeader.model_validate_json(lines[0])
    seqs = [Frame.model_validate_json(line).seq for line in lines[1:]]
    assert len(seqs) > 20
    assert seqs == list(range(len(seqs)))
    _, reader = read_recording(path)
    assert sum(1 for _ in reader) == len(seqs)
    assert reader.skipped == (1 if torn else 0)


# -- the real CLI: `check --record` against fake vendor tools ----------------------------------


def _fake_scenario_tool(fake_bin: FakeBin, scenario: Scenario, polls: int,
                        modes: dict[int, str] | None = None) -> None:
    spec = next(s for s in all_specs() if s.tool == scenario.tool)
    modes = modes or {}
    steps = [
        Step(cards=tuple(scenario.cards(k)), processes=tuple(scenario.tool_processes(k)),
             mode=modes.get(k, "normal"))
        for k in range(polls)
    ]
    fake_bin.add_for_spec(spec, steps)


def _check_cmd(out: Path, duration: float, interval: float) -> list[str]:
    return [
        sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", f"{duration:g}",
        "--interval", f"{interval:g}", "--record", str(out),
    ]


_FIGURES = ("name", "util_pct", "mem_used_mib", "mem_total_mib", "power_w", "power_cap_w",
            "temp_c")


def test_check_record_round_trip_same_figures_and_verdicts(
    fake_bin: FakeBin, tmp_path: Path
) -> None:
    scenario = SCENARIOS["starving_input_bound"]
    _fake_scenario_tool(fake_bin, scenario, 8)
    out = tmp_path / "rec.jsonl"
    run = subprocess.run(_check_cmd(out, 2.0, 0.25), env=fake_bin.env(), cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    checked = json.loads(run.stdout)
    hdr, reader = read_recording(out)
    assert hdr.interval_s == 0.25 and "nvidia-smi" in hdr.tools
    frames = list(reader)
    assert reader.skipped == 0
    assert len(frames) == checked["samples"] == 8
    # The recorded figures are the scenario's, poll by poll.
    for frame in frames:
        want = scenario.card_readings(frame.seq)
        assert [c.model_dump(include=set(_FIGURES)) for c in frame.cards] == [
            c.model_dump(include=set(_FIGURES)) for c in want
        ]
    # Re-judged on read, the recording gives the verdicts check printed live.
    tracker = VerdictTracker(window_s=30.0)
    for frame in frames:
        assessment = tracker.push(frame)
    assert {cid: v.kind for cid, v in assessment.cards.items()} == {
        c["id"]: c["verdict"]["kind"] for c in checked["cards"]
    }
    # And `report` computes the same per-card figures as check did.
    report = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "report", str(out), "--json"],
        env=fake_bin.env(), cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert report.returncode == 0, report.stderr
    reported = json.loads(report.stdout)
    assert reported["samples"] == checked["samples"]
    for mine, theirs in zip(reported["cards"], checked["cards"], strict=True):
        for key in ("id", "util_pct", "mem_pct", "mem_used_mib", "power_w", "temp_c",
                    "mem_total_mib", "power_cap_w"):
            assert mine[key] == theirs[key], key


def test_crashing_tool_is_recorded_not_fatal(fake_bin: FakeBin, tmp_path: Path) -> None:
    scenario = SCENARIOS["saturated_steady"]
    _fake_scenario_tool(fake_bin, scenario, 8, modes={2: "fail", 3: "garbage", 5: "fail"})
    out = tmp_path / "rec.jsonl"
    run = subprocess.run(_check_cmd(out, 2.0, 0.25), env=fake_bin.env(), cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    _, reader = read_recording(out)
    frames = list(reader)
    assert reader.skipped == 0 and len(frames) == 8
    failed = [f.seq for f in frames if any(e.tool == "nvidia-smi" for e in f.errors)]
    # (Which polls fail depends on the live source's fallback to the table view; at least
    # the garbage and a later failure of the fallback reach the recording as errors.)
    assert len(failed) >= 2
    kinds = {e.kind for f in frames for e in f.errors}
    assert kinds >= {"exit", "parse"}
    # The failed polls keep the card, marked stale, so nothing blinks out of the recording.
    assert all(f.cards and f.cards[0].stale_s is not None for f in frames if f.seq in failed)
    assert all(f.cards[0].stale_s is None for f in frames if f.seq not in failed)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_to_check_record_leaves_a_valid_file(
    fake_bin: FakeBin, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """A real Ctrl-C (SIGINT) or SIGTERM to a real `check --record --duration 30`."""
    _fake_scenario_tool(fake_bin, SCENARIOS["starving_input_bound"], 20)
    out = tmp_path / "rec.jsonl"
    proc = subprocess.Popen(_check_cmd(out, 30.0, 0.2), env=fake_bin.env(), cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if out.exists() and out.read_bytes().count(b"\n") >= 5:  # header + 4 frames
                break
            time.sleep(0.05)
        else:
            pytest.fail("check --record wrote no frames")
        proc.send_signal(sig)
        stdout, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code
    data = out.read_bytes()
    assert data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    RecordingHeader.model_validate_json(lines[0])
    frames = [Frame.model_validate_json(line) for line in lines[1:]]
    assert [f.seq for f in frames] == list(range(len(frames)))
    # What check printed covers exactly the polls in the file.
    assert json.loads(stdout)["samples"] == len(frames) >= 4
