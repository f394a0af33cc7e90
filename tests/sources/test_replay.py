"""Reading recordings back: refusals, tolerated faults, pacing, pause, speed and seek."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusat_tui.errors import RecordingError
from gpusat_tui.model import SCHEMA_VERSION, Frame
from gpusat_tui.sources import FrameSource
from gpusat_tui.sources.recording.reader import read_recording
from gpusat_tui.sources.recording.replay import MAX_GAP_INTERVALS, SPEEDS, ReplaySource
from tests.recording_helpers import header, rich_frame, simple_frame, write_recording


class FakeTime:
    """An injected clock and sleep: sleeping advances the clock, nothing really waits."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


# -- refusals: one clear message ---------------------------------------------------------------


def test_empty_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(RecordingError, match=r"empty\.jsonl is empty: no header and no frames"):
        read_recording(path)


def test_no_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(simple_frame(0).model_dump_json() + "\n")
    with pytest.raises(RecordingError, match=r"has no header line \(its first line is a frame\)"):
        read_recording(path)


def test_not_json_first_line_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text("hello world\n")
    with pytest.raises(RecordingError, match="is not a gpusat-tui recording: its first line"):
        read_recording(path)


def test_newer_schema_is_refused_with_versions(tmp_path: Path) -> None:
    path = tmp_path / "new.jsonl"
    newer = header().model_dump() | {"schema_version": SCHEMA_VERSION + 1}
    path.write_text(json.dumps(newer) + "\n" + simple_frame(0).model_dump_json() + "\n")
    with pytest.raises(RecordingError) as info:
        read_recording(path)
    message = str(info.value)
    assert f"schema_version {SCHEMA_VERSION + 1}" in message
    assert f"reads up to {SCHEMA_VERSION}" in message
    assert "upgrade gpusat-tui" in message


def test_missing_file_and_folder_are_clear(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match=r"cannot open .*nothing\.jsonl"):
        read_recording(tmp_path / "nothing.jsonl")
    with pytest.raises(RecordingError, match="is a folder, not a recording"):
        read_recording(tmp_path)


def test_header_only_file_has_no_frames(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [])
    hdr, reader = read_recording(path)
    assert hdr == header()
    assert list(reader) == []


# -- tolerated faults: skipped and counted -------------------------------------------------------


def test_truncated_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    frames = [rich_frame(i) for i in range(5)]
    path = write_recording(tmp_path / "s.jsonl", frames)
    with path.open("ab") as fh:  # killed mid-write: half a line, no newline
        fh.write(rich_frame(5).model_dump_json().encode()[:300])
    _, reader = read_recording(path)
    assert list(reader) == frames
    assert reader.skipped == 1
    assert reader.reasons == ["line 7: truncated (the recording stopped mid-write)"]
    assert reader.notes[0].startswith("1 bad line skipped (line 7: truncated")


def test_corrupt_lines_are_skipped_with_reasons(tmp_path: Path) -> None:
    frames = [simple_frame(i) for i in range(6)]
    path = write_recording(tmp_path / "s.jsonl", frames)
    lines = lines_of(path)
    lines.insert(3, b"\x00\xff not json at all")  # becomes line 4
    lines.insert(5, b'{"t": "yesterday", "cards": []}')  # line 6
    lines.insert(6, header().model_dump_json().encode())  # line 7: files concatenated
    lines.insert(7, b"")  # a blank line: ignored, not counted
    path.write_bytes(b"\n".join(lines))
    _, reader = read_recording(path)
    assert list(reader) == frames
    assert reader.skipped == 3
    assert reader.reasons[0].startswith("line 4: not JSON")
    assert reader.reasons[1].startswith("line 6: not a frame (t: Input should be a valid number")
    assert reader.reasons[2] == "line 7: a second header (recordings concatenated?): skipped"


