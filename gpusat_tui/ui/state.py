"""What the dashboard remembers between frames, kept free of Textual so it is tested alone.

The worker pushes every Frame here (even those whose repaint is dropped because the terminal
is slow), so sparklines never have holes the data did not have. History is bounded: memory does
not grow with the length of a session.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gpusat_tui.analysis.energy import EnergyMeter
from gpusat_tui.model import Frame

#: Points kept per chart: one column per poll, so a pane this wide (less its labels) is full.
#: 512 × 3 figures × 8 cards is about 100 KB: bounded whatever the session's length.
HISTORY_POINTS = 512


@dataclass
class CardHistory:
    """Recent figures of one card, oldest first. ``None`` keeps a gap where a figure was missing."""

    util: deque[float | None] = field(default_factory=lambda: deque(maxlen=HISTORY_POINTS))
    mem: deque[float | None] = field(default_factory=lambda: deque(maxlen=HISTORY_POINTS))
    power: deque[float | None] = field(default_factory=lambda: deque(maxlen=HISTORY_POINTS))
    #: Points ever added (the deques keep the last `HISTORY_POINTS`): where a sweep chart
    #: draws the newest one.
    pushed: int = 0


@dataclass
class DashboardState:
    """Histories per card id, in the order the tools list the cards."""

    cards: dict[str, CardHistory] = field(default_factory=dict)
    frames_seen: int = 0
    #: Energy per card and job since the first frame (since the seek, in a replay).
    energy: EnergyMeter = field(default_factory=EnergyMeter)

    def push(self, frame: Frame) -> None:
        """Append one frame's figures. Power is kept as % of cap where the cap is known."""
        self.frames_seen += 1
        self.energy.add(frame)
        for card in frame.cards:
            if not self.keeps(card.id):
                continue
            history = self.cards.setdefault(card.id, CardHistory())
            history.util.append(card.util_pct)
            history.mem.append(card.mem_pct)
            frac = card.power_frac
            history.power.append(100.0 * frac if frac is not None else card.power_w)
            history.pushed += 1

    def keeps(self, card_id: str) -> bool:
        """Whether ``card_id``'s figures are kept: every card's here (the fleet view keeps
        only the cards on screen, `ui.fleet_state`)."""
        return True

    def reset(self) -> None:
        """Forget everything (a replay seek makes old points lie about the new position)."""
        self.cards.clear()
        self.frames_seen = 0
        self.energy = EnergyMeter()
