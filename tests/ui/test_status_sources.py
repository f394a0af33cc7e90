"""The status line starts with what the source is, then `` · every N s``, for every kind of
source: live polling, a replay, the fleet view, and the tests' own."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusat_tui.sources import FrameSource
from gpusat_tui.sources.fleet_view.fleet import FleetSource
from gpusat_tui.sources.polling.live import LiveSource
from gpusat_tui.sources.recording.replay import ReplaySource
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.status_facts import SourceWatch, status_info
from gpusat_tui.ui.widgets.status import status_text
from tests.recording_helpers import header, write_recording
from tests.ui.conftest import T0, FixedTracker, ListSource, card, frames_for, screen_text, settle


def source_of(kind: str, tmp_path: Path) -> FrameSource:
    if kind == "live":
        return LiveSource(interval=1.0, specs=[])
    if kind == "replay":
        frames = frames_for(3, lambda i: [card(0, 50.0)])
        return ReplaySource(write_recording(tmp_path / "run.jsonl", frames, header(interval=2.0)),
                            realtime=False)
    if kind == "fleet":
        return FleetSource("http://prom.example:9090", interval=5.0)
    return ListSource([])


@pytest.mark.parametrize(("kind", "given", "starts"), [
    ("live", None, "live · every 1 s · "),
    ("replay", None, "replay run.jsonl 0:00/0:02 at 1x · every 2 s · "),
    ("fleet", None, "fleet prom.example:9090 · every 5 s · "),
    ("test", 1.0, "test source · every 1 s · "),  # the tests' source is given its interval
])
def test_the_source_and_its_interval_are_apart(
    tmp_path: Path, kind: str, given: float | None, starts: str
) -> None:
    watch = SourceWatch(source_of(kind, tmp_path), given, paused=False, ended=None, since=T0)
    line = status_text(status_info(watch, None, 0.4, T0)).plain
    assert line.startswith(starts), line


async def test_the_status_row_on_screen_keeps_the_space_before_its_dot() -> None:
    app = GpusatApp(ListSource(frames_for(3, lambda i: [card(0, 50.0)])),
                    tracker=FixedTracker(), interval=1.0, clock=lambda: T0 + 3,
                    own_cpu=lambda: 0.4)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        row = screen_text(app).splitlines()[-2]
    assert row.strip().startswith("test source · every 1 s · monitor 0.4% CPU"), row
