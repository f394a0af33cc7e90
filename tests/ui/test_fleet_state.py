"""The fleet view's memory (`ui.fleet_state`): chart history for the cards on screen only, so
it stays flat however large the fleet and however long the session."""

from __future__ import annotations

from gpusat_tui.model import CardReading, Frame
from gpusat_tui.ui.fleet_state import MAX_CARDS, FleetState


def frame(t: float, hosts: int) -> Frame:
    return Frame(t=t, cards=[CardReading(vendor="nvidia", index=i, host=f"h{h}", util_pct=50.0)
                             for h in range(hosts) for i in range(8)])


def test_before_the_list_is_drawn_every_card_is_kept() -> None:
    state = FleetState()
    state.push(frame(1.0, 4))
    assert len(state.cards) == 32


def test_only_the_cards_on_screen_are_kept_and_memory_stays_flat() -> None:
    state = FleetState()
    state.push(frame(1.0, 100))  # the first poll, before the list is drawn: all 800
    on_screen = [f"h{h}/nvidia:{i}" for h in (7, 8) for i in range(8)]
    state.show(on_screen)
    assert len(state.cards) == MAX_CARDS and set(on_screen) <= set(state.cards)
    for n in range(600):  # longer than a chart holds: the deques are full
        if n % 50 == 0:  # the user scrolls: other rows come on screen
            on_screen = [f"h{(n // 50) * 3 % 100}/nvidia:{i}" for i in range(8)]
            state.show(on_screen)
        state.push(frame(2.0 + n, 100))
    assert len(state.cards) <= MAX_CARDS
    assert all(len(h.util) <= 512 for h in state.cards.values())
    assert set(on_screen) <= set(state.cards)
    assert state.cards[on_screen[0]].util[-1] == 50.0
    # A card that comes while off screen gets no history.
    state.push(frame(700.0, 101))
    assert "h100/nvidia:0" not in state.cards
