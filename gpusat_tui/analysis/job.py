"""The rules for the job: is one card of a job holding the others back (``imbalanced``)? Else a
summary of the cards (the most severe kind, in `SEVERITY` order).

Imbalance is a **persistent** difference in level between cards of one job, judged over the
history the caller gives (the tracker gives the last ``Thresholds.history_s``; `judge` the
whole window), never over one instant:

* a card's level is the mean of the middle half of its figures over the history (robust to
  a spike, and steady on a card that alternates between 0 and 100 %); a candidate sits at
  most ``imbalance_ratio`` of the leader's level and ``imbalance_gap_pct`` points below it;
* the gap must hold in each third of the history (the candidate's level in that stretch
  against the median of the others' levels there), so two cards that swing out of phase,
  each in turn above the other, are never uneven;
* when any card of the group swings, at least ``imbalance_swing_min_s`` of history is needed:
  a few polls of swinging cards always look uneven.

Two patterns are looked for, on two figures:

1. **a card that lags** (utilisation): it is the straggler (typically its own input pipeline);
2. **a collective wait** (SM activity from GPM where every card of the group has it, which is
   measured; else power share of cap, from which work is inferred): cards that read busy at
   a low level beside a busy peer at a high one. A rank waiting for a peer spins in an
   all-reduce kernel (a duty cycle of ~100 % at a fraction of the power of compute); the peer
   doing the work at a high level is the straggler, and the waiting cards are ``starving``
   with cause ``collective-wait`` (not told to raise their batch size).

The straggler's own badge is ``imbalanced`` (cause ``straggler``) with its own evidence kept
in ``why``; the other cards keep theirs.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gpusat_tui.analysis.card_figures import CardFigures, throttle_counts, unknown_verdict
from gpusat_tui.analysis.evidence import ProcessTie
from gpusat_tui.analysis.facts import CardFacts, FrameFacts, sorted_figures
from gpusat_tui.analysis.measured import Rank, straggler
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from gpusat_tui.analysis.wording import duration, pct
from gpusat_tui.model import UTIL_LABELS, VERDICT_KINDS, Verdict

__all__ = ["JOB_KEY", "SEVERITY", "Lag", "apply_lag", "judge_job", "lagging"]

#: The key of the job's verdict beside the card ids (tracker, ``check --json``).
JOB_KEY = "job"

#: The order of kinds from the most to the least severe: the job summary takes the most
#: severe kind among its cards, and ``check``'s top-level verdict breaks ties in this order.
SEVERITY: tuple[str, ...] = (
    "stalled", "imbalanced", "fragmenting", "starving", "saturated", "idle", "unknown"
)
assert set(SEVERITY) == set(VERDICT_KINDS), "every verdict kind needs a place in SEVERITY"

#: What each basis of comparison is, for ``why``.
_BASIS_WORDS = {
    "sm": ("SM activity", "measured by the GPM counters"),
    "power": ("power share of cap", "work inferred from power"),
}

_THROTTLED_ADVICE = (
    "The lagging card is throttled: check its cooling and airflow (thermal), its "
    "power limit (nvidia-smi -q -d PERFORMANCE,POWER) and the board's power "
    "supply (hardware slowdown / power brake); sync boost ties its clocks to "
    "the slowest card of the group"
)

_STRAGGLER_ADVICE = [
    "Look at what differs on the lagging rank: its DataLoader workers, its data "
    "shard (equal sample counts but unequal sample sizes; bucket by length)",
    "Check the lagging card for throttling (clocks, temperature, power cap) in the "
    "vendor tool",
    "Communication: a slow link or a rank across sockets stalls every all-reduce; "
    "the collective library's debug log (NCCL_DEBUG=INFO or the vendor's) shows it",
    "With pipeline or model parallelism, rebalance the layers between stages",
]


@dataclass
class Lag:
    """The first group of cards of one job where some cards hold the others back."""

    group: list[str]
    #: The cards the job waits for.
    stragglers: list[str]
    #: The rest of the group.
    others: list[str]
    #: "lag" (the straggler is behind) or "collective" (the others wait for it).
    pattern: str
    #: "util", "sm" or "power": the figure compared (levels are in percent).
    basis: str
    #: Each card's level over the history (median of the basis figure).
    levels: dict[str, float]
    #: Cards seen waiting in a collective for the stragglers (the low cards in "collective").
    waiters: list[str]
    #: How the group was formed (by trainer, or all cards as one job).
    grouping: str
    #: Seconds of history and the stretches in which the gap held.
    seconds: float
    stretches: int
    polls: int
    label: str = "util"
    #: Utilisation level of every card of the group (for the collective pattern's lines).
    utils: dict[str, float] = field(default_factory=dict)
    #: Straggler -> its limiting clock-event reasons where the other cards show none of them,
    #: and the line quoting them: then the lag is its clocks (cause ``throttled``).
    throttled: dict[str, list[str]] = field(default_factory=dict)
    throttle_lines: dict[str, str] = field(default_factory=dict)

    @property
    def cause(self) -> str:
        return "throttled" if self.throttled else "straggler"

    @property
    def laggards(self) -> list[str]:
        """The cards the job waits for (the name older callers use)."""
        return self.stragglers

    def _level(self, card_id: str) -> str:
        return pct(self.levels[card_id])

    def ref_level(self) -> float:
        return statistics.median(self.levels[c] for c in self.others)

    def held_line(self) -> str:
        if self.stretches <= 1 or self.polls <= self.stretches:
            return f"the gap held in every one of {self.polls} polls"
        return (
            f"the gap held in each of {self.stretches} stretches of the last "
            f"{duration(self.seconds)}, not at one instant"
        )

    def line(self, card_id: str) -> str:
        """The first line of a straggler's ``why``."""
        line = self._line(card_id)
        if self.throttled.get(card_id):
            line += f"; its clocks are held down ({', '.join(self.throttled[card_id])})"
        return line

    def _line(self, card_id: str) -> str:
        if self.pattern == "lag":
            return (
                f"lags the job: {self._level(card_id)} vs {pct(self.ref_level())} "
                f"on {', '.join(self.others)}"
            )
        what, _ = _BASIS_WORDS[self.basis]
        waiting = ", ".join(f"{c} at {self._level(c)}" for c in self.waiters)
        verbs = "reads busy but waits" if len(self.waiters) == 1 else "read busy but wait"
        return (
            f"the job waits for this card: it works at {self._level(card_id)} ({what}) "
            f"while {waiting} {verbs} in a collective"
        )

    def waiter_line(self, card_id: str) -> str:
        what, _ = _BASIS_WORDS.get(self.basis, ("utilisation", ""))
        slow = ", ".join(f"{c} at {self._level(c)}" for c in self.stragglers)
        return (
            f"waits in a collective for {slow}: {self.label} reads "
            f"{pct(self.utils.get(card_id, 0.0))} (a waiting all-reduce kernel keeps the duty "
            f"cycle up) at only {self._level(card_id)} {what}"
            if self.pattern == "collective"
            else f"waits in a collective for {', '.join(self.stragglers)}: busy by "
            f"{self.label}, at low power, while the straggler lags"
        )


