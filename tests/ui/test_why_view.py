"""The why-and-advice view at 80×24, 100×30 and 160×50: every reason and every piece of advice
can be read (PgDn scrolls, and the box says so), and no line on screen ends mid-word."""

from __future__ import annotations

import pytest

from gpusat_tui.model import Verdict
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.widgets.cell_text import cut_at_word
from gpusat_tui.ui.widgets.why_view import SCROLL_HINT, why_words
from tests.ui.conftest import FixedTracker, ListSource, card, frames_for, trainer_with_workers

#: What the verdict engine says about the demo's starving cards (`report` prints all of it).
STARVING = Verdict(
    kind="starving",
    cause="input-bound",
    why=[
        "GPU-Util median 7 %, mean 28 % swinging 1–99 % over 31 samples",
        "power 33 % of 400 W cap (130 W), far below it",
        "VRAM 60 % used (48.0 GiB of 80.0 GiB), steady",
        "4 workers at 97 % CPU each (387 % together): the input pipeline is CPU-bound",
        "16 cores, host CPU 36 %, iowait 1 %",
        "cause inferred from the host side (process CPU and state figures)",
    ],
    advice=[
        "Raise DataLoader num_workers from 4 towards 8: 16 cores, about 11 not used by this "
        "job (host CPU 36 %)",
        "Cache or pre-decode the dataset (decoded tensors, shards) so workers stop decoding "
        "and resizing every epoch",
        "Lighten the CPU augmentation, or move it to the accelerator",
        "DataLoader(persistent_workers=True, pin_memory=True, prefetch_factor=4) keeps "
        "workers alive between epochs and copies overlapping compute",
    ],
)


def box_rows(app: GpusatApp) -> list[str]:
    """The why box's content rows as the terminal shows them (inside its border)."""
    why = app.detail.why
    region = why.scrollable_content_region  # without the scrollbar
    strips = app.screen._compositor.render_strips()  # the screen as drawn
    return [
        strips[y].text[region.x : region.right].rstrip()
        for y in range(region.y, region.bottom)
    ]


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 50)])
async def test_every_reason_and_advice_can_be_read_whole(size: tuple[int, int]) -> None:
    frames = frames_for(3, lambda i: [card(0, 7.0), card(1, 6.0)],
                        processes=trainer_with_workers())
    tracker = FixedTracker(cards={"nvidia:0": STARVING}, job=STARVING)
    app = GpusatApp(ListSource(frames), tracker=tracker, view="card",
                    banner="DEMO: a replay of a recorded session, not your hardware")
    async with app.run_test(size=size) as pilot:
        for _ in range(100):
            await pilot.pause(0.02)
            if app.frames_shown >= 3:
                break
        await pilot.press("w")
        await pilot.pause()
        why = app.detail.why
        assert why.display and why.content_region.height >= 3, why.content_region
        seen: dict[int, str] = {}
        for _ in range(40):  # PgDn until the end: each row's line index is scroll_y + row
            await pilot.pause()
            top = round(why.scroll_y)
            for row, text in enumerate(box_rows(app)):
                seen.setdefault(top + row, text)
            if top >= why.max_scroll_y:
                break
            await pilot.press("pagedown")
        if why.max_scroll_y > 0:
            assert SCROLL_HINT in (why.border_subtitle or "")
        words = " ".join(seen[i] for i in sorted(seen)).split()
        job = app.job_bar.full_text()
        # Word for word what the engine said: a word cut at a line's end would read as two.
        assert words == why_words(STARVING, job), (size, sorted(seen.items()))


def test_a_cut_line_ends_at_a_word() -> None:
    text = "Raise DataLoader num_workers from 4 towards 8"
    assert cut_at_word(text, 20) == "Raise DataLoader…   "
    assert cut_at_word("short", 8) == "short   "
