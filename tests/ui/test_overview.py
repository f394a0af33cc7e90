"""Pilot tests of the overview (every card's block) and the probe's figures on screen."""

from __future__ import annotations

from gpusat_tui.model import VERDICT_KINDS, Frame, ProbeAlloc, ProbeSample, Verdict
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.widgets.cards import CardList
from gpusat_tui.ui.widgets.overview import CardGrid
from gpusat_tui.ui.widgets.panel import CardPanel
from gpusat_tui.ui.widgets.processes import NO_PROBE
from gpusat_tui.ui.widgets.screens import HELP_KEYS
from tests.ui.conftest import (
    T0,
    FixedTracker,
    ListSource,
    card,
    frames_for,
    screen_text,
    settle,
    trainer_with_workers,
)


def eight(i: int) -> list:
    return [card(j, 10.0 * j + i % 3, power=100.0 + 60 * j, temp=40.0 + j) for j in range(8)]


def make_app(frames: list[Frame], tracker: object | None = None, **kw: object) -> GpusatApp:
    return GpusatApp(
        ListSource(frames),
        tracker=tracker or FixedTracker(default=Verdict(kind="saturated")),  # type: ignore[arg-type]
        clock=lambda: T0 + 1.0, own_cpu=lambda: 0.4, interval=1.0,
        **kw,  # type: ignore[arg-type]
    )


async def test_overview_is_the_default_where_it_fits_and_shows_every_card() -> None:
    app = make_app(frames_for(20, eight, processes=trainer_with_workers()))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 19)
        assert app.overview is True
        text = screen_text(app)
        # Every card's block: its figures, its badge, its two charts' labels.
        for j in range(8):
            assert f"{j}  {40 + j}°C  VRAM 50% 40/80G" in text
            assert f"GPU-Util {10 * j + 19 % 3:.0f}%" in text
        assert text.count("SATURATED") == 8
        assert text.count("Power ") >= 8 and text.count("of cap") == 8
        assert not app.card_list.display and not app.detail.display
        # The hidden view is not kept up to date (a hidden widget's refresh makes Textual
        # rebuild its map of the screen): it catches up when shown, below.
        assert app.card_list.lines == []
        footer = text.splitlines()[-1]
        assert "One card" in footer and "Open" not in footer  # Enter does it too (the help)
        # Readable in 100x30 too: all 8 blocks, each with its charts.
        await pilot.resize_terminal(100, 30)
        await pilot.pause()
        assert app.overview is True
        text = screen_text(app)
        assert text.count("SATURATED") == 8 and text.count("GPU-Util") == 8
        # Too small for it (and the user chose nothing): the list and the selected card.
        await pilot.resize_terminal(60, 15)
        await pilot.pause()
        assert app.overview is False
        assert app.card_list.display and "▸ 0" in screen_text(app)
        assert app.card_list.lines[7] == f"  7  {10 * 7 + 19 % 3:.0f}%  SATURATED"


async def test_one_card_opens_in_full() -> None:
    app = make_app(frames_for(3, lambda i: [card(0, 50.0)]))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 2)
        assert app.overview is False
        assert "GPU-Util 50%" in screen_text(app)


async def test_arrows_move_across_blocks_click_selects_enter_opens() -> None:
    app = make_app(frames_for(5, eight))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 4)
        layout = app.grid.layout_now
        assert layout.cols == 2
        await pilot.press("right")
        assert app.selected == "nvidia:1"
        await pilot.press("down")  # one row of blocks down: two cards on
        assert app.selected == "nvidia:3"
        await pilot.press("left", "up")
        assert app.selected == "nvidia:0"
        await pilot.press("up")  # stays at the top edge
        assert app.selected == "nvidia:0"
        assert "▸ 0  40°C" in screen_text(app)
        # A click on the block in the second column, third row.
        await pilot.click(CardGrid, offset=(layout.width + 5, 2 * layout.height + 2))
        await pilot.pause()
        assert app.selected == "nvidia:5"
        await pilot.press("enter")
        await pilot.pause()
        assert app.overview is False and app.view_chosen
        text = screen_text(app)
        assert "nvidia:5 45°C" in text and "▸ 5" in text
        # Chosen once, the view stays whatever the pane's size.
        await pilot.resize_terminal(170, 50)
        await pilot.pause()
        assert app.overview is False
        await pilot.press("o")
        await pilot.pause()
        assert app.overview is True
        await pilot.press("escape")  # already in the overview: nothing to go back to
        await pilot.pause()
        assert app.overview is True
        await pilot.press("w")  # reasons are about one card: its full view, reasons open
        await pilot.pause()
        assert app.overview is False and app.why_open
        await pilot.press("escape")  # back to the overview, as the help says
        await pilot.pause()
        assert app.overview is True
        assert "escape       back to the overview" in HELP_KEYS


