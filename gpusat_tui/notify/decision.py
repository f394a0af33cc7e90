"""When to say that the job's verdict turned: a turn that holds, rate-limited, and recovery.

Pure: `TurnWatcher.observe(t, kind, cause)` takes each poll's job verdict and returns the
notices due now; the callers (dashboard, ``check --watch``, ``export``) do the I/O. A problem
(starving, stalled, fragmenting, straggler) must hold for ``hold_s`` before it is announced, and
so must the recovery: a verdict that flickers for a few polls says nothing. Notices are at least
``min_gap_s`` apart; one that falls due inside the gap waits, and when the gap is over the state
that then holds is announced (a problem that came and went in between is counted in
``suppressed``, never sent late). An ``unknown`` verdict (a tool failing, too few polls) is no
evidence either way: it leaves the state as it was, unless its cause says what was measured
(`CLEARED`: with no accelerator tool, a data wait below the starving line, or no probed job
left): then the problem is over, and its recovery is announced like any other.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CLEARED", "NO_JOB", "PROBLEMS", "Notice", "NotifyPolicy", "TurnWatcher", "problem_of"]

#: What is worth a notification, in the words notices use.
PROBLEMS = ("starving", "stalled", "fragmenting", "straggler")

#: The cause given to a poll with no card and no probed trainer (no tool, the job ended).
NO_JOB = "no-job"

#: Causes of an ``unknown`` verdict that are evidence of no problem: the probe measured a data
#: wait below the line (`analysis.probe_only.NOT_STARVING`), or no probed job runs any more.
CLEARED = ("not-starving", NO_JOB)


def problem_of(kind: str, cause: str | None = None) -> str | None:
    """The problem a job verdict is (None: nothing wrong). Imbalanced is a straggler, whether
    it lags on its own or is throttled (the cause says which)."""
    if kind == "imbalanced":
        return "straggler"
    return kind if kind in PROBLEMS else None


@dataclass(frozen=True)
class NotifyPolicy:
    """``hold_s``: how long a turn must last; ``min_gap_s``: the least time between two
    notices; ``recovery``: also say when the problem is over."""

    hold_s: float = 60.0
    min_gap_s: float = 600.0
    recovery: bool = True


@dataclass(frozen=True)
class Notice:
    """One notification: the job turned to ``problem`` (event "turned") or back to normal
    ("recovered", ``problem`` the one that ended, ``kind`` the verdict now)."""

    event: str
    problem: str
    kind: str
    cause: str | None
    #: When the state now announced began, and the time of the notice.
    since: float
    t: float
    #: Turns not announced because of the rate limit since the last notice.
    suppressed: int = 0


class TurnWatcher:
    """Folds the job's verdicts in, poll by poll; `observe` returns the notices due now."""

    def __init__(self, policy: NotifyPolicy | None = None) -> None:
        self.policy = policy or NotifyPolicy()
        #: The state currently seen (problem or None) and since when, with its verdict.
        self._seen: str | None = None
        self._seen_since: float | None = None
        self._kind = "unknown"
        self._cause: str | None = None
        #: The state last announced (None: all well, the assumption at start).
        self.announced: str | None = None
        self._last_sent: float | None = None
        self._suppressed = 0

    def observe(self, t: float, kind: str, cause: str | None = None) -> list[Notice]:
        if kind == "unknown" and cause not in CLEARED:
            return []
        problem = problem_of(kind, cause)
        if problem != self._seen or self._seen_since is None:
            # A state that held but was never announced is replaced: the rate limit held it
            # back; count the turns the gap swallowed.
            unsent = self._seen_since is not None and self._seen != self.announced
            if unsent and self._held(t) and self._gap_left(t) > 0:
                self._suppressed += 1
            self._seen, self._seen_since = problem, t
        self._kind, self._cause = kind, cause
        if self._seen == self.announced or not self._held(t) or self._gap_left(t) > 0:
            return []
        if self._seen is None and not self.policy.recovery:
            self.announced = None
            return []
        assert self._seen_since is not None
        notice = Notice(
            event="recovered" if self._seen is None else "turned",
            problem=self._seen or self.announced or "", kind=kind, cause=cause,
            since=self._seen_since, t=t, suppressed=self._suppressed,
        )
        self.announced = self._seen
        self._last_sent = t
        self._suppressed = 0
        return [notice]

    def _held(self, t: float) -> bool:
        return self._seen_since is not None and t - self._seen_since >= self.policy.hold_s

    def _gap_left(self, t: float) -> float:
        if self._last_sent is None:
            return 0.0
        return self._last_sent + self.policy.min_gap_s - t