def test_unknown_fields_load_and_are_noted(tmp_path: Path) -> None:
    frames = [rich_frame(i) for i in range(4)]
    path = write_recording(tmp_path / "s.jsonl", frames)
    lines = lines_of(path)
    head = json.loads(lines[0]) | {"gpu_topology": "nvlink"}
    one = json.loads(lines[2]) | {"future_field": 1}
    one["cards"][0]["sm_occupancy"] = 0.5
    two = json.loads(lines[3])
    two["host"]["numa_nodes"] = 2
    lines[0], lines[2], lines[3] = (json.dumps(x).encode() for x in (head, one, two))
    path.write_bytes(b"\n".join(lines))
    _, reader = read_recording(path)
    assert list(reader) == frames  # same figures: the unknown fields are ignored
    assert reader.skipped == 0
    assert reader.unknown_lines == 2
    assert reader.unknown_fields == {
        "header.gpu_topology", "future_field", "cards[].sm_occupancy", "host.numa_nodes"
    }
    assert "2 lines with fields this version ignores" in reader.notes[0]


def test_reasons_are_bounded_but_count_goes_on(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(0)])
    with path.open("ab") as fh:
        fh.write(b"junk\n" * 200)
    _, reader = read_recording(path)
    assert len(list(reader)) == 1
    assert reader.skipped == 200
    assert len(reader.reasons) == 50


# -- ReplaySource ----------------------------------------------------------------------------------


async def collect(src: ReplaySource, limit: int = 10_000) -> list[Frame]:
    out = []
    async for frame in src.frames():
        out.append(frame)
        if len(out) >= limit:
            break
    return out


async def test_replay_yields_the_recorded_frames_at_recorded_pace(tmp_path: Path) -> None:
    frames = [rich_frame(i, dt=2.0) for i in range(5)]
    path = write_recording(tmp_path / "s.jsonl", frames)
    fake = FakeTime()
    src = ReplaySource(path, speed=2.0, sleep=fake.sleep, clock=fake.clock, hold_at_end=False)
    assert isinstance(src, FrameSource)
    assert src.label == "replay s.jsonl"
    assert src.header == header()
    assert await collect(src) == frames
    # 2 s apart in the recording, at 2x: one 1 s wait between frames, none before the first.
    assert fake.sleeps == [1.0, 1.0, 1.0, 1.0]
    assert src.position == 8.0
    assert src.duration == 8.0
    assert src.at_end


async def test_not_realtime_does_not_wait(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(i) for i in range(50)])
    fake = FakeTime()
    src = ReplaySource(path, realtime=False, sleep=fake.sleep, clock=fake.clock)
    assert [f.seq for f in await collect(src)] == list(range(50))
    assert fake.sleeps == []


async def test_long_gap_is_shortened(tmp_path: Path) -> None:
    frames = [simple_frame(0), simple_frame(3600)]  # an hour with nothing recorded
    path = write_recording(tmp_path / "s.jsonl", frames)
    fake = FakeTime()
    src = ReplaySource(path, sleep=fake.sleep, clock=fake.clock, hold_at_end=False)
    assert await collect(src) == frames
    assert fake.sleeps == [MAX_GAP_INTERVALS * 1.0]
    assert src.position == 3600.0


async def test_pause_holds_and_resume_continues(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(i) for i in range(6)])
    fake = FakeTime()
    src = ReplaySource(path, sleep=fake.sleep, clock=fake.clock, hold_at_end=False)
    got: list[int] = []
    gen = src.frames()
    got.append((await anext(gen)).seq)
    got.append((await anext(gen)).seq)
    assert src.toggle_pause() is True
    waiting = asyncio.ensure_future(anext(gen))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiting.done()  # paused: no frame, however long we wait
    clock_at_pause = fake.now
    assert src.toggle_pause() is False
    got.append((await waiting).seq)
    got.extend([f.seq async for f in gen])
    assert got == [0, 1, 2, 3, 4, 5]
    assert fake.now == clock_at_pause + 4.0  # no time was spent sleeping while paused


