"""What the app needs from the verdict engine, and what stands in when it cannot be imported."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Protocol

from gpusat_tui.model import Assessment, Frame, Verdict

if TYPE_CHECKING:  # the app must start even when the verdict engine cannot be imported
    from gpusat_tui.analysis.probe_reading.probe_ranks import Rank


class Tracker(Protocol):
    """What the app needs from the verdict engine (analysis.tracker.VerdictTracker)."""

    def push(self, frame: Frame, *, focus: Collection[str] | None = None) -> Assessment: ...

    def explain(self, key: str) -> Verdict | None: ...

    def reset(self) -> None: ...


class WindowFigures(Protocol):
    """A tracker that also says over which span its why's probe figures were measured
    (analysis.tracker.VerdictTracker); the app shows the same figure, named by that span."""

    def window_ranks(self, key: str) -> list[Rank]: ...


class UnknownTracker:
    """Stand-in used only when the verdict engine cannot be imported: says so, never guesses."""

    def push(self, frame: Frame, *, focus: Collection[str] | None = None) -> Assessment:
        why = ["verdict engine not available in this install"]
        verdict = Verdict(kind="unknown", why=why)
        return Assessment(cards={c.id: verdict for c in frame.cards}, job=verdict)

    def explain(self, key: str) -> Verdict | None:
        return None

    def reset(self) -> None:
        return None


def default_tracker() -> Tracker:
    """The real verdict tracker, or `UnknownTracker` if that module is missing."""
    try:
        from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
    except ImportError:
        return UnknownTracker()
    # The dashboard starts with the job: no cause until the evidence is in (`cause_hold`).
    return VerdictTracker(hold_cause=True)
