"""Which keys are live now, so the footer lists only those (Textual's ``check_action``).

Pure: the app's state in, a yes or no per action out. Cost: an action added to the bindings
is live everywhere until it is named here.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusat_tui.ui.replay_keys import REPLAY_ACTION

#: The keys on the no-tool screen.
NO_TOOL_ACTIONS = frozenset({"quit", "help", "command_palette"})


@dataclass(frozen=True)
class KeyState:
    """What the keys depend on."""

    no_tool: bool
    overview: bool
    why_open: bool
    fleet: bool
    #: Jobs besides the followed one (`frame_painter.jobs_besides`).
    other_jobs: int
    replay: bool


def key_live(action: str, state: KeyState) -> bool:
    """Whether ``action`` is offered in ``state``."""
    if state.no_tool:
        return action in NO_TOOL_ACTIONS
    # o switches views (one binding each, so the footer names the other view); Enter
    # opens a card from the overview and toggles the reasons in a card's full view.
    if action == "overview":
        return not state.overview
    if action in {"card_view", "open_card"}:
        return state.overview
    if action == "why_page":  # the open why view's keys
        return state.why_open and not state.overview
    if action == "search":
        return state.fleet
    if action == "pick_job":  # the fleet view's jobs are its filter's (``/``)
        return not state.fleet and state.other_jobs > 0
    # Replay keys exist only on a replay; hidden from the footer otherwise.
    return state.replay or action != REPLAY_ACTION
