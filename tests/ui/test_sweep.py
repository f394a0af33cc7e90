"""The sweep charts, the changed-cell diff and the partial repaint: what a poll sends."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from gpusat_tui.ui.partial_update import render_changed_cells
from gpusat_tui.ui.widgets.charts import sweep_axis
from gpusat_tui.ui.widgets.planned_lines import changed_cells
from gpusat_tui.ui.widgets.spark import spark_rows, sweep_column, sweep_rows

values_st = st.lists(st.one_of(st.none(), st.floats(0, 120)), min_size=1, max_size=80)


def test_sweep_fills_from_the_left_then_writes_over_the_oldest() -> None:
    assert sweep_rows([50.0, 100.0], 2, 5, 1, 100.0) == ["▄█   "]
    # Six points in five columns: point 5 is in column 0, column 1 (point 1's) is blank.
    points = [10.0, 20.0, 30.0, 40.0, 50.0, 100.0]
    assert sweep_rows(points, 6, 5, 1, 100.0) == ["█ ▂▃▄"]
    assert sweep_column(6, 5) == 0 and sweep_column(0, 5) == -1
    assert sweep_rows([], 0, 4, 2, 100.0) == ["    ", "    "]


@given(values_st, st.integers(2, 40), st.integers(1, 4))
def test_sweep_shows_the_last_points_of_a_scrolling_chart_rotated(
        values: list[float | None], width: int, height: int) -> None:
    pushed = len(values) + 7  # the history kept fewer points than were ever added
    rows = sweep_rows(values, pushed, width, height, 100.0)
    newest = sweep_column(pushed, width)
    shown = min(len(values), width - 1)
    scrolled = spark_rows(values[len(values) - shown:], shown, height, 100.0) if shown else [
        ""] * height
    for row, ref in zip(rows, scrolled, strict=True):
        assert len(row) == width
        assert row[(newest + 1) % width] == " "  # the blank column ahead of the newest
        # Reading the sweep from the column after the blank one round to the newest gives
        # the scrolling chart's last width - 1 columns.
        order = [(newest - shown + 1 + k) % width for k in range(shown)]
        assert "".join(row[c] for c in order) == ref


@given(st.lists(st.floats(0, 100), min_size=30, max_size=60), st.integers(3, 25))
def test_a_poll_changes_at_most_two_columns(values: list[float], width: int) -> None:
    before = sweep_rows(values[:-1], len(values) - 1, width, 3, 100.0)
    after = sweep_rows(values, len(values), width, 3, 100.0)
    changed = {x for b, a in zip(before, after, strict=True) for x in range(width)
               if b[x] != a[x]}
    newest = sweep_column(len(values), width)
    assert changed <= {newest, (newest + 1) % width}


@given(st.integers(1, 500), st.integers(0, 200), st.sampled_from([None, 1.0, 2.0]))
def test_sweep_axis_is_its_width_with_now_under_the_newest(
        width: int, pushed: int, interval: float | None) -> None:
    axis = sweep_axis(width, interval, pushed)
    assert len(axis) == width
    newest = sweep_column(pushed, width)
    if width >= 8 and newest >= 2:
        assert axis[newest - 2:newest + 1] == "now"


def test_sweep_axis_labels_the_oldest_point_after_the_blank_column() -> None:
    assert sweep_axis(40, 1.0, 50) == " " * 7 + "now -38s  -30s           -15s    "
    assert sweep_axis(40, 1.0, 50, ticks=False) == " " * 7 + "now -38s" + " " * 25
    assert sweep_axis(40, None, 20).startswith("-19 polls")


def test_sweep_axis_ticks_every_15_s_under_the_points_of_that_age() -> None:
    width, pushed = 135, 200
    axis = sweep_axis(width, 1.0, pushed)
    newest = sweep_column(pushed, width)
    for age in (15, 30, 45, 60, 75, 90, 105, 120):
        label = f"-{age}s" if age < 60 else ("-1m" if age == 60 else f"-1m{age - 60}s")
        if age == 120:
            label = "-2m"
        col = (newest - age) % width
        start = col - len(label) // 2
        assert axis[start:start + len(label)] == label, (age, axis)
    # No tick straddles the blank column ahead of the newest point.
    assert axis[(newest + 1) % width] == " "


@pytest.mark.parametrize("interval", [1.0, 2.0, 0.5])
def test_a_poll_moves_the_axis_labels_not_the_row(interval: float) -> None:
    width = 135
    for pushed in range(140, 160):
        before, after = sweep_axis(width, interval, pushed), sweep_axis(width, interval,
                                                                       pushed + 1)
        changed = sum(b != a for b, a in zip(before, after, strict=True))
        # Each label shifts by one column (or one comes or goes at the ends): only the
        # labels' cells change.
        assert changed <= sum(len(w) + 1 for w in before.split() + after.split())
        assert changed < width // 2 and len(after.split()) >= 4


def test_changed_cells_are_runs_inside_the_parts_that_changed() -> None:
    old = (("GPU-Util  75%", "label"), (" " * 20 + "▄▅", "util"), (" " * 30 + "█ ", "util"))
    new = (("GPU-Util  76%", "label"), (" " * 20 + "▄▅", "util"), (" " * 30 + "██", "util"))
    assert changed_cells(old, new, 70) == [(11, 12), (66, 67)]
    # Runs closer than a cursor move are sent as one.
    far = (("GPU-Util  76%", "label"), (" " * 20 + "▄▅", "util"), ("█" + " " * 29 + "██", "util"))
    assert changed_cells(old, far, 70) == [(11, 12), (35, 67)]
    near = (("GPU-Util  76%", "label"), ("█" + " " * 19 + "▄▅", "util"), (" " * 30 + "█ ", "util"))
    assert changed_cells(old, near, 70) == [(11, 14)]
    # Other parts or a wide character: the whole line.
    assert changed_cells(old, (("x", "label"),), 70) == [(0, 70)]
    assert changed_cells(None, new, 70) == [(0, 70)]
    wide = (("名前 75%", "label"),)
    assert changed_cells(wide, (("名前 76%", "label"),), 70) == [(0, 70)]


class Update:
    """What `render_changed_cells` reads of Textual's update: one chop per line here."""

    def __init__(self, lines: list[Strip], spans: list[tuple[int, int, int]]) -> None:
        self.chops = [{0: line} for line in lines]
        self.chop_ends = [[line.cell_length] for line in lines]
        self.spans = spans