async def test_double_click_opens_a_card() -> None:
    app = make_app(frames_for(3, eight))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 2)
        layout = app.grid.layout_now
        await pilot.click(CardGrid, offset=(3, layout.height + 1), times=2)
        await pilot.pause()
        assert app.selected == "nvidia:2" and app.overview is False


async def test_names_in_blocks_are_literal() -> None:
    evil = "[bold]Evil[/] \x1b[31mGPU\x07"
    frames = frames_for(2, lambda i: [card(0, 10.0, name=evil), card(1, 20.0)])
    app = make_app(frames)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 1)
        assert app.overview is True
        text = screen_text(app)
        assert "[bold]Evil[/] GPU?" in text and "\x1b" not in text


def test_every_verdict_kind_has_its_own_colours() -> None:
    # Loops over VERDICT_KINDS, so a kind added there (stalled) without a style fails here.
    async def run() -> None:
        app = make_app(frames_for(1, lambda i: [card(0), card(1)]), view="card")
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            for widget, prefix in ((app.query_one(CardList), "cardlist"),
                                   (app.query_one(CardPanel), "cardpanel"),
                                   (app.grid, "cardgrid"), (app.job_bar, "jobline")):
                colours = {kind: widget.get_component_rich_style(f"{prefix}--{kind}").bgcolor
                           for kind in VERDICT_KINDS}
                assert all(c is not None for c in colours.values()), (prefix, colours)
                # Starving and saturated, the two that matter most, never look alike.
                assert colours["starving"] != colours["saturated"]

    import asyncio

    asyncio.run(run())


def probes(wait: float, alloc: bool = False) -> list[ProbeSample]:
    stats = ProbeAlloc(allocated_bytes=60 * 1024**3, reserved_bytes=75 * 1024**3,
                       inactive_split_bytes=9 * 1024**3, alloc_retries=12, ooms=0)
    return [ProbeSample(pid=4242, rank=0, world_size=2, card_id="nvidia:0", data_wait_pct=wait,
                        step_ms=180.0, samples_per_s=700.0, alloc=stats if alloc else None,
                        age_s=0.3),
            ProbeSample(pid=5252, rank=1, world_size=2, card_id="nvidia:1", data_wait_pct=3.0,
                        step_ms=175.0, samples_per_s=720.0, alloc=stats if alloc else None,
                        age_s=0.3)]


async def test_probe_figures_on_the_job_line_and_in_the_process_panel() -> None:
    frames = [Frame(t=T0 + i, seq=i, cards=[card(0, 40.0), card(1, 90.0)],
                    processes=trainer_with_workers(workers=2), probes=probes(41.0))
              for i in range(2)]
    app = make_app(frames, view="card")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 1)
        text = screen_text(app)
        # The card view quotes the selected card's rank; the job line leaves its figures out
        # (one data-wait figure per screen) and the overview shows them.
        assert "wait" not in text.splitlines()[0] and "no probe" not in text.splitlines()[0]
        assert "rank 0 nvidia:0 · wait 41% · step 180 ms · 700 samples/s" in text
        assert "alloc" not in text  # no fragmenting suspected: no allocator figures
        await pilot.press("right")  # the process panel follows the selected card
        await settle(pilot, lambda: "rank 1 nvidia:1 · wait 3% · step 175 ms · 720 samples/s"
                     in screen_text(app))
        await pilot.press("o")
        await settle(pilot, lambda: app.overview)
        job = screen_text(app).splitlines()[0]
        assert "data wait 3–41% · step 175–180 ms · 1,420 samples/s (2 ranks)" in job


