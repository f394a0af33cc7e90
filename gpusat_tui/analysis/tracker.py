"""The badge over time: a bounded rolling window of Frames plus hysteresis on `judge`.

Each push judges two windows:

* the **recent** window (the last ``recent_polls`` polls, 3 by default): quick to see a real
  change, since `judge` decides on medians and two new polls out of three already read as the
  new state;
* the **evidence** window: every poll since the shown verdict was adopted (at most ``window_s``
  seconds and ``max_frames`` polls): many samples, so its figures and confidence are what the
  badge shows while the state holds.

A kind (or, within a kind, a cause) changes only when the recent window has said the new
thing for ``hold_polls`` consecutive polls; with the defaults a step change shows on the third
poll from it, and an isolated odd poll never flips the badge. Leaving ``unknown`` needs no
hold: there is nothing to flicker from. Memory is bounded by time and by count.

The evidence window decides nothing: it only supplies the figures of a verdict whose kind and
cause the recent window already settled. So a caller that shows the reasons of one card at a
time (the dashboard) passes ``focus``: only those keys get the evidence window's figures, the
others keep the recent window's (same kind and cause), and `explain` fills in one more key on
demand. ``check`` and ``report`` pass no focus and get every key in full.

Cost (``benchmarks/bench_verdict.py``: about 0.7 ms per push for 8 cards with a full 30 s
window, focused or not: the job in focus reads every card's evidence window): each frame is read
once (`verdict.frame_facts`), and what it shows of a card's host evidence or stall is kept with
it, so a window summarises only its new poll; each card's evidence window, which starts where
that card's verdict was adopted and so differs from card to card, is judged for that card only
(`verdict.PreparedWindow`) unless most cards or the job read the same window, and the windows
whose history starts at the same frame share the lag and the stalls found over it
(`verdict.History`). All of it gives exactly what `judge` gives
(tests/analysis/test_verdict_prepared.py).
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from gpusat_tui.analysis.cause_hold import hold_cause
from gpusat_tui.analysis.facts import FrameFacts, frame_facts
from gpusat_tui.analysis.job import JOB_KEY
from gpusat_tui.analysis.measured import Rank, ranks_of
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from gpusat_tui.analysis.verdict import History, PreparedWindow, judge_prepared, window_ids
from gpusat_tui.model import Assessment, Frame, Verdict

__all__ = ["VerdictTracker", "recent_starts"]


@dataclass
class _Shown:
    """What the badge of one card (or of the job) says, and what would change it."""

    verdict: Verdict
    #: Absolute poll number of the first frame of this verdict's evidence window.
    since: int
    candidate: str | None = None
    count: int = 0
    cause_candidate: str | None = None
    cause_count: int = 0
    #: True while ``verdict`` carries the recent window's figures because the key was out of
    #: focus (`VerdictTracker.explain` replaces them with the evidence window's).
    brief: bool = False
    #: Absolute poll number of the first frame of the window ``verdict``'s figures come from
    #: (the evidence window's or the recent one's): `VerdictTracker.window_ranks` reads it.
    figures_since: int | None = None


class VerdictTracker:
    """Feeds Frames one by one; returns the smoothed `Assessment` after each."""

    def __init__(
        self,
        window_s: float = 30.0,
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
        hold_polls: int = 2,
        *,
        recent_polls: int = 3,
        max_frames: int = 600,
        hold_cause: bool = False,
        reference: bool = False,
    ) -> None:
        """``hold_cause``: no cause is named until ``window_s`` of polls (or a probe's
        measured span) is in (`cause_hold`): for the dashboard, which starts with the job.

        ``reference``: judge every window from scratch, as the definition above reads: each
        frame's facts taken anew for each window (nothing a frame kept from an earlier window
        or push), each window's own history, every card of a window judged in full, nothing
        shared between windows. Several times slower; what the shortcuts of the plain tracker
        are tested against (tests/analysis/test_tracker_reference.py)."""
        if not window_s > 0:
            raise ValueError(f"window_s must be > 0, got {window_s!r}")
        if hold_polls < 1 or recent_polls < 1:
            raise ValueError("hold_polls and recent_polls must be at least 1")
        self.window_s = float(window_s)
        self.thresholds = thresholds
        self.hold_polls = hold_polls
        # The recent window must be able to reach min_samples, or it would only say unknown.
        self.recent_polls = max(recent_polls, thresholds.min_samples)
        self.max_frames = max(max_frames, self.recent_polls)
        # (absolute poll number, time used for the window, frame, its facts). The facts are
        # read once per frame here, not once per window judged: every push re-judges up to
        # `window_s` of polls, and re-reading them dominated the cost.
        self._frames: deque[tuple[int, float, Frame, FrameFacts]] = deque(
            maxlen=self.max_frames
        )
        self._count = 0
        self._shown: dict[str, _Shown] = {}
        self._assessment = Assessment()
        self._focus: Collection[str] | None = None
        self.hold_cause = hold_cause
        self.reference = reference
        #: Time of the first poll since the last reset (how much evidence is in).
        self._started_t: float | None = None

    # --- public -----------------------------------------------------------------------------

    @property
    def assessment(self) -> Assessment:
        """The latest smoothed assessment (all unknown before the first push)."""
        return self._assessment

    @property
    def window(self) -> Sequence[Frame]:
        """The frames held now (at most ``window_s`` seconds and ``max_frames`` polls)."""
        return tuple(entry[2] for entry in self._frames)

    def reset(self) -> None:
        """Forget everything (replay seek, or a new session)."""
        self._frames.clear()
        self._shown.clear()
        self._assessment = Assessment()
        self._started_t = None

    def push(self, frame: Frame, *, focus: Collection[str] | None = None) -> Assessment:
        """Add one poll and return the assessment the badge should show now.

        ``focus``: the keys (card ids, `JOB_KEY`) whose verdicts must carry the evidence
        window's figures; None means every key. Kinds and causes never depend on it.
        """
        self._focus = focus
        t = frame.t if isinstance(frame.t, int | float) and math.isfinite(frame.t) else None
        if t is None:
            # A frame without a usable time (a hand-made or corrupt one): it counts as a poll
            # at the previous time, so the count bound still holds.
            t = self._frames[-1][1] if self._frames else 0.0
        elif self._frames and t < self._frames[-1][1]:
            # Time went backwards: a replay seek. Old evidence describes another moment.
            self.reset()
        if self._started_t is None:
            self._started_t = t
        self._frames.append((self._count, t, frame, frame_facts(frame)))
        self._count += 1
        horizon = t - self.window_s
        while self._frames and self._frames[0][1] < horizon:
            self._frames.popleft()

        frames = [entry[2] for entry in self._frames]
        facts = [entry[3] for entry in self._frames]
        first = self._frames[0][0]
        cache: dict[int, Assessment] = {}
        history = self._history_start()
        # Windows whose history starts at the same frame share what is found over it.
        pasts: dict[int, History] = {}

        def past(start: int) -> History:
            if start not in pasts:
                pasts[start] = History(facts[start:], self.thresholds)
            return pasts[start]

        def judged(offset: int) -> Assessment:
            if self.reference:
                start = min(offset, history)
                return judge_prepared(
                    frames[start:], [frame_facts(f) for f in frames[start:]], self.thresholds,
                    context=offset - start,
                )
            if offset not in cache:
                start = min(offset, history)
                cache[offset] = judge_prepared(
                    frames[start:], facts[start:], self.thresholds, context=offset - start,
                    history=past(start),
                )
            return cache[offset]

        windows: dict[int, PreparedWindow] = {}
        # Each card's evidence window starts where its own verdict was adopted, so the windows
        # differ from card to card. A window most cards (or the job) will read is judged whole,
        # once; in any other only the cards asked about are judged (`PreparedWindow`: each
        # card in full, plus a lighter pass over the others, about 0.4 of a card each).
        readers = Counter(
            max(0, state.since - first) for key, state in self._shown.items() if key != JOB_KEY
        )
        n_cards = sum(readers.values())
        job_state = self._shown.get(JOB_KEY)
        job_offset = max(0, job_state.since - first) if job_state is not None else None

        def evidence(key: str, since: int) -> Verdict | None:
            offset = max(0, since - first)
            if key == JOB_KEY:
                return judged(offset).job
            if (
                self.reference or offset in cache or offset == job_offset
                or 5 * readers[offset] >= 3 * n_cards
            ):
                return judged(offset).cards.get(key)
            if offset not in windows:
                start = min(offset, history)
                windows[offset] = PreparedWindow(
                    frames[start:], facts[start:], self.thresholds, context=offset - start,
                    history=past(start),
                )
            return windows[offset].card(key)

        # Each card's recent window reaches back to its last `recent_polls` fresh readings, so
        # a tool that fails every other poll (stale carried-over cards) does not flip the badge
        # to unknown; a card with too few fresh readings anywhere is judged (unknown) on the
        # plain last polls.
        short = max(0, len(frames) - self.recent_polls)
        starts = recent_starts(facts, self.recent_polls, short)
        cards: dict[str, Verdict] = {}
        for card_id in window_ids(facts[short:]):
            offset = starts.get(card_id, short)
            recent = judged(offset).cards.get(card_id)
            if recent is not None:
                cards[card_id] = self._update(card_id, recent, first + offset, evidence)
        for gone in set(self._shown) - set(cards) - {JOB_KEY}:
            del self._shown[gone]
        job_offset = min(starts.values(), default=short)
        job = self._update(JOB_KEY, judged(job_offset).job, first + job_offset, evidence)
        if self.hold_cause:
            gathered = t - (self._started_t if self._started_t is not None else t)
            probes = [p for f in facts for p in f.probes]
            cards = {
                cid: hold_cause(v, gathered, self.window_s,
                                [p for p in probes if p.card_id == cid])
                for cid, v in cards.items()
            }
            job = hold_cause(job, gathered, self.window_s, probes)
        self._assessment = Assessment(cards=cards, job=job)
        return self._assessment

    def window_ranks(self, key: str) -> list[Rank]:
        """The probed trainers over the window that ``key``'s shown figures come from: the
        data wait quoted in its why (``data wait 51 % over the last 11 s``) is these ranks'
        figure, so a screen that shows one beside it shows the same."""
        state = self._shown.get(key)
        if state is None or state.figures_since is None or not self._frames:
            return []
        offset = max(0, state.figures_since - self._frames[0][0])
        return ranks_of([entry[3] for entry in self._frames][offset:], self.thresholds)

    def explain(self, key: str) -> Verdict | None:
        """The verdict of ``key`` (a card id or `JOB_KEY`) with the evidence window's figures,
        for a key that was out of focus at the last push (say, the card just selected).

        Kind and cause stay what the last push said; the assessment is updated to match.
        None for a key the tracker does not know.
        """
        state = self._shown.get(key)
        if state is None or not self._frames:
            return None
        if state.brief:
            state.brief = False
            frames = [entry[2] for entry in self._frames]
            facts = (
                [frame_facts(f) for f in frames] if self.reference
                else [entry[3] for entry in self._frames]
            )
            offset = max(0, state.since - self._frames[0][0])
            start = min(offset, self._history_start())
            long: Verdict | None
            if key == JOB_KEY:
                long = judge_prepared(
                    frames[start:], facts[start:], self.thresholds, context=offset - start
                ).job
            elif self.reference:
                long = judge_prepared(
                    frames[start:], facts[start:], self.thresholds, context=offset - start
                ).cards.get(key)
            else:
                window = PreparedWindow(
                    frames[start:], facts[start:], self.thresholds, context=offset - start
                )
                long = window.card(key)
            shown = state.verdict
            if long is not None and (long.kind, long.cause) == (shown.kind, shown.cause):
                state.verdict = long
                state.figures_since = state.since
                if key == JOB_KEY:
                    self._assessment = Assessment(cards=self._assessment.cards, job=long)
                elif key in self._assessment.cards:
                    cards = dict(self._assessment.cards)
                    cards[key] = long
                    self._assessment = Assessment(cards=cards, job=self._assessment.job)
        return state.verdict

    def _history_start(self) -> int:
        """Index of the first frame the duration rules read (imbalance persistence, stall
        duration): the last ``history_s`` (at least ``stall_min_s``) seconds, reaching back
        to the last poll at or before that horizon, so that polls a little more than a
        second apart still give a stall of ``stall_min_s``."""
        if not self._frames:
            return 0
        th = self.thresholds
        horizon = self._frames[-1][1] - max(th.history_s, th.stall_min_s)
        start = 0
        for index, entry in enumerate(self._frames):
            if entry[1] > horizon:
                break
            start = index
        return start

    # --- hysteresis -------------------------------------------------------------------------

    def _update(
        self,
        key: str,
        new: Verdict,
        recent_start: int,
        evidence: Callable[[str, int], Verdict | None],
    ) -> Verdict:
        state = self._shown.get(key)
        if state is None or (state.verdict.kind == "unknown" and new.kind != "unknown"):
            self._shown[key] = _Shown(verdict=new, since=recent_start, figures_since=recent_start)
            return new
        shown = state.verdict
        if new.kind != shown.kind:
            state.cause_candidate, state.cause_count = None, 0
            if state.candidate == new.kind:
                state.count += 1
            else:
                state.candidate, state.count = new.kind, 1
            if state.count >= self.hold_polls:
                self._shown[key] = _Shown(verdict=new, since=recent_start,
                                          figures_since=recent_start)
                return new
            return shown
        state.candidate, state.count = None, 0
        if new.cause != shown.cause:
            if state.cause_candidate == new.cause:
                state.cause_count += 1
            else:
                state.cause_candidate, state.cause_count = new.cause, 1
            if state.cause_count >= self.hold_polls:
                self._shown[key] = _Shown(verdict=new, since=recent_start,
                                          figures_since=recent_start)
                return new
            return shown
        state.cause_candidate, state.cause_count = None, 0
        if self._focus is not None and key not in self._focus:
            # Out of focus: the recent window's figures (same kind and cause) will do.
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


def recent_starts(facts: Sequence[FrameFacts], wanted: int, short: int) -> dict[str, int]:
    """Per card: the offset from which the frames hold ``wanted`` fresh readings of it, for
    cards that have that many in the window (never later than ``short``). A card none of whose
    last ``wanted`` polls is fresh gets no entry: its tool is failing, so it reads unknown
    rather than showing figures that only grow older."""
    counts: dict[str, int] = {}
    starts: dict[str, int] = {}
    for offset in range(len(facts) - 1, -1, -1):
        if offset < short and all(cid in starts for cid in counts):
            # Past the plain recent polls only the cards in ``counts`` are read, and each of
            # them has its start: older polls would change nothing (most pushes stop here, at
            # ``short``, instead of reading the whole window).
            break
        if offset == short - 1:
            # Past the plain recent polls: only cards with a fresh reading there go further.
            counts = {cid: n for cid, n in counts.items() if n > 0}
        for cid, fresh in facts[offset].readings:
            if cid in starts:
                continue
            if offset < short and cid not in counts:
                continue
            if not fresh:
                counts.setdefault(cid, 0)
                continue
            counts[cid] = counts.get(cid, 0) + 1
            if counts[cid] >= wanted:
                starts[cid] = min(offset, short)
    return starts
