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
5. ``starving``: anything else that holds VRAM. The ``cause`` comes from the host evidence:
   ``input-bound`` (DataLoader workers pegged), ``io-bound`` (workers in disk-sleep, or host
   iowait high), ``host-bound`` (the trainer pegged while workers are not),
   ``light-kernels`` (utilisation steadily high but power low, with no host bottleneck: small
   kernels keep the duty cycle up without doing much work), or ``unknown``.

Medians, not means, decide: one dip or one spike in a short window does not change a verdict,
and a window that is two thirds new evidence already reads as the new state (this is what lets
the tracker react within three polls).

Processes are tied to cards through ``ProcessSample.card_ids`` (a worker inherits its trainer's
cards). When no process in the window has any ``card_ids``, every process is assumed to serve
every card: the common single-job machine. Two unrelated jobs on one machine without card ids
would then share their host evidence; the ``why`` lines show the figures used so this is visible.

The job verdict is ``imbalanced`` when cards of one job (cards sharing a trainer; or, when every
trainer drives one card as in DDP, all cards that hold memory) have one lagging far behind the
others; otherwise it summarises the cards.

Where each part lives (this module is the small public entry and re-exports the names callers
use):

* `thresholds` — every line drawn (`Thresholds`, per-vendor overrides);
* `facts` — what is read of one Frame, once (`frame_facts`);
* `evidence` — which processes serve which card, and the host figures over the window;
* `causes` — why a starving card starves, from that evidence;
* `card` — the rules for one card; `job` — the rules for the job (imbalance, the summary);
* `wording` — shared formatting and sentences of ``why`` and ``advice``.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusat_tui.analysis.card import CardFigures, is_idle, judge_card, light_figures
from gpusat_tui.analysis.causes import STARVING_CAUSES
from gpusat_tui.analysis.evidence import EvidenceCache, ProcessTie
from gpusat_tui.analysis.facts import FrameFacts, frame_facts
from gpusat_tui.analysis.job import JOB_KEY, Lag, judge_job, lagging
from gpusat_tui.analysis.measured import measured_for_card, ranks_of
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from gpusat_tui.analysis.wording import ALLOC_CONF_VARS
from gpusat_tui.model import Assessment, Frame, Verdict

__all__ = [
    "ALLOC_CONF_VARS",
    "DEFAULT_THRESHOLDS",
    "JOB_KEY",
    "STARVING_CAUSES",
    "FrameFacts",
    "PreparedWindow",
    "Thresholds",
    "frame_facts",
    "judge",
    "judge_card_prepared",
    "judge_prepared",
]


def judge(window: Sequence[Frame], thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Assessment:
    """Verdicts for every card seen in ``window`` plus one for the job. Pure; never raises on
    missing, NaN or odd figures: too little data gives ``unknown`` with the reason."""
    frames = [f for f in (window or ()) if f is not None]
    return judge_prepared(frames, [frame_facts(f) for f in frames], thresholds)


def judge_prepared(
    frames: Sequence[Frame],
    facts: Sequence[FrameFacts],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> Assessment:
    """`judge` with each frame's `frame_facts` already taken (``facts[i]`` of ``frames[i]``,
    no ``None`` frames): the tracker keeps them so that a frame is read once, not once per
    window it appears in. Same result as ``judge(frames, thresholds)``."""
    tie = ProcessTie(facts)
    evidence = EvidenceCache(facts, tie)
    ranks = ranks_of(facts, thresholds)
    verdicts: dict[str, Verdict] = {}
    figures: dict[str, CardFigures] = {}
    for cid in _ids(facts):
        verdict, figs = judge_card(
            frames, facts, cid, thresholds, evidence, lambda c: measured_for_card(ranks, c)
        )
        verdicts[cid] = verdict
        if figs is not None:
            figures[cid] = figs
    job, verdicts = judge_job(verdicts, figures, tie, thresholds, ranks)
    return Assessment(cards=verdicts, job=job)


def _ids(facts: Sequence[FrameFacts]) -> list[str]:
    """Every card id in the window, in order of first appearance (as `card_ids`)."""
    seen: dict[str, None] = {}
    for ff in facts:
        for cid in ff.cards:
            seen.setdefault(cid, None)
    return list(seen)


class PreparedWindow:
    """One window's card verdicts, judged one card at a time, on demand.

    ``window.card(card_id) == judge_prepared(frames, facts, thresholds).cards.get(card_id)``.
    The tracker re-reads each card's evidence window (every poll since its verdict was
    adopted) on every poll, and cards adopt verdicts at different polls: judging every card
    in every one of those windows cost up to a full judgement of all cards per card. Here only
    the cards asked about are judged in full; of the others only what the job's imbalance test
    reads is computed, once per window (unknown or idle, and the utilisation median), since a
    lagging card's ``why`` gains a line from it.
    """

    def __init__(
        self,
        frames: Sequence[Frame],
        facts: Sequence[FrameFacts],
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
    ) -> None:
        self._frames = frames
        self._facts = facts
        self._thresholds = thresholds
        self._ids = _ids(facts)
        self._tie = ProcessTie(facts)
        self._evidence = EvidenceCache(facts, self._tie)
        self._ranks = ranks_of(facts, thresholds)
        self._lag: Lag | None = None
        self._lag_done = False

    def card(self, card_id: str) -> Verdict | None:
        """The card's verdict in this window (None when the window never shows the card)."""
        if card_id not in self._ids:
            return None
        verdict, figs = judge_card(
            self._frames, self._facts, card_id, self._thresholds, self._evidence,
            lambda c: measured_for_card(self._ranks, c),
        )
        if len(self._ids) == 1 or figs is None or verdict.kind == "idle":
            return verdict  # alone, unknown or idle: never a lagging card of a job
        # Utilisation medians are at most 100, so a card above these lines lags no leader:
        # the other cards need not be read at all (the common case, a busy card).
        th = self._thresholds
        center = figs.util.median
        if center > 100.0 - th.imbalance_gap_pct or (
            th.imbalance_ratio >= 0 and center > 100.0 * th.imbalance_ratio
        ):
            return verdict
        lag = self._lagging()
        if lag is None or card_id not in lag.laggards:
            return verdict
        return verdict.model_copy(update={"why": [*verdict.why, lag.line(card_id)]})

    def _lagging(self) -> Lag | None:
        if not self._lag_done:
            figures: dict[str, CardFigures] = {}
            active: list[str] = []
            for cid in self._ids:
                figs, th = light_figures(self._facts, cid, self._thresholds)
                if figs is not None:
                    figures[cid] = figs
                    if not is_idle(figs, th):
                        active.append(cid)
            self._lag = lagging(active, figures, self._tie, self._thresholds)
            self._lag_done = True
        return self._lag


def judge_card_prepared(
    frames: Sequence[Frame],
    facts: Sequence[FrameFacts],
    card_id: str,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> Verdict | None:
    """``judge_prepared(frames, facts, thresholds).cards.get(card_id)``, judging only that card
    in full (see `PreparedWindow`)."""
    return PreparedWindow(frames, facts, thresholds).card(card_id)