# --- finding the lag -------------------------------------------------------------------------


def _level(values: Sequence[float]) -> float | None:
    """A robust level: the mean of the middle half (a quarter trimmed off each end). One spike
    or dip does not move it, and unlike the median it does not jump from one mode to the
    other on a card that alternates between 0 and 100 %."""
    return _trimmed_mean(sorted(values)) if values else None


def _trimmed_mean(ordered: Sequence[float]) -> float:
    """`_level` of figures already sorted (and at least one)."""
    n = len(ordered)
    cut = n // 4
    return math.fsum(ordered[cut : n - cut]) / (n - 2 * cut)


def _fresh_readings(history: Sequence[FrameFacts], cards: Sequence[str]) -> dict[
    str, list[CardFacts | None]
]:
    """Per card, its fresh reading at each poll of the history (None where it has none): read
    once, then each figure the lag compares is taken from it."""
    return {c: [ff.fresh.get(c) for ff in history] for c in cards}


def _power(readings: list[CardFacts | None]) -> list[float | None]:
    return [
        None if r is None or r.pfrac is None else min(100.0, 100.0 * r.pfrac) for r in readings
    ]


def _sm(readings: list[CardFacts | None]) -> list[float | None]:
    return [None if r is None else r.sm_active for r in readings]


def _chunks(n: int, k: int) -> list[range]:
    """``k`` consecutive stretches of ``range(n)`` (as even as they come)."""
    k = max(1, min(k, n))
    bounds = [round(i * n / k) for i in range(k + 1)]
    return [range(bounds[i], bounds[i + 1]) for i in range(k)]


