"""The rules for the job: ``imbalanced`` when a card of one job lags far behind the others,
else a summary of the cards (the most severe busy kind, in `_SEVERITY` order)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpusat_tui.analysis.card import CardFigures, unknown_verdict
from gpusat_tui.analysis.evidence import ProcessTie
from gpusat_tui.analysis.measured import Rank, straggler
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.wording import pct
from gpusat_tui.model import Verdict

__all__ = ["JOB_KEY", "Lag", "judge_job", "lagging"]

#: The key of the job's verdict beside the card ids (tracker, ``check --json``).
JOB_KEY = "job"

_SEVERITY = ("imbalanced", "starving", "fragmenting", "saturated", "idle", "unknown")


@dataclass
class Lag:
    """The first group of cards of one job with a card lagging far behind the others."""

    group: list[str]
    laggards: list[str]
    others: list[str]
    centers: dict[str, float]
    other_med: float
    basis: str
    #: Lagging card -> its limiting clock-event reasons, where the others show none of them.
    throttled: dict[str, list[str]] = field(default_factory=dict)

    def line(self, card_id: str) -> str:
        """The line added to a lagging card's ``why``."""
        line = (
            f"lags the job: {pct(self.centers[card_id])} vs {pct(self.other_med)} "
            f"on {', '.join(self.others)}"
        )
        if self.throttled.get(card_id):
            line += f"; its clocks are held down ({', '.join(self.throttled[card_id])})"
        return line


def lagging(
    active: list[str],
    figures: Mapping[str, CardFigures],
    tie: ProcessTie,
    thresholds: Thresholds,
) -> Lag | None:
    groups, basis = tie.groups(active)
    for group in groups:
        if len(group) < 2:
            continue
        centers = {c: figures[c].util.median for c in group}
        leader = max(centers.values())
        laggards = [
            c
            for c in group
            if centers[c] <= thresholds.imbalance_ratio * leader
            and leader - centers[c] >= thresholds.imbalance_gap_pct
        ]
        if not laggards or len(laggards) == len(group):
            continue
        others = [c for c in group if c not in laggards]
        other_med = statistics.median(centers[c] for c in others)
        # A laggard held down by a limit the leading cards are not under: that is the cause.
        leading = {r for c in others for r in figures[c].throttled(thresholds)}
        throttled = {
            c: reasons
            for c in laggards
            if (reasons := [r for r in figures[c].throttled(thresholds) if r not in leading])
        }
        return Lag(group, laggards, others, centers, other_med, basis, throttled)
    return None


def judge_job(
    verdicts: dict[str, Verdict],
    figures: dict[str, CardFigures],
    tie: ProcessTie,
    thresholds: Thresholds,
    ranks: Sequence[Rank] = (),
) -> tuple[Verdict, dict[str, Verdict]]:
    """The job verdict, and the card verdicts with a line added to any lagging card.

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
    lag = lagging(active, figures, tie, thresholds)
    slow = straggler(ranks, thresholds) if len(ranks) >= 2 else None
    if slow is not None:
        return _measured_straggler(slow, lag, verdicts, figures), verdicts
    if lag is not None:
        group, laggards, others = lag.group, lag.laggards, lag.others
        centers, other_med, basis = lag.centers, lag.other_med, lag.basis
        label = figures[group[0]].label
        lag_txt = ", ".join(f"{c} at {pct(centers[c])}" for c in laggards)
        why = [
            f"{lag_txt} while {', '.join(others)} run at {pct(other_med)} "
            f"({label} medians): the cards of one job are uneven, and every step waits for "
            "the slowest",
            f"{basis}",
        ]
        pf = {c: figures[c].pfrac.median for c in group if figures[c].pfrac is not None}
        if len(pf) == len(group):
            why.append(
                "power: " + ", ".join(f"{c} {pct(100 * pf[c])} of cap" for c in group)
            )
        cause = "straggler"
        advice: list[str] = []
        if lag.throttled:
            cause = "throttled"
            for c in lag.throttled:
                line = figures[c].throttle_line(thresholds.for_vendor(figures[c].vendor))
                why.insert(1, f"{c}: {line}, the others not: the lag is its clocks")
            advice.append(
                "The lagging card is throttled: check its cooling and airflow (thermal), its "
                "power limit (nvidia-smi -q -d PERFORMANCE,POWER) and the board's power "
                "supply (hardware slowdown / power brake); sync boost ties its clocks to "
                "the slowest card of the group"
            )
        advice += [
            "Look at what differs on the lagging rank: its DataLoader workers, its data "
            "shard (equal sample counts but unequal sample sizes; bucket by length)",
            "Check the lagging card for throttling (clocks, temperature, power cap) in the "
            "vendor tool",
            "Communication: a slow link or a rank across sockets stalls every all-reduce; "
            "the collective library's debug log (NCCL_DEBUG=INFO or the vendor's) shows it",
            "With pipeline or model parallelism, rebalance the layers between stages",
        ]
        conf = min(verdicts[c].confidence for c in group) or 0.5
        updated = dict(verdicts)
        for c in laggards:
            v = updated[c]
            updated[c] = v.model_copy(update={"why": [*v.why, lag.line(c)]})
        job = Verdict(
            kind="imbalanced", cause=cause, why=why, advice=advice,
            confidence=round(max(0.3, min(0.9, conf)), 2),
        )
        return job, updated

    known = {c: v for c, v in verdicts.items() if v.kind != "unknown"}
    if not known:
        first = next(iter(verdicts.values()))
        return unknown_verdict(
            [f"no card has enough data yet ({len(verdicts)} cards)", *first.why[:1]],
            list(first.advice),
        ), verdicts
    by_kind = Counter(v.kind for v in known.values())
    busy_kinds = [k for k in by_kind if k != "idle"]
    kind = min(busy_kinds or ["idle"], key=_SEVERITY.index)
    chosen = [v for v in known.values() if v.kind == kind]
    causes = Counter(v.cause for v in chosen)
    cause = causes.most_common(1)[0][0] if chosen else None
    why = []
    for k in sorted(by_kind, key=_SEVERITY.index):
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