async def test_speed_change_applies_mid_wait(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(0), simple_frame(100, dt=1)])
    sleeping = asyncio.Event()
    release = asyncio.Event()
    naps: list[float] = []
    now = [0.0]

    async def slow_sleep(seconds: float) -> None:
        naps.append(seconds)
        sleeping.set()
        await release.wait()
        now[0] += seconds

    src = ReplaySource(
        path, speed=1.0, sleep=slow_sleep, clock=lambda: now[0], hold_at_end=False
    )
    gen = src.frames()
    await anext(gen)
    nxt = asyncio.ensure_future(anext(gen))
    await sleeping.wait()
    # MAX_GAP caps the 100 s gap at 5 s; the wait starts as a 5 s nap...
    assert naps == [5.0]
    assert src.speed_up() == 2.0
    for _ in range(5):
        await asyncio.sleep(0)
    # ... and is re-planned at once at the new speed (clock did not move: 5 s left at 2x).
    assert naps == [5.0, 2.5]
    release.set()
    assert (await nxt).seq == 100
    assert naps == [5.0, 2.5]  # 2.5 s at 2x covered the 5 s left
    await gen.aclose()


def test_speed_steps_and_clamps(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(0)])
    src = ReplaySource(path)
    assert src.speed == 1.0
    assert [src.speed_up() for _ in range(3)] == [2.0, 4.0, 8.0]
    assert [src.slow_down() for _ in range(5)] == [4.0, 2.0, 1.0, 0.5, 0.25]
    assert src.slow_down() == SPEEDS[0]
    src.speed = 1000
    assert src.speed == SPEEDS[-1]
    src.speed = 3.0  # any value in range is kept as is
    assert src.speed == 3.0
    assert src.speed_up() == 4.0
    with pytest.raises(ValueError, match="speed must be > 0"):
        src.speed = 0


async def test_seek_jump_and_position(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(i) for i in range(100)])
    src = ReplaySource(path, realtime=False, hold_at_end=True)
    assert src.duration == 99.0
    gen = src.frames()
    assert (await anext(gen)).seq == 0
    src.seek(30)
    assert src.position == 30.0  # shown at once, before the next frame arrives
    assert (await anext(gen)).seq == 30
    assert src.generation == 1
    src.seek(-10.5)
    assert (await anext(gen)).seq == 20  # first frame at or after 19.5 s
    assert src.position == 20.0
    src.seek(-1000)
    assert (await anext(gen)).seq == 0
    src.jump_end()
    assert (await anext(gen)).seq == 99
    src.seek(+50)  # clamped to the end
    assert (await anext(gen)).seq == 99
    src.jump_start()
    assert [(await anext(gen)).seq for _ in range(3)] == [0, 1, 2]
    assert src.generation == 6  # six seeks
    await src.aclose()


async def test_seek_while_paused_shows_the_new_frame_and_stays_paused(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(i) for i in range(50)])
    fake = FakeTime()
    src = ReplaySource(path, sleep=fake.sleep, clock=fake.clock)
    gen = src.frames()
    await anext(gen)
    src.toggle_pause()
    src.seek(20)
    assert (await anext(gen)).seq == 20
    waiting = asyncio.ensure_future(anext(gen))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiting.done()
    assert src.paused
    await src.aclose()
    with pytest.raises(StopAsyncIteration):
        await waiting


async def test_hold_at_end_waits_for_a_seek_back(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(i) for i in range(5)])
    src = ReplaySource(path, realtime=False, hold_at_end=True)
    gen = src.frames()
    assert [(await anext(gen)).seq for _ in range(5)] == [0, 1, 2, 3, 4]
    waiting = asyncio.ensure_future(anext(gen))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not waiting.done() and src.at_end
    src.seek(-2)
    assert (await waiting).seq == 2
    assert not src.at_end
    await src.aclose()