def _persistent(
    series: Mapping[str, list[float | None]],
    low: Sequence[str],
    high: Sequence[str],
    gap: float,
) -> tuple[list[str], int]:
    """The cards of ``low`` whose level stays ``gap`` below the median of ``high``'s levels
    in each third of the history, and how many stretches were compared."""
    n = len(next(iter(series.values())))
    stretches = _chunks(n, 3)

    def levels(c: str) -> list[float | None]:
        """The card's level in each stretch (None where it has no figure there)."""
        values = series[c]
        out = []
        for part in stretches:
            ordered = sorted_figures(values[part.start : part.stop])
            out.append(_trimmed_mean(ordered) if ordered else None)
        return out

    # The high cards' median level in each stretch: the same for every low card.
    theirs = list(zip(*[levels(h) for h in high], strict=True))
    reference = [
        statistics.median(found) if (found := [m for m in part if m is not None]) else None
        for part in theirs
    ]
    held: list[str] = []
    for c in low:
        ok = True
        compared = 0
        for mine, ref in zip(levels(c), reference, strict=True):
            if mine is None or ref is None:
                continue
            compared += 1
            if ref - mine < gap:
                ok = False
                break
        if ok and compared >= min(len(stretches), 3):
            held.append(c)
    return held, len(stretches)


def _span_s(history: Sequence[FrameFacts]) -> float:
    times = [ff.t for ff in history if ff.t is not None]
    return max(times) - min(times) if len(times) >= 2 else 0.0


def _levels(
    cards: Sequence[str], series: Mapping[str, list[float | None]], th: Thresholds
) -> tuple[dict[str, float], dict[str, float]] | None:
    """Each card's level over the history, and how far its figures swung there (max - min);
    None when one has too few figures to compare."""
    levels: dict[str, float] = {}
    spans: dict[str, float] = {}
    for c in cards:
        ordered = sorted_figures(series[c])
        if len(ordered) < th.min_samples:
            return None
        levels[c] = _trimmed_mean(ordered) or 0.0
        spans[c] = ordered[-1] - ordered[0]
    return levels, spans


def _find(
    levels: Mapping[str, float],
    spans: Mapping[str, float],
    series: Mapping[str, list[float | None]],
    gap: float,
    th: Thresholds,
    seconds: float,
) -> tuple[list[str], list[str], int] | None:
    """(low cards that persist, the high cards, stretches compared) among ``levels``' cards
    (``spans``: how far each one's figures swung in the history), or None."""
    pool = list(levels)
    if len(pool) < 2:
        return None
    leader = max(levels.values())
    low = [
        c for c in pool
        if levels[c] <= th.imbalance_ratio * leader and leader - levels[c] >= gap
    ]
    high = [c for c in pool if c not in low]
    if not low or not high:
        return None
    swinging = any(spans[c] >= th.swing_util_pct for c in pool)
    if swinging and seconds < th.imbalance_swing_min_s:
        return None
    held, stretches = _persistent(series, low, high, gap)
    if not held:
        return None
    return held, high, stretches


