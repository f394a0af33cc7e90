"""The job's verdict line above the cards (jobs on more than one card)."""

from __future__ import annotations

from typing import ClassVar

from rich.style import Style
from textual.strip import Strip

from gpusat_tui.model import VERDICT_KINDS, Verdict
from gpusat_tui.ui.text import clean
from gpusat_tui.ui.widgets.badge import badge_word
from gpusat_tui.ui.widgets.lines import LineWidget

_BOLD = Style(bold=True)

class JobLine(LineWidget):
    """The job's verdict above the cards (only for jobs on more than one card), one widget:
    ``Job (8 cards)  IMBALANCED  data wait 2–41% · step 210 ms  card 3 at 41% while …``.

    The probe's figures (measured inside the trainers) come before the verdict's first
    reason; without a probe it says so in two words (the process panel says how to get one).
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "jobline--why", "jobline--probe", *(f"jobline--{kind}" for kind in VERDICT_KINDS),
    }

    DEFAULT_CSS = """
    JobLine { height: 1; }
    """

    def __init__(self) -> None:
        super().__init__(id="job")
        self.n_cards = 0
        self.verdict = Verdict()
        self.probe = ""

    def show(self, n_cards: int, verdict: Verdict, probe: str = "") -> None:
        if (n_cards, verdict, probe) != (self.n_cards, self.verdict, self.probe):
            self.n_cards, self.verdict, self.probe = n_cards, verdict, probe
            self.refresh()

    def render_line(self, y: int) -> Strip:
        if y:
            return self.blank()
        verdict = self.verdict
        kind = verdict.kind if verdict.kind in VERDICT_KINDS else "unknown"
        first = verdict.why[0] if verdict.why else ""
        return self.fit(self.strip_parts([
            (f"Job ({self.n_cards} cards) ", self.base_style + _BOLD),
            (f" {badge_word(kind, verdict.cause)} ", self.part_style(f"jobline--{kind}")),
            (f" {self.probe or 'no probe'} ", self.part_style("jobline--probe")),
            (f" {clean(first, 120)}", self.part_style("jobline--why")),
        ]))
