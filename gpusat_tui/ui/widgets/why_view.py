"""Why and what to try, one key (``w``) away: every reason and every piece of advice, wrapped
at words with a hanging bullet, in a box that scrolls (PgUp/PgDn) when they do not fit.

A box of fixed height cut the advice off mid-sentence in a 100×30 pane and showed none of it
in 80×24; here nothing is cut: what does not fit is one key away, and the box's edge says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from gpusat_tui.model import Verdict
from gpusat_tui.text import clean

#: The box's title, and its bottom edge when the text is longer than the box.
TITLE = "why & what to try"
SCROLL_HINT = "PgUp/PgDn: more · w: close"
CLOSE_HINT = "w: close"


def _section(title: str, lines: Sequence[str]) -> list[RenderableType]:
    """A bold heading, then one bullet per line; a wrapped line continues under its text."""
    table = Table.grid(padding=(0, 1))
    table.add_column(width=1, no_wrap=True)
    table.add_column(overflow="fold")  # a single word wider than the box folds, never vanishes
    for line in lines:
        table.add_row("•", Text(clean(line, 400)))
    return [Text(title, style="bold"), table]


def why_renderable(verdict: Verdict | None, job: str = "") -> RenderableType:
    """The reasons, the advice, then the job line in full (``job``; "" when there is none)."""
    if verdict is None:
        return Text("No verdict yet: waiting for enough frames.")
    parts = _section("Why", verdict.why or ["(no figures given)"])
    parts += _section("What to try", verdict.advice or ["(nothing: it is doing its work)"])
    if job:
        parts += _section("Job", [job])
    return Group(*parts)


def why_words(verdict: Verdict, job: str = "") -> list[str]:
    """Every word the box shows, in order (what a test reads back from the screen)."""
    lines = [
        ("Why", verdict.why or ["(no figures given)"]),
        ("What to try", verdict.advice or ["(nothing: it is doing its work)"]),
        *([("Job", [job])] if job else []),
    ]
    words: list[str] = []
    for title, texts in lines:
        words += title.split()
        for text in texts:
            words += ["•", *clean(text, 400).split()]
    return words


class WhyView(VerticalScroll, can_focus=False):
    """The scrolling box; `show` skips a repaint when the verdict and job text are the same."""

    DEFAULT_CSS = """
    WhyView { height: 1fr; }
    WhyView > Static { height: auto; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.body = Static("", id="why-body")
        self._key: object = object()
        self.border_title = TITLE

    def compose(self) -> ComposeResult:
        yield self.body

    def show(self, verdict: Verdict | None, job: str = "") -> None:
        key = (verdict, job)
        if key == self._key:
            return
        self._key = key
        self.body.update(why_renderable(verdict, job))
        self.call_after_refresh(self.update_hint)

    def forget(self) -> None:
        """Draw again on the next `show` (the box was closed and opened)."""
        self._key = object()

    def update_hint(self) -> None:
        """The bottom edge says PgUp/PgDn when there is more than the box shows."""
        self.border_subtitle = SCROLL_HINT if self.max_scroll_y > 0 else CLOSE_HINT

    def on_resize(self) -> None:
        self.call_after_refresh(self.update_hint)

    def page(self, step: int) -> None:
        if step > 0:
            self.scroll_page_down(animate=False)
        else:
            self.scroll_page_up(animate=False)