def lagging(
    active: list[str],
    history: Sequence[FrameFacts],
    tie: ProcessTie,
    thresholds: Thresholds,
) -> Lag | None:
    """The first group of ``active`` cards in which some cards hold the others back,
    judged over ``history`` (see the module docstring)."""
    if len(active) < 2 or not history:
        return None
    th = thresholds
    groups, grouping = tie.groups(active)
    seconds = _span_s(history)
    polls = len(history)
    for group in groups:
        if len(group) < 2:
            continue
        util = {
            c: [None if (r := ff.fresh.get(c)) is None else r.util for ff in history]
            for c in group
        }
        found_levels = _levels(group, util, th)
        if found_levels is None:
            continue
        utils, spans = found_levels
        vendor = str(getattr(_last_card(history, group[0]), "vendor", ""))
        label = UTIL_LABELS.get(vendor, "util")
        # 1. a card that lags on utilisation
        found = _find(utils, spans, util, th.imbalance_gap_pct, th, seconds)
        if found is not None:
            held, _high, stretches = found
            others = [c for c in group if c not in held]
            return _throttled(
                Lag(group, held, others, "lag", "util", utils, [], grouping, seconds,
                    stretches, polls, label, utils),
                history, th,
            )
        # 2. a collective wait: busy cards at a low level beside a busy peer at a high one
        busy_line = th.for_vendor(vendor).busy_util_pct
        busy = [c for c in group if utils[c] >= busy_line]
        if len(busy) < 2:
            continue
        readings = _fresh_readings(history, busy)
        sm = {c: _sm(readings[c]) for c in busy}
        if all(len(sm[c]) - sm[c].count(None) >= th.min_samples for c in busy):
            basis, series, gap = "sm", sm, th.imbalance_gap_pct
        else:
            basis, series = "power", {c: _power(readings[c]) for c in busy}
            gap = th.imbalance_power_gap_pct
        found_levels = _levels(busy, series, th)
        if found_levels is None:
            continue
        levels, spans = found_levels
        found = _find(levels, spans, series, gap, th, seconds)
        if found is None:
            continue
        waiters, high, stretches = found
        others = [c for c in group if c not in high]
        return _throttled(
            Lag(group, high, others, "collective", basis, levels, waiters, grouping,
                seconds, stretches, polls, label, utils),
            history, th,
        )
    return None


def _throttled(lag: Lag, history: Sequence[FrameFacts], th: Thresholds) -> Lag:
    """``lag`` with the stragglers held down by a limit the other cards are not under."""
    if not any(ff.any_throttle for ff in history):
        return lag  # no reading names a limiting reason (most): no card is held down
    reasons: dict[str, list[str]] = {}
    lines: dict[str, str] = {}
    for c in lag.group:
        counts, n = throttle_counts(
            [r.throttle for ff in history if (r := ff.fresh.get(c)) is not None]
        )
        if counts and n:
            held = [r for r, k in counts.items() if k >= th.throttled_frac * n]
            if held:
                reasons[c] = held
                quoted = ", ".join(f"{r} in {counts[r]}" for r in held)
                lines[c] = f"clocks held down ({quoted} of {n} polls; clock-event reasons)"
    leading = {r for c in lag.others for r in reasons.get(c, [])}
    for c in lag.stragglers:
        own = [r for r in reasons.get(c, []) if r not in leading]
        if own:
            lag.throttled[c] = own
            lag.throttle_lines[c] = lines[c]
    return lag


def _last_card(history: Sequence[FrameFacts], card_id: str) -> object:
    for ff in reversed(history):
        reading = ff.cards.get(card_id)
        if reading is not None:
            return reading.card
    return None


# --- what the lag does to the verdicts -------------------------------------------------------