async def test_seek_bisects_a_large_file_with_bad_lines(tmp_path: Path) -> None:
    frames = [rich_frame(i, t0=5000.0, dt=0.5, cards=4) for i in range(3000)]  # ~16 MB
    path = write_recording(tmp_path / "big.jsonl", frames)
    lines = lines_of(path)
    for k in range(100, 3000, 97):
        lines[k] = b"{broken"
    path.write_bytes(b"\n".join(lines))
    src = ReplaySource(path, realtime=False, hold_at_end=True)
    assert src.duration == 1499.5
    gen = src.frames()
    await anext(gen)
    for target in (0.0, 0.25, 1.0, 777.3, 1234.5, 1499.5, 42.0):
        src.jump_start()
        await anext(gen)
        src.seek(target)
        frame = await anext(gen)
        expected = next(f for f in frames if f.t - 5000.0 >= target - 1e-6 and
                        lines[f.seq + 1] != b"{broken")
        assert frame == expected, target
    await src.aclose()


async def test_duration_skips_a_truncated_tail(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(i) for i in range(10)])
    with path.open("ab") as fh:
        fh.write(b'{"t": 99999, "seq"')
    src = ReplaySource(path, realtime=False, hold_at_end=False)
    assert src.duration == 9.0
    assert len(await collect(src)) == 10
    assert src.skipped == 1
    assert src.notes[0].startswith("1 bad line skipped (line 12: truncated")


async def test_duration_grows_with_a_file_still_being_written(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(i) for i in range(3)])
    src = ReplaySource(path, realtime=False)
    assert src.duration == 2.0
    with path.open("ab") as fh:
        fh.write((simple_frame(7).model_dump_json() + "\n").encode())
    assert src.duration == 7.0


async def test_replay_never_runs_a_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    frames = [rich_frame(i) for i in range(5)]
    evil = frames[0].model_copy(update={"notes": ["$(touch /tmp/pwned)", "__import__('os')"]})
    path = write_recording(tmp_path / "s.jsonl", [evil, *frames[1:]])

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("replay tried to run something")

    monkeypatch.setattr(subprocess, "Popen", forbidden)
    monkeypatch.setattr(asyncio, "create_subprocess_exec", forbidden)
    monkeypatch.setattr(os, "system", forbidden)
    monkeypatch.setattr(os, "fork", forbidden)
    src = ReplaySource(path, realtime=False, hold_at_end=False)
    got = await collect(src)
    assert got[0].notes == ["$(touch /tmp/pwned)", "__import__('os')"]  # just text
    assert got == [evil, *frames[1:]]


async def test_aclose_mid_wait_ends_the_stream(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(i, dt=1.0) for i in range(5)])
    never = asyncio.Event()

    async def stuck_sleep(seconds: float) -> None:
        await never.wait()

    src = ReplaySource(path, sleep=stuck_sleep)
    gen = src.frames()
    await anext(gen)
    waiting = asyncio.ensure_future(anext(gen))
    await asyncio.sleep(0)
    await src.aclose()
    with pytest.raises(StopAsyncIteration):
        await waiting


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(junk=st.lists(st.binary(max_size=80).filter(lambda b: b"\n" not in b), max_size=8))
def test_any_junk_lines_never_crash_the_reader(tmp_path: Path, junk: list[bytes]) -> None:
    good = [simple_frame(i) for i in range(3)]
    path = write_recording(tmp_path / "fuzz.jsonl", good)
    lines = lines_of(path)[:-1]
    mixed = [lines[0], lines[1], *junk, lines[2], lines[3]]
    path.write_bytes(b"\n".join(mixed) + b"\n")
    _, reader = read_recording(path)
    frames = list(reader)
    # Junk may by chance be a valid frame ("{\"t\":1}"): count what is not.
    extra = len(frames) - 3
    assert [f for f in frames if f in good] == good
    assert reader.skipped + extra == sum(1 for j in junk if j.strip())


async def test_a_recording_without_frames_ends_even_when_holding(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [])
    with path.open("ab") as fh:
        fh.write(b"junk\n")
    src = ReplaySource(path)  # realtime: would hold at the end if there were anything to show
    assert await collect(src) == []
    assert src.at_end and src.duration == 0.0 and src.position == 0.0
    assert src.skipped == 1
    src.seek(10)  # harmless
    assert src.position == 0.0
