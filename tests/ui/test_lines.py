"""The line widgets' own drawing path: padding, kept lines and refreshes (lines.LineWidget)."""

from __future__ import annotations

from typing import ClassVar

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Static

from gpusat_tui.ui.widgets.lines import LineWidget
from gpusat_tui.ui.widgets.planned_lines import Line, PlannedLines
from tests.ui.conftest import screen_text


class Rows(LineWidget):
    """Draws ``rows``; counts how often each row is drawn."""

    DEFAULT_CSS = """
    Rows { height: 4; padding: 1 2; background: $panel; }
    """

    def __init__(self, rows: list[str]) -> None:
        super().__init__()
        self.rows = rows
        self.drawn: list[int] = []

    def render_line(self, y: int) -> Strip:
        self.drawn.append(y)
        if y >= len(self.rows):
            return self.blank()
        return Strip([Segment(self.rows[y], self.base_style)])


class Twin(App[None]):
    """A line widget above a `Static` with the same padding and text: Textual's own path."""

    CSS: ClassVar[str] = "Static { height: 4; padding: 1 2; background: $panel; }"

    def __init__(self) -> None:
        super().__init__()
        self.rows = Rows(["first", "second"])
        self.static = Static("first\nsecond")

    def compose(self) -> ComposeResult:
        yield self.rows
        yield self.static


async def test_padding_is_drawn_as_textual_draws_it() -> None:
    app = Twin()
    async with app.run_test(size=(20, 8)) as pilot:
        await pilot.pause()
        lines = app.screen._compositor.render_strips()
        ours, textual = lines[0:4], lines[4:8]
        assert [s.text for s in ours] == [s.text for s in textual]
        assert ours[1].text == "  first             "
        # Same colours too, padding included (each cell's background).
        for mine, theirs in zip(ours, textual, strict=True):
            assert {seg.style.bgcolor for seg in mine} == {seg.style.bgcolor for seg in theirs}


async def test_unchanged_rows_are_kept_and_refreshed_rows_redrawn() -> None:
    app = Twin()
    async with app.run_test(size=(20, 8)) as pilot:
        await pilot.pause()
        rows = app.rows
        rows.drawn.clear()
        # A change elsewhere on screen repaints the rectangle around it: our rows are kept.
        app.static.update("first\nother")
        await pilot.pause()
        assert rows.drawn == []
        assert "  other" in screen_text(app)
        # A refreshed row is drawn again, and only that one.
        rows.rows[1] = "changed"
        rows.refresh(Region(0, 1, rows.size.width, 1))
        await pilot.pause()
        assert rows.drawn == [1]
        text = screen_text(app).splitlines()
        assert text[1].startswith("  first") and text[2].startswith("  changed")
        # A full refresh draws every row again.
        rows.drawn.clear()
        rows.rows[0] = "again"
        rows.refresh()
        await pilot.pause()
        assert sorted(set(rows.drawn)) == [0, 1]
        assert screen_text(app).splitlines()[1].startswith("  again")


async def test_a_resize_draws_every_row_at_the_new_width() -> None:
    app = Twin()
    async with app.run_test(size=(20, 8)) as pilot:
        await pilot.pause()
        await pilot.resize_terminal(30, 8)
        await pilot.pause()
        lines = app.screen._compositor.render_strips()
        assert lines[1].cell_length == 30
        assert lines[1].text == "  first" + " " * 23


class Planned(PlannedLines):
    """Two planned lines, one per component class."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"planned--ansi", "planned--true"}
    DEFAULT_CSS = """
    Planned { height: 2; }
    Planned > .planned--true { color: #ff8000; }
    """

    def plan(self, width: int, height: int) -> list[Line]:
        return [(("truecolor", "planned--true"),), (("ansi", self.second),)]

    second = "planned--true"


class PlannedApp(App[None]):
    CSS: ClassVar[str] = "Planned > .planned--ansi { color: ansi_red; }"

    def __init__(self, second: str) -> None:
        super().__init__()
        Planned.second = second
        self.planned = Planned()

    def compose(self) -> ComposeResult:
        yield self.planned


async def test_ansi_colours_are_still_turned_into_truecolor() -> None:
    # The ANSI-to-truecolor filter is skipped only where every style is truecolor already:
    # a component styled with an ANSI colour still reaches the screen as truecolor.
    for second in ("planned--true", "planned--ansi"):
        app = PlannedApp(second)
        async with app.run_test(size=(20, 2)) as pilot:
            await pilot.pause()
            lines = app.screen._compositor.render_strips()
            colours = [seg.style.color for line in lines for seg in line if seg.text.strip()]
            assert len(colours) == 2
            assert all(c is not None and c.triplet is not None for c in colours), colours
            assert colours[0].triplet == (255, 128, 0)
            assert (colours[1].triplet == (255, 128, 0)) is (second == "planned--true")