def apply_lag(card_id: str, verdict: Verdict, lag: Lag | None) -> Verdict:
    """The card's verdict once the job's lag is known: a straggler's badge is ``imbalanced``
    (its own figures kept in ``why``); a card waiting for it in a collective is ``starving``
    with cause ``collective-wait``; any other card keeps its verdict."""
    if lag is None or card_id not in lag.group or verdict.kind in ("idle", "unknown", "stalled"):
        return verdict
    if card_id in lag.stragglers:
        own = verdict.kind + (f" ({verdict.cause})" if verdict.cause else "")
        why = [lag.line(card_id), lag.held_line(), f"on its own figures: {own}", *verdict.why]
        advice = list(verdict.advice)
        for line in _STRAGGLER_ADVICE:
            if line not in advice:
                advice.append(line)
        if card_id in lag.throttled:
            advice.insert(0, _THROTTLED_ADVICE)
        return Verdict(
            kind="imbalanced", cause="throttled" if card_id in lag.throttled else "straggler",
            why=why, advice=advice, confidence=verdict.confidence,
        )
    waiting = card_id in lag.waiters or (
        verdict.kind == "starving" and verdict.cause == "light-kernels"
    )
    if not waiting:
        return verdict
    slow = ", ".join(lag.stragglers)
    if verdict.kind not in ("starving", "saturated"):
        return verdict.model_copy(update={"why": [*verdict.why, lag.waiter_line(card_id)]})
    own = [w for w in verdict.why if not w.startswith(("no host bottleneck", "cause "))]
    advice = [
        f"Nothing to tune on this card: it waits for {slow} in every collective. Speed up "
        f"{slow} (see its verdict), and this card's utilisation will turn into work",
        "A larger batch or AMP here would not help: the step time is set by the slowest rank",
    ]
    return Verdict(
        kind="starving", cause="collective-wait",
        why=[*own[:2], lag.waiter_line(card_id), *own[2:]],
        advice=advice, confidence=verdict.confidence,
    )


def _job_verdict(lag: Lag, verdicts: Mapping[str, Verdict],
                 figures: Mapping[str, CardFigures]) -> Verdict:
    group, stragglers, others = lag.group, lag.stragglers, lag.others
    if lag.pattern == "lag":
        lag_txt = ", ".join(f"{c} at {pct(lag.levels[c])}" for c in stragglers)
        why = [
            f"{lag_txt} while {', '.join(others)} run at {pct(lag.ref_level())} "
            f"({lag.label} levels, the mean of the middle half): the cards of one job are "
            "uneven, and every step waits "
            "for the slowest",
        ]
    else:
        what, source = _BASIS_WORDS[lag.basis]
        slow = ", ".join(f"{c} at {pct(lag.levels[c])}" for c in stragglers)
        waiting = ", ".join(f"{c} at {pct(lag.levels[c])}" for c in lag.waiters)
        busy = ", ".join(f"{c} {pct(lag.utils[c])}" for c in group if c in lag.utils)
        why = [
            f"{slow} while {waiting} ({what}, {source}): every card reads busy ({lag.label} "
            f"{busy}), but {', '.join(lag.waiters)} "
            f"{'waits' if len(lag.waiters) == 1 else 'wait'} in a collective for "
            f"{', '.join(stragglers)}, the straggler",
        ]
    for c in lag.throttled:
        why.append(f"{c}: {lag.throttle_lines[c]}, the others not: the lag is its clocks")
    why += [lag.held_line(), lag.grouping]
    pf = {c: figures[c].pfrac for c in group
          if c in figures and figures[c].pfrac is not None}
    if lag.basis != "power" and len(pf) == len(group):
        why.append("power: " + ", ".join(f"{c} {pct(100 * pf[c])} of cap" for c in group))
    advice = list(_STRAGGLER_ADVICE)
    if lag.pattern == "collective":
        advice.insert(
            0,
            f"Find what makes {', '.join(stragglers)} slower than its peers: a larger shard or "
            "longer samples on its rank, more layers or parameters placed on it, or "
            "throttling (clocks, temperature) in the vendor tool",
        )
    if lag.throttled:
        advice.insert(0, _THROTTLED_ADVICE)
    conf = min(verdicts[c].confidence for c in group if c in verdicts) or 0.5
    return Verdict(
        kind="imbalanced", cause=lag.cause, why=why, advice=advice,
        confidence=round(max(0.3, min(0.9, conf)), 2),
    )


