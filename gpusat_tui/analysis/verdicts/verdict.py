"""The verdict engine: is each card saturated, and if not, why? Pure; no Textual, no I/O.

``judge(window)`` looks at a window of Frames and returns one `Verdict` per card plus one for
the job. It has no memory and no hysteresis (see `tracker.VerdictTracker` for that), so ``check``
and ``report`` can call it on any stretch of a run.

How a card is judged, in order (each step quotes the figures that decided it in ``why``):

1. ``unknown``: fewer than ``min_samples`` fresh readings (stale carried-over readings are not
   evidence), or no utilisation figure at all.
2. ``idle``: no VRAM held and no utilisation, or no VRAM held and power near the floor even if
   the utilisation figure says busy (AMD/Iluvatar can read 100 % on an idle card).
3. ``fragmenting`` (a heuristic): VRAM nearly full, utilisation near 0 and used memory moving
   up and down: the allocator is churning, the card is not computing.
4. ``saturated``: utilisation (median) at or above the busy line, and power near its cap where
   the tool gives both. Between the "low" and "saturated" power lines it is still called
   saturated, with the caveat in ``why``; on a tool without power it is judged on utilisation
   alone, also said in ``why``. Utilisation is a duty cycle (any running kernel counts), so
   power against cap is the better signal where it exists.
5. ``stalled``: VRAM held, no utilisation, the trainer and its workers at ~0 % CPU and making
   no progress (no batch counted by a probe, their progress counters flat; without counters,
   no disk wait), for at least ``stall_min_s`` (read over the history, see below): a hung
   collective, a deadlock, a paused process, a checkpoint stuck on storage. Shorter than that
   it is ``unknown`` with cause ``paused`` (`progress`, `stall`).
6. ``starving``: anything else that holds VRAM. The ``cause`` comes from the evidence
   (`causes`; measured findings outrank inferred ones): ``input-bound`` (DataLoader workers
   pegged, or asking for a full core once their time queued for a CPU is added),
   ``checkpoint`` (the trainer's own writes), ``io-bound`` (the input pipeline in
   disk-sleep, host iowait high, or workers asleep on reads), ``host-bound`` (the trainer
   pegged while workers are not, beside a card that is not busy), ``light-kernels``
   (utilisation steadily high but power low, with no host bottleneck: small kernels keep the
   duty cycle up without doing much work), ``collective-wait`` (set by the job rules for a
   peer on this host; for a distributed job's pegged trainer beside a busy card, a peer on
   another node), or ``unknown``.

Medians, not means, decide: one dip or one spike in a short window does not change a verdict,
and a window that is two thirds new evidence already reads as the new state (this is what lets
the tracker react within three polls).

Processes are tied to cards through ``ProcessSample.card_ids`` (a worker inherits its trainer's
cards), else through their job's cards (`Frame.jobs`: a probe's tie). When no process in the
window has any ``card_ids`` and one job runs, every process is assumed to serve every card: the
common single-job machine; with two or more jobs and no card named, no card takes any job's
processes as evidence (its cause is ``unknown``). A card two jobs drive says so in ``why``.

The job verdict is ``imbalanced`` when cards of one job (the same job key in `Frame.jobs`; in
recordings without jobs, cards sharing a trainer, or all cards that hold memory) have one
holding the others back,
persistently over the history (`imbalance`): then the straggler's own badge is ``imbalanced`` too,
and cards waiting for it in a collective are ``starving``/``collective-wait``. Otherwise the
job takes the most severe of its cards' kinds (`job.SEVERITY`).

History: `judge_prepared` takes ``context``, a number of frames before the window that only the
rules measuring a duration read (imbalance persistence, stall duration): the tracker judges
kinds on a 3-poll recent window, and gives it the last ``Thresholds.history_s`` as history.
`judge` uses the whole window for both.

Where each part lives (this module is the small public entry and re-exports the names callers
use):

* `analysis.thresholds` — every line drawn (`Thresholds`, per-vendor overrides);
  `analysis.wording` — shared formatting of ``why`` and ``advice``;
* `analysis.facts` — what is read of one Frame, once (`frame_facts`);
* `analysis.evidence` — `process_tie`: which processes serve which card; `host_figures`: each
  host figure and its fold, `poll_evidence`: a poll's, `host_evidence`: the window's,
  `host_words`: the sentences that write them;
* `analysis.probe_reading` — `probe_facts`: a probe's publication, `probe_ranks`: each probed
  trainer over the window, `measured`: what they show of a card, `straggler`: the rank out of
  line;
* here, in `analysis.verdicts`: `stall` — how long a card has held its memory with nothing
  running anywhere; `causes` — why a starving card starves, from that evidence;
  `card_figures` — one card's figures over a window and the sentences that quote them;
  `card` — the rules for one card; `imbalance` — whether one card of a job holds the others
  back (`Lag`); `job` — what that does to the verdicts, and the job's summary.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

from gpusat_tui.analysis.evidence.host_evidence import EvidenceCache, HostEvidence
from gpusat_tui.analysis.evidence.process_tie import ProcessTie
from gpusat_tui.analysis.facts import FrameFacts, frame_facts
from gpusat_tui.analysis.probe_reading.measured import Measured, measured_for_card
from gpusat_tui.analysis.probe_reading.probe_ranks import ranks_of
from gpusat_tui.analysis.probe_reading.straggler import straggler
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from gpusat_tui.analysis.verdicts.card import is_idle, judge_card
from gpusat_tui.analysis.verdicts.card_figures import CardFigures, light_figures
from gpusat_tui.analysis.verdicts.imbalance import Lag, lagging
from gpusat_tui.analysis.verdicts.job import apply_lag, apply_measured, collective_ranks, judge_job
from gpusat_tui.analysis.verdicts.stall import Stall, stall_lines, stall_run
from gpusat_tui.model import Assessment, Frame, Verdict

__all__ = [
    "History",
    "Judgement",
    "PreparedWindow",
    "PushLag",
    "job_from_cards",
    "judge",
    "judge_card_prepared",
    "judge_prepared",
    "judge_window",
    "window_ids",
]


def judge(window: Sequence[Frame], thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Assessment:
    """Verdicts for every card seen in ``window`` plus one for the job. Pure; never raises on
    missing, NaN or odd figures: too little data gives ``unknown`` with the reason."""
    frames = [f for f in (window or ()) if f is not None]
    return judge_prepared(frames, [frame_facts(f) for f in frames], thresholds)


class History:
    """What the rules measuring a duration compute over one history (the frames they read:
    imbalance persistence, stall duration): its process tie, the lags found in it, the
    cards' stalls. A tracker push judges several windows (each card's evidence window starts
    where its verdict was adopted), and those whose history starts at the same frame share
    one `History`, so that a lag or a stall is found once per push, not once per window.
    """

    def __init__(self, facts: Sequence[FrameFacts], thresholds: Thresholds) -> None:
        self.facts = facts
        self.thresholds = thresholds
        self.tie = ProcessTie(facts)
        self._lags: dict[tuple[str, ...], Lag | None] = {}
        self._stalls: dict[tuple[str, tuple[float, ...]], Stall | None] = {}

    def lag(self, active: list[str]) -> Lag | None:
        key = tuple(active)
        if key not in self._lags:
            self._lags[key] = lagging(active, self.facts, self.tie, self.thresholds)
        return self._lags[key]

    def stall(self, card_id: str, th: Thresholds) -> Stall | None:
        key = (card_id, stall_lines(th))
        if key not in self._stalls:
            self._stalls[key] = stall_run(self.facts, card_id, self.tie, th)
        return self._stalls[key]


class PushLag(NamedTuple):
    """The lag found once for a whole tracker push (over its history, among the cards busy in
    its recent window), given to every other window judged in that push: a card's evidence
    window then re-badges the same straggler its badge names, and no window searches the
    history again."""

    lag: Lag | None


class _Window:
    """What judging one window needs, shared between its cards.

    ``frames[context:]`` is the window judged; the ``context`` frames before it are history
    that only the rules measuring a duration read (imbalance persistence, stall duration).
    ``history``: that history's `History` when the caller shares one between windows (it
    must hold the same ``facts``). ``given``: the push's lag, used instead of one found here.
    """

    def __init__(
        self, frames: Sequence[Frame], facts: Sequence[FrameFacts], thresholds: Thresholds,
        context: int, history: History | None = None, given: PushLag | None = None,
    ) -> None:
        context = max(0, min(context, len(facts)))
        self.frames = frames[context:]
        self.facts = facts[context:]
        self.thresholds = thresholds
        self.ids = window_ids(self.facts)
        #: Each frame's fresh readings by card, read by every card of the window.
        self.fresh_maps = [ff.fresh for ff in self.facts]
        self.past = history if history is not None else History(facts, thresholds)
        self.tie = self.past.tie if context == 0 else ProcessTie(self.facts)
        self.evidence = EvidenceCache(self.facts, self.tie)
        #: The probed trainers in the window.
        self.ranks = ranks_of(self.facts, thresholds)
        self.given = given
        #: The lag this window found (when its job was judged and none was given).
        self.found: Lag | None = None

    def stall(self, card_id: str, th: Thresholds) -> Stall | None:
        return self.past.stall(card_id, th)

    def card(self, card_id: str, words: bool = True) -> tuple[Verdict, CardFigures | None]:
        verdict, figs = judge_card(
            self.frames, self.facts, card_id, self.thresholds, self.evidence, self.stall,
            self.measured, self.fresh_maps, words,
        )
        shared = (
            self.tie.shared_line(card_id, self._own_waits(card_id))
            if words and self.tie.job_cards else None
        )
        if shared is not None:
            verdict = verdict.model_copy(update={"why": [shared, *verdict.why]})
        return verdict, figs

    def _own_waits(self, card_id: str) -> dict[str, str]:
        """Each job's own measured data wait on ``card_id`` (its probed trainers'), by key."""
        waits: dict[str, list[float]] = {}
        for r in self.ranks:
            key = self.tie.job_of.get(r.pid)
            if r.card_id == card_id and key is not None and r.wait_pct is not None:
                waits.setdefault(key, []).append(r.wait_pct)
        return {key: f"its data wait {max(w):.0f} %, measured" for key, w in waits.items()}

    def measured(self, card_id: str) -> Measured | None:
        return measured_for_card(self.ranks, card_id)

    def lag(self, active: list[str]) -> Lag | None:
        if self.given is not None:
            return self.given.lag
        self.found = self.past.lag(active)
        return self.found


def judge_prepared(
    frames: Sequence[Frame],
    facts: Sequence[FrameFacts],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    *,
    context: int = 0,
    history: History | None = None,
) -> Assessment:
    """`judge` with each frame's `frame_facts` already taken (``facts[i]`` of ``frames[i]``,
    no ``None`` frames): the tracker keeps them so that a frame is read once, not once per
    window it appears in. Same result as ``judge(frames, thresholds)`` when ``context`` is 0.

    ``context``: the first ``context`` frames are history, not part of the window: the cards
    are judged on the rest, while imbalance and stalls are judged over all of them (the
    tracker judges a short recent window, and these rules need a longer view). ``history``:
    the `History` of those frames, where the caller shares one between windows.
    """
    return judge_window(frames, facts, thresholds, context=context, history=history).assessment


class Judgement(NamedTuple):
    """A window's assessment, the figures its card verdicts were drawn from (the cards with
    figures: not unknown), and the lag its job found (None: none, or none looked for)."""

    assessment: Assessment
    figures: dict[str, CardFigures]
    lag: Lag | None = None


def judge_window(
    frames: Sequence[Frame],
    facts: Sequence[FrameFacts],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    *,
    context: int = 0,
    history: History | None = None,
    words: Collection[str] | None = None,
    given: PushLag | None = None,
) -> Judgement:
    """`judge_prepared`, with the cards' figures kept: the tracker composes the job's verdict
    from its cards' shown verdicts and these figures (`job_from_cards`).

    ``words``: the cards whose verdicts say why (None: all). The others get their kind, cause,
    advice and confidence only, ``why`` empty: the dashboard shows only the badges of cards out
    of its focus, and writing their reasons was about a fifth of judging them. ``given``: the
    push's lag (`PushLag`), instead of one found over this window's history."""
    window = _Window(frames, facts, thresholds, context, history, given)
    verdicts: dict[str, Verdict] = {}
    figures: dict[str, CardFigures] = {}
    for cid in window.ids:
        verdict, figs = window.card(cid, words is None or cid in words)
        verdicts[cid] = verdict
        if figs is not None:
            figures[cid] = figs
    job, verdicts = judge_job(verdicts, figures, window.lag, window.ranks, thresholds,
                              evidence=lambda: window.evidence(""), job_of=window.tie.job_of,
                              facts=facts, job_evidence=window.evidence.of_job)
    if words is not None:
        # The rules that add to a verdict after the card's own (a probe's figures, the job's
        # lag) write their lines anyway: none is kept where no reason is asked for.
        verdicts = {
            cid: v.model_copy(update={"why": []}) if v.why and cid not in words else v
            for cid, v in verdicts.items()
        }
    return Judgement(Assessment(cards=verdicts, job=job), figures, window.found)


def job_from_cards(
    cards: Mapping[str, Verdict],
    figures: Mapping[str, CardFigures],
    facts: Sequence[FrameFacts],
    lag: Lag | None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> Verdict:
    """The job's verdict over the window ``facts`` from card verdicts given, not judged here:
    the tracker gives the cards' verdicts as their badges show them, so the job line's "3 of
    8 cards starving" names the cards whose badges say so, and the lag those badges were
    judged with (`PushLag`; ``figures``: the cards', for the power fractions and labels the
    lag's sentences quote). The probes' ranks and the host evidence are the window's.

    Costs the window's probe ranks and no card judgement: judging every card again over the
    job's window was ~40 % of a dashboard push.
    """

    tie = ProcessTie(facts)
    cache = EvidenceCache(facts, tie)

    def host_evidence() -> HostEvidence:
        return cache("")

    job, _ = judge_job(dict(cards), dict(figures), lambda _active: lag,
                       ranks_of(facts, thresholds), thresholds, evidence=host_evidence,
                       apply=False, job_of=tie.job_of, facts=facts,
                       job_evidence=cache.of_job)
    return job


def window_ids(facts: Sequence[FrameFacts]) -> list[str]:
    """Every card id in the window, in order of first appearance (as `window.card_ids` gives
    it for the frames)."""
    seen: dict[str, None] = {}
    last: object = None
    for ff in facts:
        keys = ff.cards.keys()
        if keys == last:
            continue  # the same cards as the poll before (most polls): nothing new
        last = keys
        seen.update(dict.fromkeys(keys))
    return list(seen)


class PreparedWindow:
    """One window's card verdicts, judged one card at a time, on demand.

    ``window.card(card_id) ==
    judge_prepared(frames, facts, thresholds, context=context).cards.get(card_id)``.
    The tracker re-reads each card's evidence window (every poll since its verdict was
    adopted) on every poll, and cards adopt verdicts at different polls: judging every card
    in every one of those windows cost up to a full judgement of all cards per card. Here only
    the cards asked about are judged in full; of the others only what the job's imbalance test
    reads is computed, once per window (unknown or idle), since a card's verdict changes when
    it is a straggler or waits for one; a straggler the probes name, or the push's lag given
    (`PushLag`), needs none of it.
    """

    def __init__(
        self,
        frames: Sequence[Frame],
        facts: Sequence[FrameFacts],
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
        *,
        context: int = 0,
        history: History | None = None,
        given: PushLag | None = None,
    ) -> None:
        self._window = _Window(frames, facts, thresholds, context, history, given)
        self._lag: Lag | None = None
        self._lag_done = False

    def card(self, card_id: str) -> Verdict | None:
        """The card's verdict in this window (None when the window never shows the card)."""
        window = self._window
        if card_id not in window.ids:
            return None
        verdict, figs = window.card(card_id)
        if len(window.ids) == 1 or figs is None or verdict.kind == "idle":
            return verdict  # alone, unknown or idle: the job's lag never changes it
        peers = collective_ranks(window.ranks, window.tie.job_of)
        if len(peers) >= 2:
            # The probes' straggler outranks the utilisation lag (`job.judge_job`).
            slow = straggler(peers, window.thresholds)
            if slow is not None:
                return apply_measured(card_id, verdict, slow, peers, {card_id: figs})
        return apply_lag(card_id, verdict, self._lagging())

    def _lagging(self) -> Lag | None:
        if self._window.given is not None:
            return self._window.given.lag  # the push's: no light pass to find the active cards
        if not self._lag_done:
            window = self._window
            active: list[str] = []
            for cid in window.ids:
                figs, th = light_figures(
                    window.facts, cid, window.thresholds, window.fresh_maps
                )
                if figs is not None and not is_idle(figs, th):
                    active.append(cid)
            self._lag = window.lag(active)
            self._lag_done = True
        return self._lag


def judge_card_prepared(
    frames: Sequence[Frame],
    facts: Sequence[FrameFacts],
    card_id: str,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    *,
    context: int = 0,
) -> Verdict | None:
    """``judge_prepared(frames, facts, thresholds, context=context).cards.get(card_id)``,
    judging only that card in full (see `PreparedWindow`)."""
    return PreparedWindow(frames, facts, thresholds, context=context).card(card_id)
