"""The dashboard following a compressed recording that is still being written."""

from __future__ import annotations

from pathlib import Path

from gpusat_tui.sources.recording.recorder import Recorder, make_header
from gpusat_tui.sources.recording.replay import ReplaySource
from gpusat_tui.ui.app import GpusatApp
from tests.recording_helpers import rich_frame
from tests.ui.conftest import FixedTracker, screen_text, settle


async def test_follow_shows_new_frames_and_says_following(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl.zst"
    rec = Recorder(path, make_header({"hy-smi": "1.0"}, 1.0))
    try:
        for seq in range(3):
            rec.write(rich_frame(seq))
        source = ReplaySource(path, follow=True, follow_poll_s=0.05)
        app = GpusatApp(
            source, tracker=FixedTracker(), clock=lambda: 0.0, own_cpu=lambda: 0.4,  # type: ignore[arg-type]
        )
        async with app.run_test(size=(140, 30)) as pilot:
            await settle(pilot, lambda: app.frame is not None and app.frame.seq == 2)
            assert "following live.jsonl.zst" in screen_text(app).splitlines()[-2]
            for seq in range(3, 6):
                rec.write(rich_frame(seq))
            await settle(pilot, lambda: app.frame is not None and app.frame.seq == 5)
    finally:
        rec.close()