def judge_job(
    verdicts: dict[str, Verdict],
    figures: dict[str, CardFigures],
    lag_of: Callable[[list[str]], Lag | None],
    ranks: Sequence[Rank] = (),
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> tuple[Verdict, dict[str, Verdict]]:
    """The job verdict, and the card verdicts once the job's lag is applied (`apply_lag`).
    ``lag_of(active)`` finds the lag among the active cards (`lagging` over the history).

    With probes in two or more ranks (``ranks``), the straggler is the rank the probes show
    out of line (`measured.straggler`): named in ``why`` and decisive even when the cards'
    utilisation looks even (the others' all-reduce wait keeps their duty cycle up).
    """
    if not verdicts:
        return unknown_verdict(
            ["no card in the window"],
            ["No accelerator tool answered: see the status line for what was searched"],
        ), verdicts
    if len(verdicts) == 1:
        return next(iter(verdicts.values())), verdicts

    active = [c for c, v in verdicts.items() if v.kind not in ("idle", "unknown") and c in figures]
    lag = lag_of(active)
    slow = straggler(ranks, thresholds) if len(ranks) >= 2 else None
    if slow is not None:
        return _measured_straggler(slow, lag, verdicts, figures), verdicts
    if lag is not None:
        updated = {c: apply_lag(c, v, lag) for c, v in verdicts.items()}
        return _job_verdict(lag, verdicts, figures), updated

    known = {c: v for c, v in verdicts.items() if v.kind != "unknown"}
    if not known:
        first = next(iter(verdicts.values()))
        return unknown_verdict(
            [f"no card has enough data yet ({len(verdicts)} cards)", *first.why[:1]],
            list(first.advice),
        ), verdicts
    by_kind = Counter(v.kind for v in known.values())
    busy_kinds = [k for k in by_kind if k != "idle"]
    kind = min(busy_kinds or ["idle"], key=SEVERITY.index)
    chosen = [v for v in known.values() if v.kind == kind]
    causes = Counter(v.cause for v in chosen)
    cause = causes.most_common(1)[0][0] if chosen else None
    why = []
    for k in sorted(by_kind, key=SEVERITY.index):
        ids = [c for c, v in known.items() if v.kind == k]
        why.append(f"{len(ids)} of {len(verdicts)} cards {k}: {', '.join(ids)}")
    missing = len(verdicts) - len(known)
    if missing:
        why.append(f"{missing} of {len(verdicts)} cards without enough data")
    advice: list[str] = []
    for v in chosen:
        if v.cause == cause:
            for line in v.advice:
                if line not in advice:
                    advice.append(line)
    conf = min(v.confidence for v in chosen) if chosen else 0.0
    return Verdict(kind=kind, cause=cause, why=why, advice=advice, confidence=conf), verdicts


def _measured_straggler(
    slow: tuple[Rank, list[str]],
    lag: Lag | None,
    verdicts: Mapping[str, Verdict],
    figures: Mapping[str, CardFigures],
) -> Verdict:
    """``imbalanced`` (straggler) named by the probes; the utilisation lag, if any, quoted."""
    rank, lines = slow
    why = list(lines)
    if lag is not None:
        label = figures[lag.group[0]].label
        why.append(
            ", ".join(f"{c} at {pct(lag.centers[c])}" for c in lag.laggards)
            + f" while {', '.join(lag.others)} run at {pct(lag.other_med)} ({label} medians)"
        )
    if rank.tie == "guess":
        why.append("which card each rank drives is a guess (local rank order)")
    advice = [
        f"Look at what differs on {rank.name}: its DataLoader workers and their CPU, its data "
        "shard (equal sample counts but unequal sample sizes; bucket by length), its storage",
        "Give every rank the same input pipeline (num_workers, prefetch_factor, local copies "
        "of the data)",
        "If only that rank's card is slow: check it for throttling in the vendor tool",
    ]
    confs = [v.confidence for v in verdicts.values() if v.kind != "unknown"]
    conf = round(max(0.5, min(0.9, min(confs) if confs else 0.5)), 2)
    return Verdict(kind="imbalanced", cause="straggler", why=why, advice=advice, confidence=conf)
