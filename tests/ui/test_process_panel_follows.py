"""The process panel follows the selected card: its trainer(s) and their workers only."""

from __future__ import annotations

from gpusat_tui.model import ProcessSample
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.widgets.processes import card_processes
from tests.ui.conftest import FixedTracker, ListSource, card, frames_for, screen_text, settle


def two_jobs() -> list[ProcessSample]:
    procs = []
    for pid, card_id in ((7000, "nvidia:0"), (7100, "nvidia:1")):
        procs.append(ProcessSample(pid=pid, role="trainer", name=f"python train_{pid}.py",
                                   cpu_pct=30.0, state="running", card_ids=[card_id]))
        procs += [ProcessSample(pid=pid + i, role="dataloader_worker", name="pt_data_worker",
                                cpu_pct=90.0, state="running", trainer_pid=pid)
                  for i in (1, 2)]
    return procs


async def test_card_1_selected_shows_card_1s_trainer() -> None:
    frames = frames_for(2, lambda i: [card(0, 90.0), card(1, 20.0)], processes=two_jobs())
    app = GpusatApp(ListSource(frames), tracker=FixedTracker(), view="card")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 1)
        text = screen_text(app)
        assert "train_7000" in text and "train_7100" not in text
        await pilot.press("down")
        await settle(pilot, lambda: "train_7100" in screen_text(app))
        text = screen_text(app)
        assert "train_7000" not in text and "7001" not in text
        assert "nvidia:1: 1 trainer · 2 workers" in text


def test_a_card_no_trainer_is_tied_to_shows_every_process() -> None:
    procs = two_jobs()
    shown, _, tied = card_processes(procs, [], "nvidia:5")
    assert shown == procs and not tied
