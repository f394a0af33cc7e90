"""Run statistics over a window of Frames: per-card series and robust summaries.

Pure helpers shared by the verdict engine, ``report`` and the UI. Everything here tolerates
missing figures: ``None``, NaN, infinities, negative readings and even non-numbers (objects built
with ``model_construct`` skip pydantic's validators) are all treated as "no figure", so a
statistic is computed from what is left or is ``None``. Nothing here raises on odd input.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from gpusat_tui.model import CardReading, Frame

__all__ = [
    "CARD_FIELDS",
    "Stats",
    "card_ids",
    "card_readings",
    "card_series",
    "interval_s",
    "num",
    "power_frac_series",
    "reversals",
    "series_stats",
    "stats",
]

#: Numeric CardReading fields a series can be taken of.
CARD_FIELDS: tuple[str, ...] = (
    "util_pct", "mem_used_mib", "mem_total_mib", "mem_pct", "power_w", "power_cap_w", "temp_c",
)


def num(value: object) -> float | None:
    """A finite, non-negative float, or None. Bools and strings are not figures."""
    if type(value) is float:
        # The common case (a validated model's figure), answered without conversions; NaN
        # fails both comparisons.
        return value if 0.0 <= value < math.inf else None
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    if not math.isfinite(value) or value < 0:
        return None
    return value


class Stats(NamedTuple):
    """Summary of the figures present in a series (missing ones are skipped, and counted).

    A named tuple (immutable, compared by value): the verdict builds two or three for every
    card of every window it judges, and a frozen dataclass costs four times as much to make."""

    n: int
    missing: int
    mean: float
    median: float
    min: float
    max: float
    last: float

    @property
    def span(self) -> float:
        """max - min: how far the figure swung over the window."""
        return self.max - self.min


def stats(values: Iterable[object]) -> Stats | None:
    """Mean/median/min/max/last of the usable figures, or None when there are none."""
    present: list[float] = []
    missing = 0
    for value in values:
        figure = num(value)
        if figure is None:
            missing += 1
        else:
            present.append(figure)
    if not present:
        return None
    return Stats(
        n=len(present),
        missing=missing,
        mean=math.fsum(present) / len(present),
        median=statistics.median(present),
        min=min(present),
        max=max(present),
        last=present[-1],
    )


def cards_of(frame: Frame) -> list[CardReading]:
    cards = getattr(frame, "cards", None)
    return list(cards) if isinstance(cards, (list, tuple)) else []


def card_id_of(card: CardReading) -> str | None:
    try:
        return card.id
    except Exception:  # a constructed object without vendor/index: not a card we can name
        return None


def card_ids(frames: Iterable[Frame]) -> list[str]:
    """Every card id seen in the window, in order of first appearance."""
    seen: dict[str, None] = {}
    for frame in frames:
        for card in cards_of(frame):
            cid = card_id_of(card)
            if cid is not None:
                seen.setdefault(cid, None)
    return list(seen)


def card_readings(
    frames: Iterable[Frame], card_id: str, *, fresh_only: bool = True
) -> list[CardReading]:
    """The readings of one card, one per frame that has it.

    ``fresh_only`` drops readings carried over from an earlier poll (``stale_s`` set): a
    figure repeated because the tool failed is not new evidence.
    """
    out: list[CardReading] = []
    for frame in frames:
        for card in cards_of(frame):
            if card_id_of(card) != card_id:
                continue
            if fresh_only and getattr(card, "stale_s", None) is not None:
                continue
            out.append(card)
            break
    return out


def card_series(
    frames: Iterable[Frame], card_id: str, field: str, *, fresh_only: bool = True
) -> list[float | None]:
    """One figure per reading of ``card_id`` (``None`` where the tool gave none)."""
    if field not in CARD_FIELDS:
        raise ValueError(f"unknown card field {field!r}; one of {', '.join(CARD_FIELDS)}")
    return [
        num(getattr(card, field, None))
        for card in card_readings(frames, card_id, fresh_only=fresh_only)
    ]


def _power_frac(card: CardReading) -> float | None:
    power = num(getattr(card, "power_w", None))
    cap = num(getattr(card, "power_cap_w", None))
    if power is None or not cap:
        return None
    return power / cap


def power_frac_series(
    frames: Iterable[Frame], card_id: str, *, fresh_only: bool = True
) -> list[float | None]:
    """Power as a fraction of cap per reading; None where power or a non-zero cap is missing."""
    return [_power_frac(c) for c in card_readings(frames, card_id, fresh_only=fresh_only)]


def series_stats(
    frames: Iterable[Frame], card_id: str, field: str, *, fresh_only: bool = True
) -> Stats | None:
    """`stats` of one card field over the window."""
    return stats(card_series(frames, card_id, field, fresh_only=fresh_only))


def reversals(values: Iterable[object], min_step: float = 0.0) -> int:
    """How often a series changes direction (up then down, or down then up).

    Steps no larger than ``min_step`` are ignored so that jitter is not counted as churn.
    """
    count = 0
    direction = 0
    previous: float | None = None
    for value in values:
        figure = num(value)
        if figure is None:
            continue
        if previous is not None and abs(figure - previous) > min_step:
            step = 1 if figure > previous else -1
            if direction and step != direction:
                count += 1
            direction = step
        if previous is None or abs(figure - previous) > min_step:
            previous = figure
    return count


def interval_s(frames: Sequence[Frame]) -> float | None:
    """Median seconds between consecutive polls, or None with fewer than two usable times."""
    times = [num(getattr(f, "t", None)) for f in frames]
    steps = [b - a for a, b in itertools.pairwise(times) if a is not None and b is not None]
    steps = [s for s in steps if s > 0]
    return statistics.median(steps) if steps else None
