"""Pure pieces of the charts and the overview: axis, min/max, extra figures, grid layout."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gpusat_tui.model import CardReading, ProbeSample, Verdict
from gpusat_tui.ui.state import CardHistory
from gpusat_tui.ui.widgets.charts import (
    duration,
    gpm_text,
    span_min_max,
    throttle_reasons,
    time_axis,
)
from gpusat_tui.ui.widgets.overview import (
    MIN_CHART_W,
    CardGrid,
    GridLayout,
    block_for,
    grid_layout,
    overview_fits,
)
from gpusat_tui.ui.widgets.panel import card_probe_text, chart_layout, panel_data
from gpusat_tui.ui.widgets.spark import MARK, mark_row, spark_rows
from tests.ui.conftest import card


def test_durations() -> None:
    assert [duration(s) for s in (0, 45, 60, 90, 120, 3600, 3900)] == [
        "0s", "45s", "1m", "1m30s", "2m", "1h", "1h05m"]


def test_time_axis_one_column_per_poll() -> None:
    axis = time_axis(121, 1.0)
    assert len(axis) == 121
    assert axis.startswith("-2m ") and axis.endswith("now")
    # Ticks at round times: -1m sits at the column of the point polled 60 s ago.
    col = axis.index("-1m ")
    assert col <= 120 - 60 < col + len("-1m")
    # Twice the interval: the same width spans twice the time.
    assert time_axis(121, 2.0).startswith("-4m ")
    # Unknown interval: the span in polls; too narrow: blank, never longer than asked.
    assert time_axis(30, None).startswith("-29 polls")
    assert time_axis(2, 1.0) == "  " and time_axis(0, 1.0) == ""


@given(st.integers(0, 400), st.sampled_from([None, 0.5, 1.0, 2.0, 5.0, 60.0]))
def test_time_axis_is_always_exactly_its_width(width: int, interval: float | None) -> None:
    axis = time_axis(width, interval)
    assert len(axis) == width
    if width >= 3:
        assert axis.endswith("now")


def test_min_max_over_the_span_shown() -> None:
    values = [90.0, None, 10.0, 40.0, 60.0]
    assert span_min_max(values, 3) == (10.0, 60.0)
    assert span_min_max(values, 100) == (10.0, 90.0)
    assert span_min_max([None, None], 5) is None and span_min_max(values, 0) is None


def test_gpm_figures_and_throttle_reasons_from_extras() -> None:
    extras = {"sm_active_pct": 38.2, "tensor_active_pct": 22.0, "dram_active_pct": 51.0,
              "fp16_active_pct": "garbage", "throttle": "power-cap, thermal,,"}
    assert gpm_text(extras) == "SM 38% · tensor 22% · DRAM 51%"
    assert gpm_text(extras, limit=2) == "SM 38% · tensor 22%"
    assert gpm_text({}) == "" and gpm_text({"sm_active_pct": float("nan")}) == ""
    assert throttle_reasons(extras) == ["power-cap", "thermal"]
    assert throttle_reasons({"throttle": "\x1b[31mthermal\x07"}) == ["thermal?"]
    assert throttle_reasons({"throttle": 3.0}) == [] and throttle_reasons({}) == []


def test_cap_line_is_drawn_in_the_empty_cells_of_its_row() -> None:
    # 4 rows to 110 %: the cap (100 %) falls in the top row.
    assert mark_row(4, 110.0, 100.0) == 0
    assert mark_row(4, 200.0, 100.0) == 2
    assert mark_row(1, 110.0, 100.0) is None  # a one-row chart has no room for it
    rows = spark_rows([20.0, 105.0, 110.0], 5, 4, 110.0, mark=100.0)
    assert rows[0] == MARK * 2 + MARK + "▇█"  # padding and the low point show the line
    assert rows[-1] == "  ▆██"
    assert spark_rows([20.0], 3, 4, 110.0) == spark_rows([20.0], 3, 4, 110.0, mark=None)


def test_chart_layout_shares_the_height() -> None:
    # 1 title + 3 headers + 3 axes + 1 reason = 8 fixed lines; the rest split evenly.
    assert chart_layout(20, True) == ((4, 4, 4), True, False)
    assert chart_layout(22, True) == ((5, 5, 4), True, False)
    assert chart_layout(40, False) == ((11, 11, 11), True, False)
    # Short: one shared axis; tiny: none, one row each.
    assert chart_layout(12, True) == ((2, 2, 2), False, True)
    assert chart_layout(5, True) == ((1, 1, 1), False, False)


def test_panel_data_labels_and_scales() -> None:
    reading = card(0, 87.0, power=630.0, cap=700.0).model_copy(update={"extras": {
        "sm_active_pct": 38.0, "tensor_active_pct": 22.0, "throttle": "power-cap"}})
    hist = CardHistory()
    hist.util.extend([80.0, 87.0])
    hist.power.extend([85.0, 90.0])
    data = panel_data(reading, Verdict(kind="saturated", why=["busy"]), hist, 1.0)
    util, power, mem = data.charts
    assert util.label == "GPU-Util 87%" and util.extra == "SM 38% · tensor 22%"
    assert power.label == "Power 90% of cap · 630/700 W" and power.mark == 100.0
    assert power.top > 100.0 and power.warn == "throttled: power-cap"
    assert mem.label == "VRAM 50% · 40/80 GiB"
    assert (data.kind, data.why) == ("saturated", "busy")
    # No cap: watts on their own scale, no cap line; the vendor's own utilisation label.
    hygon = CardReading(vendor="hygon", index=1, util_pct=5.0, power_w=120.0)
    hist = CardHistory()
    hist.power.extend([100.0, 120.0])
    util, power, _ = panel_data(hygon, None, hist, 1.0).charts
    assert util.label == "HCU% 5%"
    assert power.mark is None and power.top == 120.0 and power.unit == "W"
    assert power.label == "Power 120 W (no cap known)"


def test_card_probe_text() -> None:
    rank = ProbeSample(pid=7, rank=2, card_id="nvidia:2", tie="guess", data_wait_pct=61.4,
                       step_ms=211.0, samples_per_s=590.0)
    assert card_probe_text([]) == ""
    assert card_probe_text([rank]) == (
        "trainer rank 2 · wait 61% · step 211 ms · 590 samples/s"
        " (card guessed from the local rank)")
    tied = rank.model_copy(update={"tie": "device"})
    assert card_probe_text([tied, tied]).endswith("590 samples/s · +1 more")
    data = panel_data(card(2, 30.0), Verdict(kind="starving"), None, 1.0, [tied])
    assert data.probe.startswith("trainer rank 2 · wait 61%")
    assert panel_data(card(2, 30.0), None, None, 1.0).probe == ""


def test_grid_layout_for_the_panes_users_have() -> None:
    # 8 cards: two columns of four in 160x50 and 100x30, each block showing a minute or more
    # in the wide pane and half a minute in the small one.
    wide = grid_layout(8, 158, 38)
    assert (wide.cols, wide.rows, wide.visible) == (2, 4, 4)
    assert wide.chart_width >= 60 and wide.chart_rows >= 6
    small = grid_layout(8, 98, 22)
    assert (small.cols, small.visible) == (2, 4) and small.chart_rows >= 4
    assert small.chart_width >= 30
    assert overview_fits(8, 160, 38) and overview_fits(8, 100, 22)
    # One card, or too little room: the card view.
    assert not overview_fits(1, 200, 60)
    assert not overview_fits(4, 60, 7)
    # Many cards in a small pane: the blocks scroll (the selection stays in view).
    many = grid_layout(32, 98, 22)
    assert many.visible < many.rows


@given(st.integers(1, 64), st.integers(1, 400), st.integers(1, 120))
def test_grid_layout_always_fits_the_pane(n: int, width: int, height: int) -> None:
    layout = grid_layout(n, width, height)
    assert layout.cols * layout.rows >= n
    assert layout.cols * (layout.width + 1) - 1 <= max(width, 0) or layout.cols == 1
    assert layout.visible * layout.height <= max(height, 3)
    if overview_fits(n, width, height):
        assert layout.chart_width >= MIN_CHART_W and layout.visible == layout.rows


def test_tall_blocks_give_the_height_left_to_a_vram_chart() -> None:
    hist = CardHistory()
    for i in range(30):
        hist.util.append(50.0 + i)
        hist.power.append(60.0)
        hist.mem.append(40.0 + (i % 2) * 20)
    block = block_for(card(0, 50.0, mem_used=49152.0), Verdict(kind="saturated"), hist)
    grid = CardGrid()

    def chart_rows(height: int) -> dict[str, int]:
        lines = grid.block_lines(block, GridLayout(1, 1, 60, height, 1))
        assert len(lines) == height
        assert all(sum(len(text) for text, _ in line) == 60 for line in lines)
        parts = [part for line in lines for _, part in line if part.startswith("cardgrid--")]
        return {name: parts.count(f"cardgrid--{name}") for name in ("util", "power", "mem")}

    # 16 rows: header, 4 + 4 chart rows, 6 of VRAM, a spacer.
    assert chart_rows(16) == {"util": 4, "power": 4, "mem": 6}
    tall = grid.block_lines(block, GridLayout(1, 1, 60, 16, 1))
    assert tall[9][0][0].startswith("VRAM 60%")
    # 9 rows: the two charts take all there is; no VRAM chart (the header still says it).
    assert chart_rows(9) == {"util": 4, "power": 3, "mem": 0}
    assert "VRAM 60%" in grid.block_lines(block, GridLayout(1, 1, 60, 9, 1))[0][0][0]
