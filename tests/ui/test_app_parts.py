"""The app's pure parts alone: the arrows' moves, which keys are live, and the verdict engine
as the screen calls it (an engine error never reaches the screen as a crash)."""

from __future__ import annotations

from collections.abc import Collection

from gpusat_tui.model import Assessment, Frame, Verdict
from gpusat_tui.ui.card_moves import card_after, card_below
from gpusat_tui.ui.guarded_tracker import JOB_KEY, GuardedTracker
from gpusat_tui.ui.key_availability import KeyState, key_live
from gpusat_tui.ui.view_choice import WHY_ROOM_ROWS, why_cramped
from tests.ui.conftest import T0, card

IDS = ["a", "b", "c", "d", "e"]


def test_arrows_go_round_the_list_and_stop_at_the_grid_edges() -> None:
    assert card_after(IDS, "e", 1) == "a" and card_after(IDS, "a", -1) == "e"
    assert card_after(IDS, "gone", 1) == "b"  # a card no longer listed counts as the first
    assert card_after([], None, 1) is None
    assert card_below(IDS, "a", 1, 3) == "d" and card_below(IDS, "c", 1, 3) is None
    assert card_below(IDS, "b", -1, 3) is None and card_below(IDS, "e", -1, 3) == "b"


def keys(**changes: object) -> KeyState:
    base = {"no_tool": False, "overview": False, "why_open": False, "fleet": False,
            "other_jobs": 0, "replay": False}
    return KeyState(**{**base, **changes})  # type: ignore[arg-type]


def test_the_replay_keys_only_on_a_replay_and_the_no_tool_screen_keeps_three() -> None:
    assert not key_live("replay", keys()) and key_live("replay", keys(replay=True))
    assert key_live("toggle_pause", keys())
    assert [a for a in ("quit", "help", "replay", "overview") if key_live(a, keys(no_tool=True))
            ] == ["quit", "help"]
    assert key_live("search", keys(fleet=True)) and not key_live("search", keys())
    assert key_live("pick_job", keys(other_jobs=1))
    assert not key_live("pick_job", keys(other_jobs=1, fleet=True))
    assert key_live("why_page", keys(why_open=True))
    assert not key_live("why_page", keys(why_open=True, overview=True))
    assert key_live("overview", keys()) and not key_live("card_view", keys())


def test_the_why_view_takes_the_panel_rows_only_in_a_short_pane() -> None:
    assert why_cramped(True, WHY_ROOM_ROWS - 1)
    assert not why_cramped(True, WHY_ROOM_ROWS) and not why_cramped(False, 10)


class Broken:
    """An engine that fails where told to."""

    def __init__(self) -> None:
        self.fail_push = False
        self.fail_explain = False

    def push(self, frame: Frame, *, focus: Collection[str] | None = None) -> Assessment:
        if self.fail_push:
            raise RuntimeError("window exploded")
        verdict = Verdict(kind="saturated", why=["short"])
        return Assessment(cards={c.id: verdict for c in frame.cards}, job=verdict)

    def explain(self, key: str) -> Verdict | None:
        if self.fail_explain:
            raise RuntimeError("no reasons")
        return Verdict(kind="saturated", why=["short", "and the full window's figures"])

    def window_ranks(self, key: str) -> list[object]:
        raise RuntimeError("no ranks")

    def reset(self) -> None:
        return None


def test_an_engine_error_is_unknown_with_the_error_and_nothing_more_is_asked() -> None:
    engine = Broken()
    tracker = GuardedTracker(engine)
    frame = Frame(t=T0, cards=[card(0, 50.0)])
    shown = tracker.push(frame, {JOB_KEY})
    assert tracker.ok and shown.cards["nvidia:0"].kind == "saturated"
    explained = tracker.explained(shown, "nvidia:0")
    assert explained is not None and len(explained.cards["nvidia:0"].why) == 2
    assert tracker.window_ranks(JOB_KEY) == {}  # the engine's error: the probes' own figures
    engine.fail_explain = True
    assert tracker.explained(shown, "nvidia:0") is None
    engine.fail_push, engine.fail_explain = True, False
    failed = tracker.push(frame, {JOB_KEY})
    assert not tracker.ok
    assert failed.job.kind == "unknown" and "window exploded" in failed.job.why[0]
    assert failed.cards["nvidia:0"].kind == "unknown"
    assert tracker.explain("nvidia:0") is None  # its state is older than the screen's
