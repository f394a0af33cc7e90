"""The card grid keeps its height while trainers come and go under it.

A change of the grid's height re-plans and repaints every chart: measured in a real tmux pane at
160x50, one trainer appearing under the overview wrote ~38 KB at once against ~2 KB for an
ordinary poll. The process panel therefore grows at once but gives rows back only after the
shorter list has lasted `SHRINK_AFTER_POLLS` polls.
"""

from __future__ import annotations

import pytest

from gpusat_tui.model import Frame, Verdict
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.widgets import processes
from tests.ui.conftest import T0, FixedTracker, StepSource, card, settle, trainer_with_workers


def eight(i: int) -> list:
    return [card(j, 10.0 * j + i % 3, power=100.0 + 60 * j, temp=40.0 + j) for j in range(8)]


def frames(pattern: str) -> list[Frame]:
    """One frame per letter: ``J`` with a trainer and 2 workers, ``-`` with no process."""
    return [
        Frame(t=T0 + i, seq=i, cards=eight(i),
              processes=trainer_with_workers(workers=2) if c == "J" else [])
        for i, c in enumerate(pattern)
    ]


async def grid_heights(pattern: str) -> list[int]:
    source = StepSource(frames(pattern))
    app = GpusatApp(source, tracker=FixedTracker(default=Verdict(kind="saturated")),  # type: ignore[arg-type]
                    clock=lambda: T0 + 1.0, own_cpu=lambda: 0.4, interval=1.0)
    heights: list[int] = []
    async with app.run_test(size=(160, 50)) as pilot:
        for i in range(len(pattern)):
            source.release()
            await settle(pilot, lambda i=i: app.frame is not None and app.frame.seq == i,
                         timeout=30)
            assert app.overview
            heights.append(app.grid.size.height)
    return heights


async def test_a_trainer_coming_and_going_resizes_the_grid_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(processes, "SHRINK_AFTER_POLLS", 6)
    heights = await grid_heights("--JJ--J--J---J-------")
    changes = [i for i in range(1, len(heights)) if heights[i] != heights[i - 1]]
    # Shorter once the trainer's rows appear (frame 2); back after the 6th poll without
    # them (13 + 6).
    assert changes == [2, 19], heights
    assert heights[2] < heights[0] and heights[19] == heights[0]


def test_the_panel_waits_minutes_before_giving_rows_back() -> None:
    # At 1 Hz: a trainer whose workers come and go within a few minutes (test runs on a
    # shared node, an evaluation every few minutes) costs one re-layout, not one a minute.
    assert processes.SHRINK_AFTER_POLLS >= 300
