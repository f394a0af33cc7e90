"""From command-line arguments to the right app: replay, live, demo fallback, no tool, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusat_tui.cli import parse as parse_command
from gpusat_tui.collectors.nvidia_smi import SPECS as NVIDIA_SMI
from gpusat_tui.commands.dashboard import build_app, run_app
from gpusat_tui.commands.options import DashboardOptions
from gpusat_tui.model import Frame, RecordingHeader
from gpusat_tui.sources import build as build_module
from gpusat_tui.sources.polling.live import LiveSource
from gpusat_tui.sources.recording.recorder import Recorder
from gpusat_tui.sources.recording.replay import ReplaySource
from gpusat_tui.ui.app import GpusatApp
from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin
from tests.ui.conftest import T0, FixedTracker, card, screen_text, settle


def parse(*argv: str) -> DashboardOptions:
    options = parse_command(list(argv))
    assert isinstance(options, DashboardOptions)
    return options


def write_session(path: Path, n: int = 30, cards: int = 2) -> Path:
    header = RecordingHeader(gpusat_tui_version="0.1.0", host="test", interval_s=1.0,
                             started_at=T0, tools={"nvidia-smi": "550.1"})
    with Recorder(path, header) as rec:
        for i in range(n):
            rec.write(Frame(t=T0 + i, seq=i, cards=[card(j, float(i)) for j in range(cards)]))
    return path


def test_replay_args_build_a_replay_app(tmp_path: Path) -> None:
    session = write_session(tmp_path / "run.jsonl")
    app = build_app(parse("--replay", str(session), "--speed", "4"))
    assert isinstance(app.source, ReplaySource)
    assert app.source.speed == 4.0
    assert app.no_tool is None and app.banner is None


@pytest.mark.parametrize(
    ("flag", "overview"), [("card", False), ("overview", True), ("auto", True)]
)
async def test_view_flag_picks_the_first_view_whatever_the_pane(
    tmp_path: Path, flag: str, overview: bool
) -> None:
    # 8 cards in 160x50: the overview fits, so "auto" shows it; "card" keeps the card view,
    # and both explicit choices hold when the pane is resized.
    session = write_session(tmp_path / "run.jsonl", cards=8)
    app = build_app(parse("--replay", str(session), "--speed", "4", "--view", flag))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        assert app.overview is overview
        assert app.view_chosen is (flag != "auto")
        await pilot.resize_terminal(60, 15)  # too small for 8 blocks
        await settle(pilot, lambda: app.frame is not None)
        assert app.overview is (overview and flag != "auto")


def test_view_flag_refuses_other_views() -> None:
    with pytest.raises(SystemExit):
        parse("--view", "grid")


def test_unreadable_recording_is_one_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"not": "a header"}\n')
    assert run_app(parse("--replay", str(bad))) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpusat-tui: ") and "Traceback" not in err
    assert str(bad.name) in err or "header" in err


def test_no_tool_gives_the_no_tool_screen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    app = build_app(parse())
    # The screen stands over a source that waits for a probed job (none runs yet).
    assert app.source is not None and getattr(app.source, "waiting", False)
    assert app.no_tool is not None and app.no_tool.startswith("No accelerator tool found")
    assert "nvidia-smi" in app.no_tool


def test_fallback_demo_replays_the_demo_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    demo = write_session(tmp_path / "demo.jsonl")
    monkeypatch.setattr(build_module, "DEMO_SESSION", demo)
    app = build_app(parse("--fallback-demo", "--record", str(tmp_path / "x.jsonl")))
    assert isinstance(app.source, ReplaySource)
    assert app.banner is not None and "replays a constructed session" in app.banner
    assert not (tmp_path / "x.jsonl").exists()  # a demo is not recorded as if it were ours


async def test_real_replay_source_under_pilot(tmp_path: Path) -> None:
    session = write_session(tmp_path / "run.jsonl", n=40, cards=2)
    source = ReplaySource(session, speed=64.0)
    tracker = FixedTracker()
    app = GpusatApp(source, tracker=tracker, clock=lambda: T0, own_cpu=lambda: 0.1)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq >= 5)
        await pilot.press("space")
        await pilot.pause()
        assert source.paused is True
        await pilot.press("home")
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 0)
        assert tracker.resets >= 1
        assert list(app.state.cards["nvidia:0"].util) == [0.0]
        status = screen_text(app).splitlines()[-2]
        assert "replay run.jsonl 0:00/0:39 at 64x PAUSED" in status
        await pilot.press("right_square_bracket")
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 10)
        await pilot.press("minus")
        await pilot.pause()
        assert source.speed == 32.0
        await pilot.press("end")
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 39)
        assert "GPU-Util 39%" in screen_text(app)


def test_fallback_demo_uses_the_bundled_package_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert build_module.DEMO_SESSION.is_file()
    app = build_app(parse("--fallback-demo"))
    assert isinstance(app.source, ReplaySource)
    assert app.source.path == build_module.DEMO_SESSION
    assert app.source.label == "replay demo.jsonl"


def test_live_args_reach_the_live_source(fake_bin: FakeBin,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fake_bin.add_for_spec(NVIDIA_SMI[0], [[FakeCard(0)]])
    monkeypatch.setenv("PATH", fake_bin.path)
    source = build_app(parse("--interval", "2", "--enrich-every", "3")).source
    assert isinstance(source, LiveSource) and "nvidia-smi" in source.tools
    assert source.enrich_every == 3 and source.interval == 2.0
    default = build_app(parse()).source
    assert isinstance(default, LiveSource) and default.enrich_every == 5


async def test_the_command_line_app_freezes_its_start_up_heap_once(tmp_path: Path) -> None:
    import gc

    from gpusat_tui.ui.self_cost import FREEZE_HEAP_AFTER

    session = write_session(tmp_path / "run.jsonl", n=FREEZE_HEAP_AFTER + 2)
    frozen_before = gc.get_freeze_count()
    try:
        plain = GpusatApp(ReplaySource(session, speed=64.0))  # as tests and embedders make it
        async with plain.run_test(size=(100, 30)) as pilot:
            await settle(pilot, lambda: plain.frames_shown >= FREEZE_HEAP_AFTER + 1)
        # Not more than before: objects another test left frozen may be freed meanwhile.
        assert gc.get_freeze_count() <= frozen_before
        app = build_app(parse("--replay", str(session), "--speed", "64"))
        assert app.freeze_heap
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, lambda: app.frames_shown >= FREEZE_HEAP_AFTER)
            assert gc.get_freeze_count() > frozen_before
    finally:
        gc.unfreeze()  # this test process runs many apps: give their objects back
