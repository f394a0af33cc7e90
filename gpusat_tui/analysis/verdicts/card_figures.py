"""One card's figures over a window (`CardFigures`), the sentences that quote them, and how a
card's verdict is built from them.

`fresh_readings` picks a card's fresh readings out of a window's `FrameFacts`, `window_figures`
summarises them (medians, ranges, how often the used memory changed direction, clock-event
reasons) and `light_figures` is the cheap subset the job's imbalance test reads of the cards not
judged in full. The rules that read the figures are in `card`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import repeat

from gpusat_tui.analysis.clean_series import clean_median, clean_reversals, clean_stats
from gpusat_tui.analysis.facts import CardFacts, FrameFacts
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.verdicts.worker_advice import one_worker_count
from gpusat_tui.analysis.window import Stats
from gpusat_tui.analysis.wording import gib, pct
from gpusat_tui.model import UTIL_LABELS, Verdict, VerdictKind

__all__ = [
    "CardFigures",
    "fresh_readings",
    "light_figures",
    "make_verdict",
    "throttle_counts",
    "unknown_verdict",
    "window_figures",
]


@dataclass(slots=True)
class CardFigures:
    """A card's figures over the window, and the sentences that quote them."""

    card_id: str
    vendor: str
    label: str
    n: int
    util: Stats
    mem_pct: Stats | None
    #: Medians over the window (of these only the median is read): used VRAM MiB, total,
    #: power W, power cap W, power as a fraction of cap.
    mem_used: float | None
    mem_total: float | None
    power: float | None
    cap: float | None
    pfrac: float | None
    #: The VRAM % of each fresh reading, in order: what `mem_reversals` counts over.
    mem_series: Sequence[float | None]
    #: NVIDIA GPM SM activity over the window, and the median tensor-pipe activity (None
    #: where not given).
    sm_active: Stats | None = None
    tensor: float | None = None
    #: Limiting clock-event reason -> fresh readings it was active in, and how many fresh
    #: readings had the reasons read at all (0: the tool gives none).
    throttle: dict[str, int] | None = None
    throttle_n: int = 0
    #: False for a card whose verdict nobody reads the reasons of (out of the dashboard's
    #: focus): its verdict is built without ``why`` (`make_verdict`) and the lines every rule
    #: quotes are not written, about a fifth of a card's judgement over a 3-poll window.
    words: bool = True

    @property
    def mem_reversals(self) -> int:
        """How often the used memory changed direction. Counted when asked (only the
        fragmenting rule quotes it): a loop over every reading of the window, for every card
        of every judged window, was a fifth of the cost of its figures."""
        return clean_reversals(self.mem_series, 0.5)

    def throttled(self, th: Thresholds) -> list[str]:
        """Limiting reasons active in at least ``throttled_frac`` of the readings."""
        if not self.throttle or not self.throttle_n:
            return []
        return [r for r, k in self.throttle.items() if k >= th.throttled_frac * self.throttle_n]

    def throttle_line(self, th: Thresholds) -> str | None:
        reasons = self.throttled(th)
        throttle = self.throttle
        if not reasons or throttle is None:  # reasons come from throttle: never None here
            return None
        counts = ", ".join(f"{r} in {throttle[r]}" for r in reasons)
        return f"clocks held down ({counts} of {self.throttle_n} polls; clock-event reasons)"

    def gpm_line(self) -> str | None:
        if self.sm_active is None:
            return None
        line = f"SM activity (GPM) median {pct(self.sm_active.median)}"
        if self.tensor is not None:
            line += f", tensor-pipe activity {pct(self.tensor)}"
        return line

    def util_line(self, th: Thresholds) -> str:
        if not self.words:
            return ""
        u = self.util
        shape = ""
        if u.span >= th.swing_util_pct:
            shape = f" swinging {u.min:.0f}–{u.max:.0f} %"
        elif u.span >= 1:
            shape = f" (range {u.min:.0f}–{u.max:.0f} %)"
        elif u.n > 1:
            shape = ", steady"
        return f"{self.label} median {pct(u.median)}, mean {pct(u.mean)}{shape} over {u.n} samples"

    def power_line(self) -> str:
        if not self.words:
            return ""
        if self.pfrac is not None and self.cap:
            return (
                f"power {pct(100 * self.pfrac)} of {self.cap:.0f} W cap"
                + (f" ({self.power:.0f} W)" if self.power is not None else "")
            )
        if self.power is not None:
            return f"power {self.power:.0f} W (no cap reported)"
        return "no power figure"

    def vram_line(self, th: Thresholds) -> str | None:
        if not self.words:
            return None
        m = self.mem_pct
        if m is None:
            if self.mem_used is not None:
                return f"VRAM {gib(self.mem_used)} used (no total reported)"
            return None
        size = ""
        if self.mem_used is not None and self.mem_total:
            size = f" ({gib(self.mem_used)} of {gib(self.mem_total)})"
        shape = (
            ", steady"
            if m.span < th.steady_vram_pct
            else f", moving {m.min:.0f}–{m.max:.0f} %"
        )
        return f"VRAM {pct(m.median)} used{size}{shape}"

    def held(self, th: Thresholds) -> bool | None:
        if self.mem_pct is not None:
            return self.mem_pct.median >= th.held_vram_pct
        if self.mem_used is not None:
            return self.mem_used >= th.held_vram_mib
        return None