def test_partial_update_sends_only_the_spans_columns() -> None:
    console = Console(color_system="256", force_terminal=True, width=80)
    style = Style(color="green")
    line = Strip([Segment("label 75% ", style), Segment("▁▂▃▄▅▆▇█" * 5, style)], 50)
    sent = render_changed_cells(Update([line], [(0, 20, 22)]), console)
    assert sent.startswith("\x1b[1;21H")  # the cursor goes to the span, not the line's start
    assert "label" not in sent and "▃▄" in sent and "▅" not in sent


_parts_st = st.lists(
    st.tuples(st.text(alphabet="ab ▁█·名é", min_size=1, max_size=12),
              st.sampled_from([None, Style(color="green"), Style(bold=True, bgcolor="red")])),
    min_size=1, max_size=6,
)


def on_screen(sent: str) -> tuple[dict[tuple[int, int], tuple[str, tuple[str, ...]]], bool]:
    """What ``sent`` leaves on a terminal: each written cell's character and the attributes
    in force when it was written; and whether the attributes are plain again at the end."""
    cells: dict[tuple[int, int], tuple[str, tuple[str, ...]]] = {}
    y = x = 0
    attrs: list[str] = []
    for move_y, move_x, sgr, char in re.findall(
            r"\x1b\[(\d+);(\d+)H|\x1b\[([\d;]*)m|([^\x1b])", sent):
        if move_y:
            y, x = int(move_y) - 1, int(move_x) - 1
        elif char:
            cells[y, x] = (char, tuple(attrs))
            x += 1
        elif sgr in ("", "0"):
            attrs = []
        else:
            attrs.append(sgr)
    return cells, not attrs


@given(st.lists(st.tuples(_parts_st, st.integers(0, 40), st.integers(1, 40)), min_size=1,
                max_size=4))
def test_partial_update_leaves_the_screen_textual_crops_would(
    lines: list[tuple[list[tuple[str, Style | None]], int, int]],
) -> None:
    """Each span's cells, cut without making a Strip and written with their attributes set
    once per run of one style, leave the terminal as Textual's crop of the line rendered
    by Rich does (wide characters included: they take Textual's crop), attributes reset."""
    console = Console(color_system="truecolor", force_terminal=True, width=120)
    strips = [Strip([Segment(text, style) for text, style in parts]) for parts, _, _ in lines]
    spans = []
    expected = ""
    for y, (line, (_, start, width)) in enumerate(zip(strips, lines, strict=True)):
        end = min(start + width, line.cell_length)
        if end <= start:
            continue
        spans.append((y, start, end))
        whole = start == 0 and end == line.cell_length
        expected += f"\x1b[{y + 1};{start + 1}H" + (
            line if whole else line.crop(start, end)).render(console)
    if not spans:
        return
    sent = render_changed_cells(Update(strips, spans), console)
    screen, plain = on_screen(sent)
    assert plain
    assert screen == on_screen(expected)[0]
    assert len(sent) <= len(expected)


@given(st.lists(st.tuples(st.text(alphabet="ab ▁▂█·", min_size=1, max_size=20),
                          st.text(alphabet="ab ▁▂█·", min_size=20, max_size=20),
                          st.sampled_from(["", "x--util"])), min_size=1, max_size=5))
def test_changed_cells_cover_every_changed_column_and_start_and_end_on_one(
    parts: list[tuple[str, str, str]],
) -> None:
    old = tuple((a, part) for a, _, part in parts)
    new = tuple((b[: len(a)], part) for a, b, part in parts)
    text_old = "".join(a for a, _ in old)
    text_new = "".join(b for b, _ in new)
    runs = changed_cells(old, new, len(text_old))
    differ = {x for x, (p, q) in enumerate(zip(text_old, text_new, strict=True)) if p != q}
    covered = {x for start, end in runs for x in range(start, end)}
    assert differ <= covered
    for start, end in runs:
        assert start in differ and end - 1 in differ
