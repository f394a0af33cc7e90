"""The verdict engine as the screen calls it: a bug in it shows as UNKNOWN with the error, and
the figures keep flowing.

After a push that raised, the engine's state is older than the screen's: until a push
succeeds again, nothing is asked of it (no card's reasons, no window's figures). Cost: a card
selected then keeps the reasons it was shown with until the next good frame.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from gpusat_tui.model import Assessment, Frame, Verdict
from gpusat_tui.ui.tracking import Tracker

if TYPE_CHECKING:
    from gpusat_tui.analysis.probe_reading.probe_ranks import Rank

#: The key of the job's verdict in a tracker's focus (analysis.job.JOB_KEY; the UI must start
#: even when the verdict engine cannot be imported, `tracking.default_tracker`).
JOB_KEY = "job"


class GuardedTracker:
    """Wraps a `Tracker`; every call answers, whatever the engine does."""

    def __init__(self, tracker: Tracker) -> None:
        self.tracker = tracker
        #: False when the last push raised: the tracker's state is older than the screen's.
        self.ok = False

    def push(self, frame: Frame, focus: Collection[str]) -> Assessment:
        """Verdicts for a frame; ``focus``: the keys whose reasons are on screen (their full
        evidence window's figures)."""
        self.ok = False
        try:
            assessment = self.tracker.push(frame, focus=focus)
        except Exception as exc:
            verdict = Verdict(kind="unknown", why=[f"verdict engine error: {exc!r}"])
            return Assessment(cards={c.id: verdict for c in frame.cards}, job=verdict)
        self.ok = True
        return assessment

    def explain(self, key: str) -> Verdict | None:
        """``key``'s verdict with its full reasons; None after a failed push or on an error."""
        if not self.ok:
            return None
        try:
            return self.tracker.explain(key)
        except Exception:  # a verdict-engine bug: keep the figures already shown
            return None

    def explained(self, assessment: Assessment, key: str) -> Assessment | None:
        """``assessment`` with card ``key``'s full reasons (it was out of the push's focus),
        where they keep the kind and cause shown; None where nothing would change."""
        verdict = self.explain(key)
        current = assessment.cards.get(key)
        if verdict is None or current is None or verdict == current:
            return None
        if (verdict.kind, verdict.cause) != (current.kind, current.cause):
            return None
        return Assessment(cards={**assessment.cards, key: verdict}, job=assessment.job)

    def window_ranks(self, key: str) -> dict[int, Rank]:
        """The probed trainers over the window ``key``'s why quotes (by PID); none from a
        tracker that does not say (tests' fixed verdicts) or fails."""
        ranks = getattr(self.tracker, "window_ranks", None)
        if ranks is None or not self.ok:
            return {}
        try:
            return {rank.pid: rank for rank in ranks(key)}
        except Exception:  # a verdict-engine bug: the probes' own figures
            return {}

    def reset(self) -> None:
        self.tracker.reset()
