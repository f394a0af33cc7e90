"""The rules for the job: is one card of a job holding the others back (``imbalanced``)? Else a
summary of the cards (the most severe kind, in `SEVERITY` order).

The imbalance itself (a persistent difference in level between cards of one job, a lagging
card or a collective wait) is found by `imbalance.lagging`; here its `Lag` turns into verdicts:
the straggler's own badge is ``imbalanced`` (cause ``straggler``, or ``throttled`` where its
clocks are held down) with its own evidence kept in ``why``, cards waiting for it in a
collective are ``starving`` with cause ``collective-wait``, and the job is ``imbalanced``. With
probes in two or more ranks, the rank the probes show out of line is the straggler; where it
is out of line by its data wait (ranks in lock-step), the badges follow the same way
(`apply_measured`), even when every card's duty cycle reads busy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
from gpusat_tui.analysis.facts import FrameFacts
from gpusat_tui.analysis.probe_reading.probe_ranks import Rank
from gpusat_tui.analysis.probe_reading.straggler import Straggler, straggler
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from gpusat_tui.analysis.verdicts.card_figures import CardFigures, unknown_verdict
from gpusat_tui.analysis.verdicts.imbalance import BASIS_WORDS, Lag
from gpusat_tui.analysis.verdicts.probe_only import probe_only_jobs
from gpusat_tui.analysis.verdicts.unprobed_job import unprobed_verdict
from gpusat_tui.analysis.verdicts.worker_advice import one_worker_count
from gpusat_tui.analysis.wording import pct
from gpusat_tui.model import VERDICT_KINDS, Verdict, VerdictKind

# `Lag` and `lagging` live in `imbalance`; they are named here too, where they were imported
# from before.
__all__ = [
    "JOB_KEY",
    "SEVERITY",
    "apply_lag",
    "apply_measured",
    "collective_ranks",
    "job_verdicts",
    "judge_job",
]

#: The key of the job's verdict beside the card ids (tracker, ``check --json``).
JOB_KEY = "job"

#: The order of kinds from the most to the least severe: the job summary takes the most
#: severe kind among its cards, and ``check``'s top-level verdict breaks ties in this order.
SEVERITY: tuple[str, ...] = (
    "stalled", "imbalanced", "fragmenting", "starving", "saturated", "idle", "unknown"
)
assert set(SEVERITY) == set(VERDICT_KINDS), "every verdict kind needs a place in SEVERITY"

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


def collective_ranks(ranks: Sequence[Rank], job_of: Mapping[object, str] | None = None
                     ) -> list[Rank]:
    """The probed ranks that may wait for each other in a collective: only ranks of a
    distributed job (a world size above 1, or a rank set), and only those of one job (the
    job with the most such ranks, where ``job_of`` tells trainers' jobs apart). Two separate
    jobs' trainers never wait for each other, however different their data waits."""
    peers = [r for r in ranks if (r.world_size or 0) > 1 or r.rank is not None]
    if len(peers) < 2 or not job_of:
        return peers
    by_job: dict[str | None, list[Rank]] = {}
    for r in peers:
        by_job.setdefault(job_of.get(r.pid), []).append(r)
    return max(by_job.values(), key=len)


# --- what the lag does to the verdicts -------------------------------------------------------


def _kind_words(verdict: Verdict) -> str:
    """``starving (input-bound)``: a verdict's kind and cause, as a reason quotes them."""
    return verdict.kind + (f" ({verdict.cause})" if verdict.cause else "")


def _as_straggler(
    verdict: Verdict, lines: Sequence[str], more_advice: Sequence[str],
    cause: str = "straggler", first_advice: str | None = None,
) -> Verdict:
    """The straggler's badge: ``imbalanced``, the lines that name it first, then its own
    verdict and reasons; its own advice first, then ``more_advice`` not already given."""
    advice = list(verdict.advice)
    for line in more_advice:
        if line not in advice:
            advice.append(line)
    if first_advice is not None:
        advice.insert(0, first_advice)
    return Verdict(
        kind="imbalanced", cause=cause,
        why=[*lines, f"on its own figures: {_kind_words(verdict)}", *verdict.why],
        advice=advice, confidence=verdict.confidence,
    )


def _own_reasons(verdict: Verdict) -> list[str]:
    """A waiting card's own reasons, less those about a cause it no longer has."""
    return [w for w in verdict.why if not w.startswith(("no host bottleneck", "cause "))]


def _waiting_advice(slow: str, speed_up: str) -> list[str]:
    """Advice for a card that waits for ``slow`` in every collective."""
    return [
        f"Nothing to tune on this card: it waits for {slow} in every collective. Speed up "
        f"{speed_up}, and this card's utilisation will turn into work",
        "A larger batch or AMP here would not help: the step time is set by the slowest rank",
    ]


def apply_lag(card_id: str, verdict: Verdict, lag: Lag | None) -> Verdict:
    """The card's verdict once the job's lag is known: a straggler's badge is ``imbalanced``
    (its own figures kept in ``why``); a card waiting for it in a collective is ``starving``
    with cause ``collective-wait``; any other card keeps its verdict."""
    if lag is None or card_id not in lag.group or verdict.kind in ("idle", "unknown", "stalled"):
        return verdict
    if card_id in lag.stragglers:
        throttled = card_id in lag.throttled
        return _as_straggler(
            verdict, [lag.line(card_id), lag.held_line()], _STRAGGLER_ADVICE,
            cause="throttled" if throttled else "straggler",
            first_advice=_THROTTLED_ADVICE if throttled else None,
        )
    waiting = card_id in lag.waiters or (
        verdict.kind == "starving" and verdict.cause == "light-kernels"
    )
    if not waiting:
        return verdict
    slow = ", ".join(lag.stragglers)
    if verdict.kind not in ("starving", "saturated"):
        return verdict.model_copy(update={"why": [*verdict.why, lag.waiter_line(card_id)]})
    own = _own_reasons(verdict)
    return Verdict(
        kind="starving", cause="collective-wait",
        why=[*own[:2], lag.waiter_line(card_id), *own[2:]],
        advice=_waiting_advice(slow, f"{slow} (see its verdict)"),
        confidence=verdict.confidence,
    )


def _measured_advice(rank: Rank) -> list[str]:
    return [
        f"Look at what differs on {rank.name}: its DataLoader workers and their CPU, its data "
        "shard (equal sample counts but unequal sample sizes; bucket by length), its storage",
        "Give every rank the same input pipeline (num_workers, prefetch_factor, local copies "
        "of the data)",
        "If only that rank's card is slow: check it for throttling in the vendor tool",
    ]


def apply_measured(
    card_id: str, verdict: Verdict, slow: Straggler, ranks: Sequence[Rank],
    figures: Mapping[str, CardFigures],
) -> Verdict:
    """The card's verdict once the probes name a straggler that waits on its data: its own
    card is ``imbalanced`` (straggler), its own figures kept in ``why``; a card driven by a
    rank that does not wait on data is ``starving`` (collective-wait), whatever its duty cycle
    says (a rank waiting in the all-reduce keeps it near 100 %).

    Only for ranks stepping in lock-step (the data-wait basis: a step-time straggler's peers
    are not waiting for it) and only where every card involved is tied to its rank by the
    device itself, not guessed from local rank order: a guessed tie could re-badge the wrong
    card. Any other card keeps its verdict."""
    if slow.basis != "data-wait" or verdict.kind in ("idle", "unknown", "stalled"):
        return verdict
    late = slow.rank
    if late.card_id is None or late.tie == "guess":
        return verdict
    if card_id == late.card_id:
        return _as_straggler(verdict, slow.lines[:1], _measured_advice(late))
    mine = [r for r in ranks if r.card_id == card_id and r.wait_pct is not None]
    if not mine or any(r.tie == "guess" for r in mine) or verdict.kind not in (
        "starving", "saturated"
    ):
        return verdict
    wait = max(r.wait_pct or 0.0 for r in mine)
    label = figures[card_id].label if card_id in figures else "utilisation"
    line = (
        f"waits in the collective for {late.name} ({late.card_id}): {late.name} waits "
        f"{late.wait_pct or 0.0:.0f} % of the window on its DataLoader, "
        f"{' and '.join(r.name for r in mine)} on this card {wait:.0f} %; {label} counts "
        "the time spent waiting in the all-reduce as busy"
    )
    return Verdict(
        kind="starving", cause="collective-wait",
        why=[line, f"on its own figures: {_kind_words(verdict)}", *_own_reasons(verdict)],
        advice=_waiting_advice(
            late.name, f"{late.name}'s input pipeline (see {late.card_id})"
        ),
        confidence=verdict.confidence,
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
        what, source = BASIS_WORDS[lag.basis]
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
    pf = {c: frac for c in group
          if c in figures and (frac := figures[c].pfrac) is not None}
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
    evidence: Callable[[], HostEvidence] | None = None,
    *,
    apply: bool = True,
    job_of: Mapping[object, str] | None = None,
    facts: Sequence[FrameFacts] = (),
    job_evidence: Callable[[str], HostEvidence] | None = None,
) -> tuple[Verdict, dict[str, Verdict]]:
    """The job verdict, and the card verdicts once the job's lag is applied (`apply_lag`).
    ``lag_of(active)`` finds the lag among the active cards (`lagging` over the history).

    With probes in two or more ranks (``ranks``), the straggler is the rank the probes show
    out of line (`straggler.straggler`): named in ``why`` and decisive even when the cards'
    utilisation looks even (the others' all-reduce wait keeps their duty cycle up).
    With no card at all but probed trainers (no accelerator tool), the verdict stands on the
    probes and the host (``evidence``: the host evidence of the window; `probe_only`); with
    neither, the trainers with no probe in the window ``facts`` (`unprobed_job`).
    ``apply=False``: the card verdicts are returned as given (a caller that only wants the
    job's verdict, of cards already judged with the lag). ``job_of``: each trainer's job key,
    so that only the ranks of one job are compared (`collective_ranks`); ``job_evidence``: a
    job's own evidence by its key (with no card, several jobs are judged apart).
    """
    if not verdicts:
        if ranks and evidence is not None:
            return probe_only_jobs(ranks, evidence, thresholds, job_of,
                                   job_evidence), verdicts
        unprobed = unprobed_verdict(facts, thresholds)
        if unprobed is not None:
            return unprobed, verdicts
        return unknown_verdict(
            ["no card in the window"],
            ["No accelerator tool answered: see the status line for what was searched"],
        ), verdicts
    if len(verdicts) == 1:
        return next(iter(verdicts.values())), verdicts

    active = [c for c, v in verdicts.items() if v.kind not in ("idle", "unknown") and c in figures]
    lag = lag_of(active)
    peers = collective_ranks(ranks, job_of)
    slow = straggler(peers, thresholds) if len(peers) >= 2 else None
    if slow is not None:
        updated = verdicts if not apply else {
            c: apply_measured(c, v, slow, peers, figures) for c, v in verdicts.items()
        }
        return _measured_straggler(slow, lag, verdicts, figures), updated
    if lag is not None:
        updated = verdicts if not apply else {c: apply_lag(c, v, lag) for c, v in verdicts.items()}
        return _job_verdict(lag, verdicts, figures), updated

    known = {c: v for c, v in verdicts.items() if v.kind != "unknown"}
    if not known:
        paused = [v for v in verdicts.values() if v.cause == "paused"]
        if paused:  # nothing runs, not yet a stall: say so, not "not enough data"
            first = paused[0]
            ids = [c for c, v in verdicts.items() if v.cause == "paused"]
            return first.model_copy(update={"why": [
                f"{len(ids)} of {len(verdicts)} cards paused: {', '.join(ids)}", *first.why,
            ]}), verdicts
        first = next(iter(verdicts.values()))
        return unknown_verdict(
            [f"no card has enough data yet ({len(verdicts)} cards)", *first.why[:1]],
            list(first.advice),
        ), verdicts
    by_kind = Counter(v.kind for v in known.values())
    busy_kinds: list[VerdictKind] = [k for k in by_kind if k != "idle"]
    kind: VerdictKind = min(busy_kinds or ["idle"], key=SEVERITY.index)
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
    advice = one_worker_count(advice)
    conf = min(v.confidence for v in chosen) if chosen else 0.0
    return Verdict(kind=kind, cause=cause, why=why, advice=advice, confidence=conf), verdicts


def _measured_straggler(
    slow: Straggler,
    lag: Lag | None,
    verdicts: Mapping[str, Verdict],
    figures: Mapping[str, CardFigures],
) -> Verdict:
    """``imbalanced`` (straggler) named by the probes; the utilisation lag, if any, quoted."""
    rank = slow.rank
    why = list(slow.lines)
    if lag is not None:
        first = lag.group[0]
        # The lag is found over the window's history; a card of its group may have no
        # figures in this judgement (gone from the newest polls): the lag's own label then.
        label = figures[first].label if first in figures else lag.label
        why.append(
            ", ".join(f"{c} at {pct(lag.levels[c])}" for c in lag.stragglers)
            + f" while {', '.join(lag.others)} run at {pct(lag.ref_level())} ({label} levels,"
            " the mean of the middle half)"
        )
    if rank.tie == "guess":
        why.append("which card each rank drives is a guess (local rank order)")
    advice = _measured_advice(rank)
    confs = [v.confidence for v in verdicts.values() if v.kind != "unknown"]
    conf = round(max(0.5, min(0.9, min(confs) if confs else 0.5)), 2)
    return Verdict(kind="imbalanced", cause="straggler", why=why, advice=advice, confidence=conf)


def job_verdicts(
    cards: Mapping[str, Verdict], job_cards: Mapping[str, Sequence[str]]
) -> dict[str, Verdict]:
    """Each job's own verdict from its cards' verdicts (as shown: with their hysteresis and
    any lag of that job already applied): one card's verdict is its job's; several give the
    summary `judge_job` gives (the most severe kind, the cards that show it). A job with no
    card seen gets none. Two jobs on two cards: two verdicts, each from its own cards."""
    out: dict[str, Verdict] = {}
    for key, ids in job_cards.items():
        mine = {c: cards[c] for c in dict.fromkeys(ids) if c in cards}
        if mine:
            out[key] = judge_job(mine, {}, lambda _active: None, apply=False)[0]
    return out
