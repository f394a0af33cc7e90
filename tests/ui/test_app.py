"""Pilot tests of the dashboard: frames reach the widgets, keys work, bad input breaks nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from gpusat_tui.model import Assessment, Frame, ProcessSample, ToolError, Verdict
from gpusat_tui.ui import app as app_module
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.self_cost import FREEZE_HEAP_AFTER
from gpusat_tui.ui.tracking import UnknownTracker
from gpusat_tui.ui.widgets.screens import HelpScreen, NoToolScreen
from tests.ui.conftest import (
    T0,
    FixedTracker,
    HungSource,
    ListSource,
    StepSource,
    card,
    frames_for,
    screen_text,
    settle,
    trainer_with_workers,
)

SATURATED = Verdict(kind="saturated", why=["GPU-Util 97% over 30 s"], advice=["nothing to fix"])
STARVING = Verdict(
    kind="starving", cause="input-bound",
    why=["GPU-Util 31% while 4 DataLoader workers are at 100% CPU"],
    advice=["raise num_workers", "cache decoded samples"],
)


def make_app(source: object, tracker: object | None = None, **kw: object) -> GpusatApp:
    """The app in the card list + full card view unless a test asks for another."""
    kw.setdefault("view", "card")
    return GpusatApp(
        source,  # type: ignore[arg-type]
        tracker=tracker or FixedTracker(default=SATURATED),  # type: ignore[arg-type]
        clock=lambda: T0 + 1.0,
        own_cpu=lambda: 0.4,
        **kw,  # type: ignore[arg-type]
    )


async def test_frames_update_widgets() -> None:
    frames = frames_for(3, lambda i: [card(0, 80.0 + i, power=500.0, temp=61.0)],
                        processes=trainer_with_workers(workers=2))
    source = ListSource(frames)
    app = make_app(source, interval=1.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 2)
        text = screen_text(app)
        assert app.selected == "nvidia:0"
        assert app.state.frames_seen == 3
        assert list(app.state.cards["nvidia:0"].util) == [80.0, 81.0, 82.0]
        assert "GPU-Util 82%" in text
        assert "Power 71% of cap · 500/700 W" in text
        assert "min 80%  max 82%" in text  # over the span shown
        assert "VRAM 50% · 40/80 GiB" in text
        assert "now" in text  # the sweep axis: now under the newest point
        assert "61°C" in text
        assert "SATURATED" in text
        assert app.detail.panel.data.kind == "saturated"
        assert "1 trainer · 2 workers (2 running)" in text
        assert "monitor 0.4% CPU" in text
        # One card: no job bar.
        assert app.job_bar.display is False


async def test_arrow_keys_change_selected_card() -> None:
    frames = frames_for(1, lambda i: [card(0, 10.0), card(1, 20.0), card(2, 30.0)])
    tracker = FixedTracker(cards={"nvidia:1": STARVING}, default=SATURATED,
                           job=Verdict(kind="imbalanced", why=["card 1 waits"]))
    app = make_app(ListSource(frames), tracker)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        assert app.selected == "nvidia:0"
        await pilot.press("right")
        await pilot.pause()
        assert app.selected == "nvidia:1"
        assert app.card_list.lines == [
            "  0  10%  SATURATED", "▸ 1  20%  STARVING", "  2  30%  SATURATED",
        ]
        text = screen_text(app)
        assert "GPU-Util 20%" in text
        assert "STARVING (input-bound)" in text
        await pilot.press("down")
        await pilot.pause()
        assert app.selected == "nvidia:2"
        await pilot.press("right")  # wraps
        await pilot.pause()
        assert app.selected == "nvidia:0"
        await pilot.press("left", "up")
        await pilot.pause()
        assert app.selected == "nvidia:1"
        # Multi-card job: job verdict above the cards.
        assert app.job_bar.display is True
        assert "Job (3 cards)" in screen_text(app)
        assert "IMBALANCED" in screen_text(app)


async def test_selected_card_is_in_the_trackers_focus_and_explained_when_chosen() -> None:
    # The tracker gives full evidence figures only for the keys on screen: the selected card
    # (passed as focus with each frame, asked for at once when the selection moves) and the job.
    brief = Verdict(kind="starving", cause="input-bound", why=["3 polls: GPU-Util 30%"])
    full = Verdict(kind="starving", cause="input-bound", why=["30 polls: GPU-Util 31%"])

    class Briefing(FixedTracker):
        def explain(self, key: str) -> Verdict | None:
            self.explained.append(key)
            return full if key == "nvidia:1" else None

    frames = frames_for(2, lambda i: [card(0, 10.0), card(1, 20.0)])
    tracker = Briefing(cards={"nvidia:1": brief}, default=SATURATED)
    app = make_app(ListSource(frames, delay=0.2), tracker)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 1)
        assert tracker.focus[0] == {"job"}  # nothing selected before the first frame
        assert tracker.focus[-1] == {"job", "nvidia:0"}
        await pilot.press("right")
        await pilot.pause()
        assert tracker.explained[-1] == "nvidia:1"
        assert app.assessment.cards["nvidia:1"] == full
        assert "30 polls: GPU-Util 31%" in screen_text(app)


async def test_pause_stops_updates_and_resume_shows_latest() -> None:
    frames = frames_for(40, lambda i: [card(0, float(i))])
    source = ListSource(frames, delay=0.03)
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        await pilot.press("p")
        await pilot.pause()
        assert app.paused is True
        shown_seq = app.frame.seq  # type: ignore[union-attr]
        shown_count = app.frames_shown
        await settle(pilot, lambda: source.yielded >= 40)
        # Frames kept arriving (history is complete) but the screen held still.
        assert app.state.frames_seen == 40
        assert app.frame.seq == shown_seq  # type: ignore[union-attr]
        assert app.frames_shown == shown_count
        assert "PAUSED" in screen_text(app)
        await pilot.press("space")
        await pilot.pause()
        assert app.paused is False
        assert app.frame.seq == 39  # type: ignore[union-attr]
        assert "GPU-Util 39%" in screen_text(app)


async def test_hung_source_leaves_keys_responsive() -> None:
    now = [T0]
    app = GpusatApp(HungSource(), tracker=FixedTracker(), clock=lambda: now[0],
                    own_cpu=lambda: 0.2, interval=1.0, cpu_sample_s=0.05)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "STARVING" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("p")
        await pilot.pause()
        assert app.paused is True
        await pilot.press("p")
        now[0] = T0 + 12.0
        await settle(pilot, lambda: "no frame for 12 s" in screen_text(app))
        assert "Waiting for the first frame" in screen_text(app)


async def test_tool_errors_and_stale_figures_are_on_the_status_line() -> None:
    frames = frames_for(
        1, lambda i: [card(0, 50.0), card(1, 60.0, stale_s=7.0)],
        errors=[ToolError(tool="hy-smi", kind="timeout", message="no answer in 2 s, killed")],
    )
    app = make_app(ListSource(frames))
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        status = screen_text(app).splitlines()[-2]
        assert "stale nvidia:1 7 s" in status
        assert "hy-smi hung: no answer in 2 s, killed" in status
        assert "test source" in status


async def test_markup_and_escapes_in_names_render_literally() -> None:
    evil_card = "[bold]Evil[/] [link=http://x]GPU[/link]"
    evil_proc = "[red]py\x1b[31mthon\x07 [/]"
    frames = [Frame(t=T0, cards=[card(0, 50.0, name=evil_card)], processes=[
        ProcessSample(pid=7, role="trainer", name=evil_proc, cpu_pct=12.0, state="running"),
    ])]
    tracker = FixedTracker(default=Verdict(kind="idle", why=["[b]why[/b] text"]))
    app = make_app(ListSource(frames), tracker)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        await pilot.press("w")
        await pilot.pause()
        text = screen_text(app)
        assert "[bold]Evil[/] [link=http://x]GPU[/link]" in text
        assert "[red]python? [/]" in text
        assert "[b]why[/b] text" in text
        assert "\x1b" not in text


async def test_resize_to_tiny_and_narrow_does_not_raise() -> None:
    frames = frames_for(5, lambda i: [card(j, 10.0 * j) for j in range(8)],
                        processes=trainer_with_workers())
    app = make_app(ListSource(frames))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 4)
        # The charts share the panel's height: what the title, three headers, three axes and
        # the first reason leave, split evenly (the first charts get what is left over).
        rows = app.detail.panel.chart_rows()
        height = app.detail.panel.size.height
        assert sum(rows) == height - 8 and max(rows) - min(rows) <= 1 and rows[0] >= 3
        await pilot.resize_terminal(60, 15)
        await pilot.pause()
        text = screen_text(app)
        # Readable at 60x15: the list of cards and the selected card's figure and badge; the
        # charts shrink and share one time axis.
        assert "GPU-Util 0%" in text
        assert "SATURATED" in text
        assert " 7  70%" in text
        assert app.detail.panel.chart_rows() == (2, 2, 2)
        assert text.count("now") == 1
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        assert app.detail.panel.chart_rows() == rows
        assert "GPU-Util 0%" in screen_text(app)
        assert screen_text(app).count("now") == 3
        await pilot.resize_terminal(20, 5)
        await pilot.pause()
        await pilot.press("right", "w", "question_mark")
        await pilot.pause()
        await pilot.resize_terminal(1, 1)
        await pilot.pause()
        assert app.is_running


class FakeReplay:
    """The replay controls the app calls, recorded."""

    label = "replay demo.jsonl"

    def __init__(self, frames: list[Frame]) -> None:
        self._frames = frames
        self.paused = False
        self.speed = 1.0
        self.position = 75.0
        self.duration = 3600.0
        self.generation = 0
        self.skipped = 2
        self.calls: list[str] = []

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        self.calls.append("pause")
        return self.paused

    def speed_up(self) -> float:
        self.speed *= 2
        self.calls.append("faster")
        return self.speed

    def slow_down(self) -> float:
        self.speed /= 2
        self.calls.append("slower")
        return self.speed

    def seek(self, delta: float) -> None:
        self.calls.append(f"seek {delta:g}")
        self.generation += 1

    def jump_start(self) -> None:
        self.calls.append("start")
        self.generation += 1

    def jump_end(self) -> None:
        self.calls.append("end")
        self.generation += 1

    async def frames(self) -> AsyncIterator[Frame]:
        for frame in self._frames:
            yield frame
        await asyncio.Event().wait()

    async def aclose(self) -> None:
        return None


async def test_replay_keys_drive_the_replay_source() -> None:
    source = FakeReplay(frames_for(1, lambda i: [card(0, 40.0)]))
    tracker = FixedTracker(default=SATURATED)
    app = make_app(source, tracker)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        status = screen_text(app).splitlines()[-2]
        assert "replay demo.jsonl 1:15/1:00:00 at 1x" in status
        assert "2 bad lines skipped" in status
        await pilot.press("plus", "plus", "minus", "right_square_bracket",
                          "left_square_bracket", "home", "end", "space")
        await pilot.pause()
        assert source.calls == ["faster", "faster", "slower", "seek 10", "seek -10", "start",
                                "end", "pause"]
        assert app.selected == "nvidia:0"
        assert "at 2x PAUSED" in screen_text(app).splitlines()[-2]
        footer = screen_text(app).splitlines()[-1]
        assert "±10s" in footer and "Speed" in footer


async def test_replay_seek_resets_history_and_verdicts() -> None:
    frames = frames_for(3, lambda i: [card(0, 10.0 * i)])
    source = FakeReplay(frames)
    tracker = FixedTracker()

    async def frames_with_seek() -> AsyncIterator[Frame]:
        yield frames[0]
        yield frames[1]
        source.generation += 1  # a seek landed between these frames
        yield frames[2]
        await asyncio.Event().wait()

    source.frames = frames_with_seek  # type: ignore[method-assign]
    app = make_app(source, tracker)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 2)
        assert tracker.resets == 1
        assert list(app.state.cards["nvidia:0"].util) == [20.0]


async def test_replay_keys_hidden_on_live() -> None:
    app = make_app(ListSource(frames_for(1, lambda i: [card(0)])))
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        footer = screen_text(app).splitlines()[-1]
        assert "10s" not in footer and "Speed" not in footer
        assert "Pause" in footer
        assert "Why" in footer


async def test_source_failure_is_shown_not_raised() -> None:
    class Broken:
        label = "live"

        async def frames(self) -> AsyncIterator[Frame]:
            yield Frame(t=T0, cards=[card(0, 5.0)])
            raise RuntimeError("tool table exploded")

        async def aclose(self) -> None:
            return None

    app = make_app(Broken())
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, lambda: app.ended is not None)
        assert app.ended == "source failed: RuntimeError: tool table exploded"
        assert "source failed: RuntimeError: tool table exploded" in screen_text(app)


async def test_why_panel_opens_with_w_and_enter() -> None:
    app = make_app(ListSource(frames_for(1, lambda i: [card(0, 31.0)])), FixedTracker(
        default=STARVING))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        assert "raise num_workers" not in screen_text(app)
        await pilot.press("w")
        await pilot.pause()
        text = screen_text(app)
        assert "GPU-Util 31% while 4 DataLoader workers are at 100% CPU" in text
        assert "raise num_workers" in text
        await pilot.press("enter")
        await pilot.pause()
        assert "raise num_workers" not in screen_text(app)


async def test_no_tool_screen_and_quit() -> None:
    message = "No accelerator tool found. Searched:\n  nvidia-smi: PATH, /usr/bin"
    app = GpusatApp(None, no_tool=message, tracker=UnknownTracker(), own_cpu=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, NoToolScreen)
        text = screen_text(app)
        assert "  nvidia-smi: PATH, /usr/bin" in text
        assert "gpusat-tui --fallback-demo" in text
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_themes_switch_and_verdict_colours_follow() -> None:
    frames = frames_for(1, lambda i: [card(0, 31.0), card(1, 90.0)])
    app = make_app(ListSource(frames), FixedTracker(cards={"nvidia:0": STARVING}))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        before = app.card_list.get_component_rich_style("cardlist--starving")

        def drawn_badge_colours() -> tuple[object, object]:
            # The line widgets cache their styles: what they draw must follow the theme too.
            row = list(app.card_list.render_line(0))
            title = list(app.detail.panel.render_line(0))
            badge = next(seg for seg in row if "STARVING" in seg.text)
            return badge.style.bgcolor, title[-1].style.bgcolor  # the title's badge is last

        drawn_before = drawn_badge_colours()
        app.theme = "nord"
        await pilot.pause()
        after = app.card_list.get_component_rich_style("cardlist--starving")
        assert before.bgcolor != after.bgcolor  # colours come from the theme, not hex
        drawn_after = drawn_badge_colours()
        assert drawn_after[0] != drawn_before[0] and drawn_after[1] != drawn_before[1]
        assert drawn_after[0] == after.bgcolor
        assert "STARVING" in screen_text(app)
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert type(app.screen).__name__ == "CommandPalette"


async def test_verdict_engine_error_shows_unknown_and_figures_keep_flowing() -> None:
    class Exploding(FixedTracker):
        def push(self, frame: Frame, *, focus: object = None) -> Assessment:
            raise ZeroDivisionError("window empty")

    app = make_app(ListSource(frames_for(2, lambda i: [card(0, 40.0 + i)])), Exploding())
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 1)
        text = screen_text(app)
        assert "GPU-Util 41%" in text
        assert "UNKNOWN" in text
        assert "verdict engine error: ZeroDivisionError('window empty')" in text
        assert app.ended is None


async def test_card_list_repaints_only_the_rows_that_changed() -> None:
    # Card 0's figure changes every frame, card 2's only on the last one, card 1's never.
    utils = [(10.0, 50.0, 70.0), (11.0, 50.0, 70.0), (12.0, 50.0, 75.0)]
    frames = frames_for(3, lambda i: [card(j, utils[i][j]) for j in range(3)])
    source = StepSource(frames)  # one frame at a time, each shown before the next exists
    app = make_app(source)
    regions: list[tuple[tuple[int, int, int, int], ...]] = []
    async with app.run_test(size=(100, 30)) as pilot:
        source.release()
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 0)
        refresh = app.card_list.refresh

        def spy(*args: object, **kw: object) -> object:
            regions.append(tuple(tuple(r) for r in args))  # type: ignore[arg-type]
            return refresh(*args, **kw)  # type: ignore[arg-type]

        app.card_list.refresh = spy  # type: ignore[method-assign]
        source.release()
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 1)
        rows = screen_text(app).splitlines()
        assert "▸ 0  11%" in rows[1] and "1  50%" in rows[2] and "2  70%" in rows[3]
        source.release()
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 2)
        rows = screen_text(app).splitlines()
        assert "▸ 0  12%" in rows[1] and "1  50%" in rows[2] and "2  75%" in rows[3]
        width = app.card_list.content_size.width
    # Frame 1 changed row 0 only; frame 2 rows 0 and 2: never the whole list.
    assert regions == [((0, 0, width, 1),), ((0, 0, width, 1), (0, 2, width, 1))]


async def test_card_panel_repaints_only_the_lines_that_changed() -> None:
    # Frame 1 changes the utilisation (10 -> 20 %); frame 2 only the temperature (the title).
    figures = [(10.0, 60.0), (20.0, 60.0), (20.0, 65.0)]
    frames = frames_for(3, lambda i: [card(0, figures[i][0], temp=figures[i][1], power=500.0)])
    source = StepSource(frames)  # one frame at a time, each shown before the next exists
    app = make_app(source)
    regions: list[tuple[int, int, int, int]] = []
    async with app.run_test(size=(100, 30)) as pilot:
        source.release()
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 0)
        panel = app.detail.panel
        refresh = panel.refresh

        def spy(*args: object, **kw: object) -> object:
            regions.extend(tuple(r) for r in args)  # type: ignore[misc, arg-type]
            return refresh(*args, **kw)  # type: ignore[arg-type]

        panel.refresh = spy  # type: ignore[method-assign]
        source.release()
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 1)
        assert "GPU-Util 20%" in screen_text(app)
        source.release()
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 2)
        assert "65°C" in screen_text(app)
        width = panel.size.width
        plan = panel.planned
        util_rows, power_rows, mem_rows = panel.chart_rows()
    assert all(x >= 0 and x + w <= width for x, _, w, _ in regions), regions
    lines = {y + k for _, y, _, h in regions for k in range(h)}
    util_head, power_head = 1, 1 + util_rows + 2
    mem_head = power_head + power_rows + 2
    assert plan[util_head].startswith("GPU-Util 20%")
    assert plan[power_head].startswith("Power 71% of cap")
    assert plan[mem_head].startswith("VRAM 50%")
    # Repainted: the title (temperature), the util header (10 -> 20 %, its max), the rows of
    # the util chart where it grew a point, and the power and VRAM charts' rows that gained
    # their new column.
    assert {0, util_head} <= lines
    assert lines & set(range(util_head + 1, util_head + 1 + util_rows))
    # The charts sweep: a chart row is repainted in its new column (and the blank one ahead of
    # it) only, an axis where ``now`` moved; never the headers of the steady power and VRAM
    # charts.
    axes = {util_head + util_rows + 1, power_head + power_rows + 1, mem_head + mem_rows + 1}
    assert all("now" in plan[y] for y in axes)
    charts = set(range(util_head + 1, util_head + 1 + util_rows))
    assert all(w <= 2 for _, y, w, _ in regions if y in charts), regions
    assert all(w <= 8 for _, y, w, _ in regions if y in axes), regions
    assert lines.isdisjoint({power_head, mem_head}), sorted(lines)


async def test_card_rows_name_the_vendor_when_vendors_mix() -> None:
    # An NVIDIA card 0 and a Hygon card 0 on one machine: the rows must not read alike.
    frames = frames_for(1, lambda i: [card(0, 10.0), card(0, 20.0, vendor="hygon")])
    app = make_app(ListSource(frames))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        assert app.card_list.lines == ["▸nv 0  10%  SATURATED", " hy 0  20%  SATURATED"]
        await pilot.press("right")
        await pilot.pause()
        assert app.selected == "hygon:0"
        assert "hygon:0" in screen_text(app)
    # One vendor: no tags.
    app = make_app(ListSource(frames_for(1, lambda i: [card(0, 10.0), card(1, 20.0)])))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        assert app.card_list.lines == ["▸ 0  10%  SATURATED", "  1  20%  SATURATED"]


async def test_own_cpu_figure_leaves_start_up_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The status line's own-CPU figure is the steady cost: the share since launch (imports,
    first layouts, the first frames) is read once the first frames are drawn and dropped;
    until the first steady figure the line says "…"."""
    calls: list[int] = []
    apps: list[GpusatApp] = []

    def sampler() -> object:
        def sample() -> float:
            calls.append(apps[0].frames_shown)
            return 50.0 if len(calls) == 1 else 0.6
        return sample

    monkeypatch.setattr(app_module, "process_cpu_sampler", sampler)
    frames = frames_for(8, lambda i: [card(0, 50.0)])
    source = StepSource(frames)
    # No periodic sample during the test (it would start the figure early on a slow machine):
    # the first figure is the one timed from the FREEZE_HEAP_AFTER-th frame.
    app = GpusatApp(source, tracker=FixedTracker(default=SATURATED),  # type: ignore[arg-type]
                    clock=lambda: T0 + 1.0, cpu_sample_s=3600.0, view="card")
    apps.append(app)
    async with app.run_test(size=(100, 30)) as pilot:
        source.release()
        await settle(pilot, lambda: app.frames_shown >= 1)
        assert "monitor … CPU" in screen_text(app)
        for shown in range(2, len(frames) + 1):  # each frame shown: none is replaced
            source.release()
            await settle(pilot, lambda n=shown: app.frames_shown >= n, timeout=60.0)
        await settle(pilot, lambda: "monitor 0.6% CPU" in screen_text(app), timeout=60.0)
        assert calls[0] == FREEZE_HEAP_AFTER  # the start-up share, read and dropped
        assert app.own_cpu_pct == 0.6
