"""The fleet view's memory: chart history for the cards on screen, not for the whole fleet.

Every card's history (`DashboardState`: 3 charts x 512 points) is 8,000 deques of floats at
1000 hosts, about 400 MB once full, growing for the first 8 minutes; yet only the selected
card's charts are drawn, and a list row shows one figure. So the fleet keeps history for the
rows on screen and the selected card (`FleetState.show`), at most `MAX_CARDS`; a card that
comes on screen starts its charts then (the start-up history covers the rows the list opens
on). Until the list has been drawn once, every card is kept (the start-up history's frames hold
only those rows' cards). Where the source asks only for what is shown, the same ids tell it
which rows' figures to ask for (`view`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gpusat_tui.model import Frame
from gpusat_tui.sources.fleet_view.view_request import FleetView
from gpusat_tui.ui.state import DashboardState

__all__ = ["MAX_CARDS", "FleetState", "cards_in"]

#: Most cards whose history is kept: a tall pane's rows, twice over (rows scrolled past stay
#: until the cap needs their room).
MAX_CARDS = 256


def cards_in(frame: Frame) -> int:
    """The cards the job line counts: a fleet summary's whole fleet where the Frame holds only
    the rows on screen, else the Frame's."""
    return frame.fleet.cards if frame.fleet is not None else len(frame.cards)


@dataclass
class FleetState(DashboardState):
    """`DashboardState` keeping the cards on screen (see the module docstring)."""

    shown: frozenset[str] | None = None
    #: The source's view request, where it asks only for what is shown (`FleetView`): the
    #: list tells it the rows on screen, the filter and the fold through here.
    view: FleetView | None = None

    @classmethod
    def for_tracker(cls, tracker: object) -> FleetState:
        """The state of a fleet dashboard whose tracker knows the source's view request."""
        view = getattr(tracker, "view", None)
        return cls(view=view if isinstance(view, FleetView) else None)

    def keeps(self, card_id: str) -> bool:
        return self.shown is None or card_id in self.shown or card_id in self.cards

    def show(self, card_ids: Iterable[str]) -> None:
        """The cards on screen now: theirs is kept from the next frame on; those off screen
        are forgotten, oldest first, once more than `MAX_CARDS` are kept."""
        ids = list(card_ids)
        self.shown = frozenset(ids)
        if self.view is not None:
            self.view.show(ids)
        self._trim()

    def push(self, frame: Frame) -> None:
        super().push(frame)
        self._trim()

    def _trim(self) -> None:
        excess = len(self.cards) - MAX_CARDS
        if excess > 0 and self.shown is not None:
            shown = self.shown
            for card_id in [i for i in self.cards if i not in shown][:excess]:
                del self.cards[card_id]
