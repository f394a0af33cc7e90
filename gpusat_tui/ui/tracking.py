"""What the app needs from the verdict engine, and what stands in when it cannot be imported."""

from __future__ import annotations

from collections.abc import Collection
from typing import Protocol

from gpusat_tui.model import Assessment, Frame, Verdict


class Tracker(Protocol):
    """What the app needs from the verdict engine (analysis.tracker.VerdictTracker)."""

    def push(self, frame: Frame, *, focus: Collection[str] | None = None) -> Assessment: ...

    def explain(self, key: str) -> Verdict | None: ...

    def reset(self) -> None: ...


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
        from gpusat_tui.analysis.tracker import VerdictTracker
    except ImportError:
        return UnknownTracker()
    return VerdictTracker()
