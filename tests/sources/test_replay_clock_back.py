"""Replaying a recording whose clock ran backwards: seq order, report's pace, no lost window.

The host's clock was stepped back while recording (every frame's ``t`` earlier than the one
before, or one big step): replay plays the frames in poll order, one interval apart as
`report` places them, shows the first at once, and seeks by poll count.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.commands.report import analyse
from gpusat_tui.sources.recording.recorder import Recorder, make_header
from gpusat_tui.sources.recording.replay import ReplaySource
from tests.recording_helpers import rich_frame

T0 = 1_700_000_000.0


def write_backwards(path: Path, n: int, interval: float = 1.0, step_at: int | None = None) -> None:
    """``n`` polls ``interval`` apart by seq; the clock runs backwards (each frame earlier than
    the one before), or with ``step_at``, steps back one hour at that poll."""
    with Recorder(path, make_header({"hy-smi": "1.0"}, interval)) as rec:
        for seq in range(n):
            if step_at is None:
                t = T0 - seq * interval
            else:
                t = T0 + seq * interval - (3600.0 if seq >= step_at else 0.0)
            rec.write(rich_frame(seq).model_copy(update={"t": t}))


class FakeTime:
    """A clock that moves only when the replay sleeps; records each sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def play(src: ReplaySource, count: int, fake: FakeTime) -> list[tuple[int, float, float]]:
    """(seq, placed t, fake time when yielded) of the first ``count`` frames."""

    async def main() -> list[tuple[int, float, float]]:
        seen: list[tuple[int, float, float]] = []
        async for frame in src.frames():
            seen.append((frame.seq, frame.t, fake.now))
            if len(seen) >= count:
                break
        await src.aclose()
        return seen

    return asyncio.run(main())


@pytest.mark.parametrize("step_at", [None, 10], ids=["runs-backwards", "one-step-back"])
def test_replay_orders_by_seq_and_paces_like_report(tmp_path: Path, step_at: int | None) -> None:
    path = tmp_path / "run.jsonl"
    write_backwards(path, 30, interval=2.0, step_at=step_at)
    fake = FakeTime()
    src = ReplaySource(path, sleep=fake.sleep, clock=fake.clock, hold_at_end=False)
    assert src.duration == pytest.approx(58.0), "by poll count, as report says"
    seen = play(src, 30, fake)
    assert [s for s, _, _ in seen] == list(range(30)), "poll order"
    assert seen[0][2] == 0.0, "the first frame is shown at once"
    # Paced one interval (2 s) apart, as report places them: never all at once.
    gaps = [b[2] - a[2] for a, b in itertools.pairwise(seen)]
    assert gaps == pytest.approx([2.0] * 29)
    times = [t for _, t, _ in seen]
    assert all(b > a for a, b in itertools.pairwise(times)), "placed times go forward"
    report = analyse(path)
    assert report.duration_s == pytest.approx(times[-1] - times[0] + 2.0)
    assert any("clock went back" in n for n in src.notes)


def test_the_tracker_keeps_its_window_through_a_backwards_replay(tmp_path: Path) -> None:
    """Time going back resets the tracker (a seek): placed frames must never look like one."""
    path = tmp_path / "run.jsonl"
    write_backwards(path, 40)
    src = ReplaySource(path, realtime=False, hold_at_end=False)
    tracker = VerdictTracker(window_s=30.0)

    async def main() -> str:
        kind = "unknown"
        async for frame in src.frames():
            kind = tracker.push(frame).cards["hygon:0"].kind
        return kind

    assert asyncio.run(main()) != "unknown"


def test_a_seek_in_a_stepped_recording_goes_by_poll_count(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    write_backwards(path, 200)

    async def main() -> list[int]:
        src = ReplaySource(path, realtime=False, hold_at_end=False)
        seen: list[int] = []
        async for frame in src.frames():
            seen.append(frame.seq)
            if frame.seq == 10:
                src.seek(100.0)  # to poll 110
            if len(seen) > 13:
                break
        position = src.position
        await src.aclose()
        assert position == pytest.approx(seen[-1] * 1.0)
        return seen

    seen = asyncio.run(main())
    assert seen[:11] == list(range(11))
    assert seen[11] == 110