async def test_allocator_figures_when_fragmenting_is_suspected() -> None:
    frames = [Frame(t=T0, cards=[card(0, 5.0), card(1, 90.0)], probes=probes(2.0, True),
                    processes=trainer_with_workers(workers=1))]
    tracker = FixedTracker(cards={"nvidia:0": Verdict(kind="fragmenting")},
                           default=Verdict(kind="saturated"))
    app = make_app(frames, tracker, view="card")
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        text = screen_text(app)
        rank0 = next(line for line in text.splitlines() if "rank 0" in line)
        assert "alloc 60.0 GiB · reserved 75.0 GiB · split 9.0 GiB · 12 retries · 0 OOMs" in rank0
        await pilot.press("right")  # card 1: its own rank, saturated, no allocator figures
        await settle(pilot, lambda: "rank 1" in screen_text(app))
        rank1 = next(line for line in screen_text(app).splitlines() if "rank 1" in line)
        assert "alloc" not in rank1


async def test_without_a_probe_the_panel_says_how_to_get_one() -> None:
    frames = frames_for(1, lambda i: [card(0), card(1)], processes=trainer_with_workers())
    app = make_app(frames, view="card")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        text = screen_text(app)
        assert NO_PROBE in text
        assert "no probe" in text.splitlines()[0]


async def test_the_selected_card_shows_the_rank_that_drives_it() -> None:
    frames = [Frame(t=T0 + i, seq=i, cards=[card(0, 40.0), card(1, 90.0)],
                    processes=trainer_with_workers(workers=2), probes=probes(41.0))
              for i in range(2)]
    app = make_app(frames, view="card")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 1)
        panel = app.detail.panel
        assert panel.planned[1].startswith(
            "trainer rank 0 · wait 41% · step 180 ms · 700 samples/s")
        await pilot.press("right")
        await settle(pilot, lambda: app.selected == "nvidia:1")
        assert panel.planned[1].startswith("trainer rank 1 · wait 3% · step 175 ms")
        assert "rank 0" not in "\n".join(panel.planned)


async def test_a_card_without_a_probe_gives_the_charts_that_row() -> None:
    frames = [Frame(t=T0, cards=[card(0, 40.0), card(1, 90.0)],
                    processes=trainer_with_workers(workers=2), probes=probes(41.0)[:1])]
    app = make_app(frames, view="card")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.frame is not None)
        panel = app.detail.panel
        assert panel.planned[1].startswith("trainer rank 0")
        with_probe = sum(panel.chart_rows())
        await pilot.press("right")
        await settle(pilot, lambda: app.selected == "nvidia:1")
        assert not any(line.startswith("trainer rank") for line in panel.planned)
        assert sum(panel.chart_rows()) == with_probe + 1


async def test_the_overview_asks_no_card_reasons_until_a_card_is_opened() -> None:
    # The overview shows badges and the job line: only the job is in the tracker's focus
    # (the selected card's reasons are not on screen), and moving the selection there asks
    # for nothing. Opening the card asks for its reasons at once and keeps it in focus.
    frames = frames_for(40, eight)
    tracker = FixedTracker(default=Verdict(kind="saturated"))
    app = GpusatApp(ListSource(frames, delay=0.05), tracker=tracker,  # type: ignore[arg-type]
                    clock=lambda: T0 + 1.0, own_cpu=lambda: 0.4, interval=1.0)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq >= 3)
        assert app.overview is True
        assert tracker.focus[-1] == {"job"}
        await pilot.press("right")
        await pilot.pause()
        assert app.selected == "nvidia:1"
        assert tracker.explained == []
        await pilot.press("enter")
        await settle(pilot, lambda: not app.overview)
        assert tracker.explained[-1] == "nvidia:1"
        pushed = len(tracker.focus)
        await settle(pilot, lambda: len(tracker.focus) > pushed)
        assert tracker.focus[-1] == {"job", "nvidia:1"}
