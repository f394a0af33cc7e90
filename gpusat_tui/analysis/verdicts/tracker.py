"""The badge over time: a bounded rolling window of Frames plus hysteresis on `judge`.

Each push judges two windows:

* the **recent** window (the last ``recent_polls`` polls, 3 by default): quick to see a real
  change, since `judge` decides on medians and two new polls out of three already read as the
  new state;
* the **evidence** window: every poll since the shown verdict was adopted (at most ``window_s``
  seconds and ``max_frames`` polls): many samples, so its figures and confidence are what the
  badge shows while the state holds.

A kind (or, within a kind, a cause) changes only when the recent window has said the new
thing for ``hold_polls`` consecutive polls (`hysteresis`); with the defaults a step change
shows on the third poll from it, and an isolated odd poll never flips the badge. Leaving
``unknown`` needs no hold: there is nothing to flicker from. Memory is bounded by time and by
count.

The evidence window decides nothing: it only supplies the figures of a verdict whose kind and
cause the recent window already settled. So a caller that shows the reasons of one card at a
time (the dashboard) passes ``focus``: only those keys get the evidence window's figures; the
others keep the recent window's verdict (same kind and cause) without its reasons (``why``
empty: the dashboard shows their badges only), and `explain` fills in one key on demand.
``check`` and ``report`` pass no focus and get every key in full.

The job's verdict is composed from its cards' verdicts as they are shown after the push
(`verdict.job_from_cards`): "1 of 4 cards starving: nvidia:0" names the cards whose badges say
so, and no card is judged again over the job's window. Its kind and cause still come from the
recent window with the same hysteresis; its confidence and advice are its cards' as shown
(out of focus, the recent window's).

Cost (``benchmarks/bench_verdict.py``; figures in docs/benchmarks.md): each frame is read once
(`verdict.frame_facts`), and what it shows of a card's host evidence or stall is kept with it,
so a window summarises only its new poll; a push judges every card once over its recent window
and, in focus, once over its evidence window (which starts where that card's verdict was
adopted, so differs from card to card: `verdict.PreparedWindow` judges one card of it, a window
most cards in focus read is judged whole); the windows whose history starts at the same frame
share the lag and the stalls found over it (`verdict.History`). All of it gives exactly what
judging each window anew gives (``reference=True``, tests/analysis/test_tracker_reference.py).
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Collection, Sequence

from gpusat_tui.analysis.facts import FrameFacts, frame_facts
from gpusat_tui.analysis.probe_reading.probe_ranks import Rank, ranks_of
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from gpusat_tui.analysis.verdicts.card_figures import CardFigures
from gpusat_tui.analysis.verdicts.cause_hold import HOLD_CAUSE_MAX, hold_cause
from gpusat_tui.analysis.verdicts.hysteresis import Badges
from gpusat_tui.analysis.verdicts.job import JOB_KEY
from gpusat_tui.analysis.verdicts.verdict import (
    History,
    Judgement,
    PreparedWindow,
    PushLag,
    job_from_cards,
    judge_window,
    window_ids,
)
from gpusat_tui.model import Assessment, Frame, Verdict

__all__ = ["EVIDENCE_WINDOW_S", "VerdictTracker", "recent_starts"]

#: The evidence window's length at most, seconds: what a verdict's why and the status file
#: quote a measured figure over.
EVIDENCE_WINDOW_S = 30.0


class VerdictTracker:
    """Feeds Frames one by one; returns the smoothed `Assessment` after each."""

    def __init__(
        self,
        window_s: float = EVIDENCE_WINDOW_S,
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
        #: Every key's badge and what would change it (`hysteresis`).
        self.badges = Badges(hold_polls, thresholds.cause_hold_s)
        self._assessment = Assessment()
        self._focus: Collection[str] | None = None
        #: The cards' verdicts (before `hold_cause`) and the figures the job's verdict was
        #: composed from at the last push: what `explain` composes the job from again.
        self._job_cards: dict[str, Verdict] = {}
        self._job_figures: dict[str, CardFigures] = {}
        #: The lag every badge of the last push was judged with (`verdict.PushLag`).
        self._push_lag = PushLag(None)
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
        self.badges.shown.clear()
        self._assessment = Assessment()
        self._started_t = None
        self._job_cards, self._job_figures = {}, {}
        self._push_lag = PushLag(None)

    def push(self, frame: Frame, *, focus: Collection[str] | None = None) -> Assessment:
        """Add one poll and return the assessment the badge should show now.

        ``focus``: the keys (card ids, `JOB_KEY`) whose verdicts must carry the evidence
        window's figures and their reasons; the others carry the recent window's, without
        reasons (`explain` writes them). None means every key. Kinds and causes never depend
        on it.
        """
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
        focus = focus if focus is None else frozenset(focus)
        history = self._history_start()
        # Windows whose history starts at the same frame share what is found over it.
        pasts: dict[int, History] = {}

        def past(start: int) -> History:
            if start not in pasts:
                pasts[start] = History(facts[start:], self.thresholds)
            return pasts[start]

        short = max(0, len(frames) - self.recent_polls)
        recent_ids = window_ids(facts[short:])
        if focus is not None and JOB_KEY in focus and len(recent_ids) == 1:
            # A lone card's verdict is the job's: in focus with it.
            focus = focus | {recent_ids[0]}
        # The cards whose reasons are read are those in focus; the others are judged without
        # words (`judge_window`).
        self._focus = focus

        # Each card's recent window reaches back to its last `recent_polls` fresh readings, so
        # a tool that fails every other poll (stale carried-over cards) does not flip the badge
        # to unknown; a card with too few fresh readings anywhere is judged (unknown) on the
        # plain last polls. The job's recent window is the longest of them.
        starts = recent_starts(facts, self.recent_polls, short)
        job_recent = min(starts.values(), default=short)
        cache: dict[tuple[int, bool], Judgement] = {}

        def judgement(offset: int, evidence: bool = False) -> Judgement:
            """The window from ``offset`` judged whole: a recent window finds its own lag, an
            evidence window is given the push's (`verdict.PushLag`)."""
            evidence = evidence and offset != job_recent  # there the push's lag is its own
            given = self._push_lag if evidence else None
            start = min(offset, history)
            if self.reference:
                return judge_window(
                    frames[start:], [frame_facts(f) for f in frames[start:]], self.thresholds,
                    context=offset - start, words=focus, given=given,
                )
            key = (offset, evidence)
            if key not in cache:
                cache[key] = judge_window(
                    frames[start:], facts[start:], self.thresholds, context=offset - start,
                    history=past(start), words=focus, given=given,
                )
            return cache[key]

        # The job's recent window, judged first: its lag is the one every badge of this push
        # shows, given to every evidence window (and kept for `explain`).
        recent_job = judgement(job_recent)
        self._push_lag = PushLag(recent_job.lag)

        windows: dict[int, PreparedWindow] = {}
        # Each card's evidence window starts where its own verdict was adopted, so the windows
        # differ from card to card. A window most cards will read (those in focus) is judged
        # whole, once; in any other only the cards asked about are judged (`PreparedWindow`).
        # The job's is not judged at all: its verdict is composed from its cards' (below).
        shown = self.badges.shown
        cards_in = [key for key in shown if key != JOB_KEY]
        readers = Counter(
            max(0, shown[key].since - first) for key in cards_in
            if focus is None or key in focus
        )
        n_cards = len(cards_in)
        cards: dict[str, Verdict] = {}

        def evidence(key: str, since: int) -> Verdict | None:
            offset = max(0, since - first)
            if key == JOB_KEY:
                # The job over its evidence window, from the verdicts its cards' badges show
                # after this push (`verdict.job_from_cards`), the figures of the job's recent
                # window (for the lag's sentences) and the push's lag, kept for `explain`.
                window = (
                    [frame_facts(f) for f in frames[offset:]] if self.reference
                    else facts[offset:]
                )
                return job_from_cards(self._job_cards, self._job_figures, window,
                                      self._push_lag.lag, self.thresholds)
            if self.reference or (offset, True) in cache or 5 * readers[offset] >= 3 * n_cards:
                return judgement(offset, evidence=True).assessment.cards.get(key)
            if offset not in windows:
                start = min(offset, history)
                windows[offset] = PreparedWindow(
                    frames[start:], facts[start:], self.thresholds, context=offset - start,
                    history=past(start), given=self._push_lag,
                )
            return windows[offset].card(key)

        for card_id in recent_ids:
            offset = starts.get(card_id, short)
            recent = judgement(offset).assessment.cards.get(card_id)
            if recent is not None:
                cards[card_id] = self.badges.update(
                    card_id, recent, first + offset, self._in_focus(card_id), evidence, t
                )
        for gone in set(shown) - set(cards) - {JOB_KEY}:
            del shown[gone]
        self._job_cards, self._job_figures = dict(cards), recent_job.figures
        job = self.badges.update(
            JOB_KEY, recent_job.assessment.job, first + job_recent, self._in_focus(JOB_KEY),
            evidence, t,
        )
        gathered = t - (self._started_t if self._started_t is not None else t)
        if self.hold_cause and gathered < HOLD_CAUSE_MAX * self.window_s:
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
        state = self.badges.shown.get(key)
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
        state = self.badges.shown.get(key)
        if state is None or not self._frames:
            return None
        if state.brief:
            state.brief = False
            frames = [entry[2] for entry in self._frames]
            facts = (
                [frame_facts(f) for f in frames] if self.reference
                else [entry[3] for entry in self._frames]
            )
            history = self._history_start()

            def over(since: int, evidence: bool) -> Verdict | None:
                """The key's verdict, with its reasons, over the window from ``since``: its
                evidence window, or (``evidence`` False) the recent window the last push
                judged it on, judged whole as that push did."""
                offset = max(0, since - self._frames[0][0])
                start = min(offset, history)
                context = offset - start
                if key == JOB_KEY and evidence:
                    return job_from_cards(self._job_cards, self._job_figures, facts[offset:],
                                          self._push_lag.lag, self.thresholds)
                given = self._push_lag if evidence else None
                if self.reference or not evidence:
                    whole = judge_window(
                        frames[start:], facts[start:], self.thresholds, context=context,
                        given=given,
                    ).assessment
                    return whole.job if key == JOB_KEY else whole.cards.get(key)
                return PreparedWindow(
                    frames[start:], facts[start:], self.thresholds, context=context,
                    given=given,
                ).card(key)

            shown = state.verdict
            # The evidence window's figures; where it does not agree, the recent window's
            # (out of focus the verdict was kept without its reasons: they are written now).
            tries = [(state.since, True)]
            if state.figures_since is not None:
                tries.append((state.figures_since, False))
            for since, evidence in tries:
                found = over(since, evidence)
                if found is None or (found.kind, found.cause) != (shown.kind, shown.cause):
                    continue
                state.verdict = found
                state.figures_since = since
                if key == JOB_KEY:
                    self._assessment = Assessment(cards=self._assessment.cards, job=found)
                elif key in self._assessment.cards:
                    cards = dict(self._assessment.cards)
                    cards[key] = found
                    self._assessment = Assessment(cards=cards, job=self._assessment.job)
                break
        return state.verdict

    def _in_focus(self, key: str) -> bool:
        return self._focus is None or key in self._focus

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
