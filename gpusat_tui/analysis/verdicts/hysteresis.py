"""Hysteresis on the badges: a kind (or, within a kind, a cause) changes only when the recent
window has said the new thing for ``hold_polls`` consecutive polls; a cause also only once
those polls span ``cause_hold_s`` seconds (its evidence is noisier than the kind's: at a 0.5 s
poll, two polls of another cause are one second of noise).

`Badges` holds every key's (each card's, the job's) `Badge`: the verdict shown, since when,
and the new kind or cause waiting to hold. While the kind and cause stand, the verdict's
figures are refreshed from the evidence window (every poll since the verdict was adopted)
for a key in focus, and from the recent window, without reasons, for one out of focus. Pure
bookkeeping: which windows are judged, and how, is `tracker`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpusat_tui.model import Verdict

__all__ = ["Badge", "Badges"]


@dataclass
class Badge:
    """What the badge of one card (or of the job) says, and what would change it."""

    verdict: Verdict
    #: Absolute poll number of the first frame of this verdict's evidence window.
    since: int
    candidate: str | None = None
    count: int = 0
    cause_candidate: str | None = None
    cause_count: int = 0
    #: Time of the first poll of the current cause candidate (None: no time given).
    cause_first_t: float | None = None
    #: True while ``verdict`` is the recent window's, without its reasons, because the key was
    #: out of focus (`VerdictTracker.explain` writes them, over the evidence window).
    brief: bool = False
    #: Absolute poll number of the first frame of the window ``verdict``'s figures come from
    #: (the evidence window's or the recent one's): `VerdictTracker.window_ranks` reads it.
    figures_since: int | None = None


class Badges:
    """Every key's `Badge`, and the hysteresis that moves it."""

    def __init__(self, hold_polls: int, cause_hold_s: float = 0.0) -> None:
        self.hold_polls = hold_polls
        self.cause_hold_s = cause_hold_s
        self.shown: dict[str, Badge] = {}

    def adopt(self, key: str, new: Verdict, recent_start: int, in_focus: bool) -> Verdict:
        """``new`` is the key's verdict from now on; its evidence window starts at the recent
        window it was judged on. Out of focus it came without its reasons."""
        self.shown[key] = Badge(verdict=new, since=recent_start, brief=not in_focus,
                                figures_since=recent_start)
        return new

    def update(
        self,
        key: str,
        new: Verdict,
        recent_start: int,
        in_focus: bool,
        evidence: Callable[[str, int], Verdict | None],
        now: float | None = None,
    ) -> Verdict:
        """The verdict the key's badge shows after a push whose recent window says ``new``
        (judged from ``recent_start``, at time ``now``). ``evidence(key, since)``: the key's
        verdict over its evidence window, asked for only when the kind and cause stand and the
        key is in focus."""
        state = self.shown.get(key)
        if state is None or (state.verdict.kind == "unknown" and new.kind != "unknown"):
            return self.adopt(key, new, recent_start, in_focus)
        shown = state.verdict
        if new.kind != shown.kind:
            state.cause_candidate, state.cause_count = None, 0
            if state.candidate == new.kind:
                state.count += 1
            else:
                state.candidate, state.count = new.kind, 1
            if state.count >= self.hold_polls:
                return self.adopt(key, new, recent_start, in_focus)
            return shown
        state.candidate, state.count = None, 0
        if new.cause != shown.cause:
            if state.cause_candidate == new.cause:
                state.cause_count += 1
            else:
                state.cause_candidate, state.cause_count = new.cause, 1
                state.cause_first_t = now
            # Only one named cause replacing another waits for the time too: a cause named
            # where none was shown (or ``unknown``'s ``paused``) is news, not noise.
            timed = (shown.cause is not None and new.cause is not None
                     and shown.kind != "unknown")
            held_s = (
                now - state.cause_first_t
                if timed and now is not None and state.cause_first_t is not None else None
            )
            if state.cause_count >= self.hold_polls and (
                held_s is None or held_s >= self.cause_hold_s
            ):
                return self.adopt(key, new, recent_start, in_focus)
            return shown
        state.cause_candidate, state.cause_count, state.cause_first_t = None, 0, None
        if not in_focus:
            # Out of focus: the recent window's verdict (same kind and cause), no reasons.
            state.verdict, state.brief = new, True
            state.figures_since = recent_start
            return new
        # Same kind and cause: show the evidence window's figures (more samples) when it
        # agrees, else the recent window's.
        long = evidence(key, state.since)
        agrees = long is not None and (long.kind, long.cause) == (shown.kind, shown.cause)
        state.verdict, state.brief = (long if long is not None and agrees else new), False
        state.figures_since = state.since if agrees else recent_start
        return state.verdict
