"""Small things a newcomer trips on: what the no-tool screen suggests, how a replay ends, the
no-tool screen's exit status, the advice on an existing compressed recording, the help box."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusat_tui.cli import parse as parse_command
from gpusat_tui.commands.dashboard import build_app, run_app
from gpusat_tui.commands.options import DashboardOptions
from gpusat_tui.errors import RecordingError
from gpusat_tui.model import Frame, RecordingHeader
from gpusat_tui.sources.recording.recorder import Recorder
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.widgets.screens import HELP, HELP_TEXT_WIDTH, no_tool_text
from tests.fakes.tool import FakeBin
from tests.ui.conftest import T0, card, screen_text, settle


def parse(*argv: str) -> DashboardOptions:
    options = parse_command(list(argv))
    assert isinstance(options, DashboardOptions)
    return options


def header() -> RecordingHeader:
    return RecordingHeader(gpusat_tui_version="0.1.0", host="test", interval_s=1.0,
                           started_at=T0, tools={"nvidia-smi": "550.1"})


def test_no_tool_screen_suggests_what_works_outside_a_checkout() -> None:
    text = no_tool_text("No accelerator tool found. Searched:\n  nvidia-smi: /usr/bin").plain
    assert "gpusat-tui --fallback-demo" in text
    assert "samples/" not in text  # a path into the source tree fails after a pip install


def test_quitting_the_no_tool_screen_exits_1_like_check(
    fake_bin: FakeBin, private_probe_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", fake_bin.env()["PATH"])
    monkeypatch.setattr(GpusatApp, "run", lambda self, *a, **k: None)  # q at once
    assert run_app(parse()) == 1


async def test_a_replay_at_its_end_says_so_and_not_no_frame(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Recorder(path, header()) as rec:
        for i in range(3):
            rec.write(Frame(t=T0 + i, seq=i, cards=[card(0, 50.0)]))
    app = build_app(parse("--replay", str(path), "--speed", "50"))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, lambda: getattr(app.source, "at_end", False) is True, timeout=30.0)
        app.clock = lambda: 1e12  # long after the last frame: a live source would be quiet
        app._update_status()
        await pilot.pause()
        text = screen_text(app)
    assert "end of recording" in text
    assert "no frame for" not in text


@pytest.mark.parametrize("suffix", [".jsonl.zst", ".jsonl.gz"])
def test_existing_compressed_recording_is_not_told_to_append(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"run{suffix}"
    with Recorder(path, header()) as rec:
        rec.write(Frame(t=T0, seq=0))
    with pytest.raises(RecordingError) as refused:
        Recorder(path, header())
    assert "pass --append" not in str(refused.value)
    assert "--force" in str(refused.value)
    with pytest.raises(RecordingError, match="cannot --append"):  # what it no longer suggests
        Recorder(path, header(), mode="append")


def test_plain_recording_still_offers_append(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with Recorder(path, header()) as rec:
        rec.write(Frame(t=T0, seq=0))
    with pytest.raises(RecordingError, match="pass --append to add to it or --force"):
        Recorder(path, header())


async def test_help_says_how_to_close_it_and_fits_its_box(tmp_path: Path) -> None:
    assert max(len(line) for line in HELP.splitlines()) <= HELP_TEXT_WIDTH
    path = tmp_path / "run.jsonl"
    with Recorder(path, header()) as rec:
        rec.write(Frame(t=T0, seq=0, cards=[card(0, 50.0)]))
    app = build_app(parse("--replay", str(path)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: app.frame is not None, timeout=30.0)
        await pilot.press("question_mark")
        await settle(pilot, lambda: "closes this help" in screen_text(app), timeout=10.0)
        await pilot.press("escape")
        await settle(pilot, lambda: "closes this help" not in screen_text(app), timeout=10.0)
