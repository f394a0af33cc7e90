"""Is one card of a job holding the others back? The job's imbalance: `lagging` finds it, `Lag`
holds what was found and the sentences that quote it (`job` applies it to the verdicts).

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

What a lag does to the verdicts (the straggler's badge, the waiting cards' cause, the job's
verdict) is `job`'s.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat

from gpusat_tui.analysis.clean_series import sorted_figures
from gpusat_tui.analysis.evidence.process_tie import ProcessTie
from gpusat_tui.analysis.facts import CardFacts, FrameFacts
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.verdicts.card_figures import throttle_counts
from gpusat_tui.analysis.wording import duration, pct
from gpusat_tui.model import UTIL_LABELS

__all__ = ["BASIS_WORDS", "Lag", "lagging"]

#: What each basis of comparison is, for ``why``.
BASIS_WORDS = {
    "sm": ("SM activity", "measured by the GPM counters"),
    "power": ("power share of cap", "work inferred from power"),
}


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
        what, _ = BASIS_WORDS[self.basis]
        waiting = ", ".join(f"{c} at {self._level(c)}" for c in self.waiters)
        verbs = "reads busy but waits" if len(self.waiters) == 1 else "read busy but wait"
        return (
            f"the job waits for this card: it works at {self._level(card_id)} ({what}) "
            f"while {waiting} {verbs} in a collective"
        )

    def waiter_line(self, card_id: str) -> str:
        what, _ = BASIS_WORDS.get(self.basis, ("utilisation", ""))
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


def _trimmed_mean(ordered: Sequence[float]) -> float:
    """A card's level from its figures, sorted (at least one): the mean of the middle half (a
    quarter trimmed off each end). One spike or dip does not move it, and unlike the median it
    does not jump from one mode to the other on a card that alternates between 0 and 100 %."""
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

    def level(c: str, part: range) -> float | None:
        """The card's level in one stretch (None where it has no figure there)."""
        ordered = sorted_figures(series[c][part.start : part.stop])
        return _trimmed_mean(ordered) if ordered else None

    # The high cards' median level in each stretch, the same for every low card; found when
    # first compared (a low card is dropped at its first stretch that is not low enough, and
    # most are at the first: the later stretches are then never read).
    references: dict[int, float | None] = {}

    def reference(i: int) -> float | None:
        if i not in references:
            found = [m for h in high if (m := level(h, stretches[i])) is not None]
            references[i] = statistics.median(found) if found else None
        return references[i]

    held: list[str] = []
    for c in low:
        ok = True
        compared = 0
        for i, part in enumerate(stretches):
            mine = level(c, part)
            if mine is None:
                continue
            ref = reference(i)
            if ref is None:
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
    # Each frame's fresh utilisation by card; a card's series is one C-level map over them.
    fresh_util = [ff.fresh_util for ff in history]
    for group in groups:
        if len(group) < 2:
            continue
        util = {c: list(map(dict.get, fresh_util, repeat(c))) for c in group}
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
        if len(busy) < 2 or not _may_wait_in_collective(history, tie, group):
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


def _may_wait_in_collective(
    history: Sequence[FrameFacts], tie: ProcessTie, group: list[str]
) -> bool:
    """No collective story without ranks: where the group's trainers are seen, one of them
    must be a rank of several (its launcher's world size or rank, or a probe's). Without any
    process (the tool alone) the cards' figures are all there is, and they are read as
    before."""
    seen = False
    for ff in history:
        if any(p.world_size is not None and p.world_size > 1 for p in ff.probes):
            return True
        for p in ff.procs:
            if not p.is_trainer or (tie.any_card_ids and not tie.tied_cards(p) & set(group)):
                continue
            seen = True
            if (p.world_size or 0) > 1 or (p.world_size is None and p.rank is not None):
                return True
    return not seen


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