#: The order `window_figures` unpacks a window's columns in.
_COLUMNS = (
    "card", "fresh", "stale_s", "util", "mem_pct", "mem_used", "mem_total", "power", "cap",
    "pfrac", "sm_active", "tensor_active", "throttle",
)
assert CardFacts._fields == _COLUMNS, "window_figures unpacks CardFacts in this order"


@functools.lru_cache(maxsize=512)
def _confidence(base: float, n: int) -> float:
    """Less data, less confidence: full confidence from 10 samples. Cached: the bases are the
    rules' constants and ``n`` a count of polls, so few pairs recur on every poll."""
    return round(max(0.0, min(1.0, base * min(1.0, 0.5 + n / 20))), 2)


# Verdicts are built by pydantic's validating constructor: every card of every judged window
# gets one on every poll, and in pydantic 2 the core's validation of a few short lists of str
# costs less than ``model_construct``'s Python loop over the fields (measured: about 1.2 µs
# against 1.9 µs per verdict).


def make_verdict(kind: VerdictKind, cause: str | None, why: list[str], advice: list[str],
                 conf: float, f: CardFigures) -> Verdict:
    """A card's verdict from the rule that decided it (``conf``: the rule's confidence with
    enough samples); no ``why`` where ``f`` is judged without words."""
    return Verdict(
        kind=kind,
        cause=cause,
        why=[w for w in why if w] if f.words else [],
        advice=one_worker_count(advice),
        confidence=_confidence(conf, f.n),
    )


def unknown_verdict(why: list[str], advice: list[str]) -> Verdict:
    return Verdict(kind="unknown", why=why, advice=advice, confidence=0.0)


def throttle_counts(
    readings: Sequence[tuple[str, ...] | None],
) -> tuple[dict[str, int] | None, int]:
    """Limiting reason -> readings it was active in, and how many readings had the reasons
    read at all (``readings``: each fresh reading's `CardFacts.throttle`)."""
    if not any(readings):
        # No reading names a reason (most): nothing to count, only the readings that had the
        # reasons read (none where the tool gives none).
        n = len(readings) - readings.count(None)
        return ({} if n else None), n
    counts: dict[str, int] = {}
    n = 0
    for reasons in readings:
        if reasons is None:
            continue
        n += 1
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + 1
    return counts, n


