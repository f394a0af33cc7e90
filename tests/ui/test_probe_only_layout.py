"""With no accelerator tool the pane is the job's: no empty card list, the reasons open at
once, and the advice fits without scrolling in 80×24 and 100×30."""

from __future__ import annotations

import pytest

from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.tracking import default_tracker
from tests.ui.conftest import ListSource, screen_text, settle
from tests.ui.test_one_wait_figure import N, no_tool_frames


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 50)])
async def test_the_no_tool_screen_shows_why_and_advice_without_scrolling(
    size: tuple[int, int],
) -> None:
    app = GpusatApp(ListSource(no_tool_frames()), tracker=default_tracker())
    async with app.run_test(size=size) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == N - 1,
                     timeout=30.0)
        await pilot.pause()
        text = screen_text(app)
    assert "0 cards" not in text, text
    assert "What to try" in text, text
    # The last piece of advice, whole: nothing below the fold.
    assert "prefetch what it fetches" in text, text
    assert "no power figures" not in text, text
