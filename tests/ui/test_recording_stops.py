"""The dashboard while its recording fails: the status line says so, the view keeps moving."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpusat_tui.sources.recording.reader import read_recording
from gpusat_tui.sources.recording.recorder import make_header
from gpusat_tui.sources.recording.recording_source import RecordingSource
from gpusat_tui.ui.app import GpusatApp
from tests.ui.conftest import T0, FixedTracker, ListSource, card, frames_for, screen_text, settle


async def test_a_failed_write_stops_the_recording_and_the_view_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = frames_for(8, lambda i: [card(0, 50.0 + i)])
    path = tmp_path / "run.jsonl"
    source = RecordingSource(ListSource(frames), path, make_header({}, 1.0))
    real_write = os.write

    def full_after_three(fd: int, data: bytes) -> int:
        if b'"seq":3' in data:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full_after_three)
    app = GpusatApp(source, tracker=FixedTracker(), clock=lambda: T0 + 1.0,  # type: ignore[arg-type]
                    own_cpu=lambda: 0.4)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 7)
        text = screen_text(app)
        assert "RECORDING STOPPED (No space left on device)" in text
        assert "source failed" not in text
        assert list(app.state.cards["nvidia:0"].util)[-1] == 57.0  # the view kept moving
    monkeypatch.undo()
    assert source.failure is not None and "monitoring goes on" in source.failure
    _, reader = read_recording(path)
    assert [f.seq for f in reader] == [0, 1, 2]
    assert reader.skipped == 0