def fresh_readings(
    facts: Sequence[FrameFacts],
    card_id: str,
    thresholds: Thresholds,
    fresh_maps: Sequence[dict[str, CardFacts]] | None = None,
) -> tuple[list[CardFacts], str, Thresholds]:
    """(the fresh readings, vendor, its thresholds) of one card in the window: one reading per
    frame that has the card (the first, as `card_readings` takes it); the vendor of the last
    reading, fresh or not. ``fresh_maps``: each frame's `FrameFacts.fresh`, where the caller
    reads several cards of one window."""
    if fresh_maps is None:
        fresh_maps = [ff.fresh for ff in facts]
    # A CardFacts is a non-empty tuple: filter(None) keeps exactly the frames that have one.
    fresh = list(filter(None, map(dict.get, fresh_maps, repeat(card_id))))
    vendor = ""
    for ff in reversed(facts):
        last = ff.cards.get(card_id)
        if last is not None:
            vendor = str(getattr(last.card, "vendor", ""))
            break
    return fresh, vendor, thresholds.for_vendor(vendor)


def window_figures(
    fresh: Sequence[CardFacts], card_id: str, vendor: str, th: Thresholds, words: bool = True
) -> tuple[CardFigures | None, int]:
    """The card's figures over its fresh readings (at least one), and how many of them give a
    utilisation; no figures (None) with fewer than ``th.min_samples`` of those. ``words``: see
    `CardFigures.words`."""
    n = len(fresh)
    # Every column of the readings in one call (`CardFacts` is a named tuple).
    (
        _, _, _, utils, mem_pcts, mem_used, mem_totals, powers, caps, pfracs, sms, tensors,
        throttles,
    ) = zip(*fresh, strict=True)
    util = clean_stats(utils)
    if util is None or util.n < th.min_samples:
        return None, (util.n if util else 0)
    mem_pct = clean_stats(mem_pcts)
    # The used and total MiB, the power and its cap are only quoted (the rules read the
    # fractions), but for the used MiB where no percentage is given (`held`).
    cap = clean_median(caps) if words else None
    figs = CardFigures(
        card_id=card_id,
        vendor=vendor,
        label=UTIL_LABELS.get(vendor, "util"),
        n=n,
        util=util,
        mem_pct=mem_pct,
        mem_used=clean_median(mem_used) if words or mem_pct is None else None,
        mem_total=clean_median(mem_totals) if words else None,
        power=clean_median(powers) if words else None,
        cap=cap if cap is not None and cap > 0 else None,
        pfrac=clean_median(pfracs),
        mem_series=mem_pcts,
        words=words,
    )
    if sms.count(None) != n:
        sm = clean_stats(sms)
        # GPM figures need two samples: judged on them only with enough of them.
        if sm is not None and sm.n >= th.min_samples:
            figs.sm_active = sm
            figs.tensor = clean_median(tensors)
    figs.throttle, figs.throttle_n = throttle_counts(throttles)
    return figs, util.n


def light_figures(
    facts: Sequence[FrameFacts],
    card_id: str,
    thresholds: Thresholds,
    fresh_maps: Sequence[dict[str, CardFacts]] | None = None,
) -> tuple[CardFigures | None, Thresholds]:
    """Only the figures that decide whether a card is unknown (None) or idle (`is_idle`):
    what the job's imbalance test reads of the cards `verdict.PreparedWindow` does not judge
    in full (``fresh_maps`` as for `fresh_readings`)."""
    fresh, vendor, th = fresh_readings(facts, card_id, thresholds, fresh_maps)
    if len(fresh) < th.min_samples:
        return None, th
    _, _, _, utils, mem_pcts, mem_used, _, _, _, pfracs, _, _, _ = zip(*fresh, strict=True)
    util = clean_stats(utils)
    if util is None or util.n < th.min_samples:
        return None, th
    mem_pct = clean_stats(mem_pcts)
    figs = CardFigures(
        card_id=card_id,
        vendor=vendor,
        label=UTIL_LABELS.get(vendor, "util"),
        n=len(fresh),
        util=util,
        mem_pct=mem_pct,
        # `held` reads the used MiB only when there is no percentage.
        mem_used=clean_median(mem_used) if mem_pct is None else None,
        mem_total=None,
        power=None,
        cap=None,
        pfrac=clean_median(pfracs),
        mem_series=(),
    )
    return figs, th
