"""Verdicts of the fleet view: each card as its own exporter judged it, and the job across hosts.

The exporter on each node judges its cards with the whole evidence (trainer and worker CPU,
the probe, the window of every poll) and publishes kind and cause; the fleet view shows those,
never a second guess from the thinner figures Prometheus holds. What only the fleet can judge
is the job across hosts: a node whose cards run far below the others' holds back every step of
a multi-node job. `FleetTracker` compares each host's mean card utilisation (median of its
recent fresh readings per card) with the others', using the single-machine engine's
imbalance thresholds, and names the lagging host.

All hosts the fleet source matches are taken as one job: scope the view to one job with
``--match`` (e.g. ``--match job=train``).

It offers what the dashboard asks of a tracker (``push``, ``explain``, ``reset``), and costs
O(cards x ``recent_polls``) per push: 64 hosts x 8 cards stay well under a millisecond.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Callable, Collection, Mapping

from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from gpusat_tui.analysis.verdicts.job import SEVERITY
from gpusat_tui.model import (
    Assessment,
    CardReading,
    FleetSummary,
    Frame,
    Verdict,
    VerdictKind,
    is_verdict_kind,
)

__all__ = ["FleetTracker", "lagging_hosts"]

def _rank(kind: str) -> float:
    """Severity rank, in the verdict engine's one order (`job.SEVERITY`, first wins); a kind
    a newer exporter sends that this one does not know ranks just after ``imbalanced``: a new
    kind names a problem."""
    return SEVERITY.index(kind) if kind in SEVERITY else SEVERITY.index("imbalanced") + 0.5

_VerdictLookup = Callable[[], Mapping[str, object]]


def _p(value: float) -> str:
    return f"{value:.0f} %"


def lagging_hosts(
    host_util: Mapping[str, float], thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> tuple[list[str], float] | None:
    """Hosts far behind the leader (at most ``imbalance_ratio`` of it and at least
    ``imbalance_gap_pct`` points below), and the median of the others; None when even."""
    if len(host_util) < 2:
        return None
    leader = max(host_util.values())
    lagging = [
        h for h, u in host_util.items()
        if u <= thresholds.imbalance_ratio * leader and leader - u >= thresholds.imbalance_gap_pct
    ]
    if not lagging or len(lagging) == len(host_util):
        return None
    behind = set(lagging)
    others = [u for h, u in host_util.items() if h not in behind]
    return sorted(lagging), statistics.median(others)


class FleetTracker:
    """Card verdicts from the exporters, the job verdict across hosts (see module docstring).

    ``verdicts`` and ``job_verdicts`` return the latest remote verdicts (card id -> an object
    with ``kind`` and ``cause``; host -> the same): the fleet source's attributes.
    """

    def __init__(
        self,
        verdicts: _VerdictLookup,
        job_verdicts: _VerdictLookup,
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
        recent_polls: int = 5,
        busy: Callable[[], Mapping[str, float]] | None = None,
    ) -> None:
        self._verdicts = verdicts
        self._job_verdicts = job_verdicts
        self._busy = busy
        self.thresholds = thresholds
        self._recent: deque[Frame] = deque(maxlen=max(1, recent_polls))
        self._assessment = Assessment()
        self._remote: Mapping[str, object] = {}
        #: What the dashboard shows, for a source that asks only for that (the fleet
        #: source's `FleetView`; the UI tells it what is on screen). None: every card.
        self.view: object | None = None

    @property
    def assessment(self) -> Assessment:
        return self._assessment

    def reset(self) -> None:
        self._recent.clear()
        self._assessment = Assessment()

    def explain(self, key: str) -> Verdict | None:
        """``key``'s verdict with its reasons, also for a card out of the last push's focus."""
        verdict = self._assessment.cards.get(key)
        if verdict is None or verdict.why or not self._recent:
            return verdict
        card = self._recent[-1].card(key)
        return verdict if card is None else self._card_verdict(card, self._remote.get(key))

    def push(self, frame: Frame, *, focus: Collection[str] | None = None) -> Assessment:
        """``focus`` (the dashboard's: the selected card): only those cards' verdicts carry
        reasons; the others are kind and cause, one shared `Verdict` per pair (building 8,000
        with their sentences took 86 ms a push at 1000 hosts). None: every card in full."""
        self._recent.append(frame)
        remote = self._remote = self._verdicts()
        light: dict[tuple[VerdictKind, str | None, bool], Verdict] = {}
        cards: dict[str, Verdict] = {}
        for card in frame.cards:
            found = remote.get(card.id)
            if focus is None or card.id in focus:
                cards[card.id] = self._card_verdict(card, found)
                continue
            known = card.stale_s is None and found is not None
            kind: VerdictKind = getattr(found, "kind", "unknown") if known else "unknown"
            cause = getattr(found, "cause", None) if known else None
            verdict = light.get((kind, cause, known))
            if verdict is None:  # as `_card_verdict`'s, less the sentences
                verdict = light[(kind, cause, known)] = (
                    Verdict(kind=kind, cause=cause, confidence=0.5) if known
                    else Verdict(kind="unknown")
                )
            cards[card.id] = verdict
        job = self._job(frame, cards) if frame.fleet is None else self._fleet_job(frame.fleet)
        self._assessment = Assessment(cards=cards, job=job)
        return self._assessment

    # --- cards ---------------------------------------------------------------------------------

    def _card_verdict(self, card: CardReading, remote: object) -> Verdict:
        host = card.host or "this host"
        if card.stale_s is not None:
            last = ""
            if remote is not None:
                cause = getattr(remote, "cause", None)
                last = f"; last verdict there: {getattr(remote, 'kind', '?')}"
                last += f" ({cause})" if cause else ""
            return Verdict(
                kind="unknown",
                why=[f"no fresh figures from {host} for {card.stale_s:.0f} s{last}"],
                advice=[f"Check that gpusat-tui export runs on {host} and that Prometheus "
                        "scrapes it (its target page says why a scrape fails)"],
            )
        if remote is None:
            return Verdict(
                kind="unknown",
                why=[f"{host} publishes no verdict for this card yet"],
                advice=["Wait a few polls; an exporter says unknown until it has 3 readings"],
            )
        # The fleet source passes on only the kinds this version knows (`VERDICT_KINDS`).
        kind: VerdictKind = getattr(remote, "kind", "unknown")
        cause = getattr(remote, "cause", None)
        why = [f"verdict of the exporter on {host}, which sees the trainer, its workers and "
               "the probe: " + kind + (f" ({cause})" if cause else "")]
        figures = _figures(card)
        if figures:
            why.append(figures)
        return Verdict(
            kind=kind, cause=cause, why=why,
            advice=[f"Run gpusat-tui on {host} (or check --json there) for the figures behind "
                    "it and what to try"],
            confidence=0.5,
        )

    # --- the job -------------------------------------------------------------------------------

    def _host_util(self, frame: Frame) -> tuple[dict[str, float], str]:
        """Each host's mean card utilisation, and what it was read from.

        From the exporters' busy counters where Prometheus has two samples of each of the
        host's cards (every poll of the node counts: no aliasing); else the median of each
        card's recent fresh gauge readings.
        """
        busy = self._busy() if self._busy is not None else {}
        from_counter: dict[str, list[float]] = {}
        missing: set[str] = set()
        for card in frame.cards:
            if card.stale_s is not None:
                continue
            share = busy.get(card.id)
            if share is None:
                missing.add(card.host or "")
            else:
                from_counter.setdefault(card.host or "", []).append(100.0 * share)
        if from_counter and not missing:
            hosts = {h: statistics.fmean(v) for h, v in from_counter.items()}
            return hosts, "mean utilisation between the last two scrapes, from the counters"
        per_card: dict[tuple[str, str], list[float]] = {}
        for past in self._recent:
            for card in past.cards:
                if card.stale_s is None and card.util_pct is not None:
                    per_card.setdefault((card.host or "", card.id), []).append(card.util_pct)
        gauges: dict[str, list[float]] = {}
        for (host, _), values in per_card.items():
            gauges.setdefault(host, []).append(statistics.median(values))
        hosts = {h: statistics.fmean(v) for h, v in gauges.items()}
        return hosts, f"mean card utilisation, medians of the last {len(self._recent)} polls"

    def _job(self, frame: Frame, cards: dict[str, Verdict]) -> Verdict:
        if not cards:
            return Verdict(kind="unknown", why=["no host reports any card"],
                           advice=["Check the status line for what the server answered"])
        by_host: dict[str, list[VerdictKind]] = {}
        for card in frame.cards:
            by_host.setdefault(card.host or "", []).append(cards[card.id].kind)
        busy = {
            h for h, kinds in by_host.items() if any(k not in ("idle", "unknown") for k in kinds)
        }
        host_util, basis = self._host_util(frame)
        util = {h: u for h, u in host_util.items() if h in busy}
        lag = lagging_hosts(util, self.thresholds)
        if lag is not None:
            lagging, other = lag
            names = ", ".join(f"{h} at {_p(util[h])}" for h in lagging)
            return Verdict(
                kind="imbalanced", cause="straggler",
                why=[
                    f"lagging host: {names} while the other {len(util) - len(lagging)} "
                    f"hosts run at {_p(other)} ({basis}): every step of a multi-node job "
                    "waits for the slowest node",
                    "all hosts the view matches are taken as one job (scope with --match)",
                ],
                advice=[
                    f"Look at {lagging[0]} first: its own verdicts say whether it starves "
                    "(input pipeline) or its cards throttle",
                    "Compare its data shard, DataLoader workers and network link with a "
                    "healthy host",
                ],
                confidence=0.5,
            )
        jobs = self._job_verdicts()
        inner = sorted(h for h, v in jobs.items() if getattr(v, "kind", None) == "imbalanced")
        counts: dict[VerdictKind, list[str]] = {}
        for host, kinds in by_host.items():
            known = [k for k in kinds if k != "unknown"]
            kind: VerdictKind = min(known, key=_rank) if known else "unknown"
            if host in inner:
                kind = "imbalanced"
            counts.setdefault(kind, []).append(host)
        known_kinds = [k for k in counts if k != "unknown"]
        if not known_kinds:
            return Verdict(kind="unknown", why=[f"no verdict yet from {len(by_host)} hosts"])
        busy_kinds: list[VerdictKind] = [k for k in known_kinds if k != "idle"]
        kind = min(busy_kinds or ["idle"], key=_rank)
        why = [
            f"{len(by_host)} hosts: " + ", ".join(
                f"{len(hosts)} {k} ({_names(hosts)})"
                for k, hosts in sorted(counts.items(), key=lambda kv: _rank(kv[0]))
            )
        ]
        if inner:
            why.append(f"a card lags within {_names(inner)}")
        causes = [
            cards[c.id].cause for c in frame.cards
            if cards[c.id].kind == kind and cards[c.id].cause
        ]
        cause = statistics.mode(causes) if causes else ("straggler" if inner else None)
        return Verdict(kind=kind, cause=cause, why=why, confidence=0.5)


    def _fleet_job(self, summary: FleetSummary) -> Verdict:
        """The job verdict from a fleet summary: the lagging host by the server's per-host
        busy means (where the server sent only the least busy hosts and the busiest, the count
        and median of them all come with them), else the worst problem kind the cards have,
        else saturated or idle."""
        if not summary.cards:
            return Verdict(kind="unknown", why=["no host reports any card"],
                           advice=["Check the status line for what the server answered"])
        lag = lagging_hosts({h: 100.0 * u for h, u in summary.host_busy.items()},
                            self.thresholds)
        if lag is not None:
            lagging, other = lag
            names = _names([f"{h} at {_p(100.0 * summary.host_busy[h])}" for h in lagging])
            hosts = len(summary.host_busy)
            if summary.busy_hosts is not None:  # the server sent the lowest few and the top
                hosts = max(hosts, summary.busy_hosts)
                if summary.busy_median is not None:
                    other = 100.0 * summary.busy_median
                if len(lagging) >= len(summary.host_busy) - 1 < hosts - 1:
                    names += " (the lowest asked; more may lag)"
            return Verdict(
                kind="imbalanced", cause="straggler",
                why=[f"lagging host: {names} while the other "
                     f"{hosts - len(lagging)} hosts run at {_p(other)} (mean "
                     "utilisation between the last two scrapes, from the counters): every "
                     "step of a multi-node job waits for the slowest node",
                     "all hosts the view matches are taken as one job (scope with --match)"],
                advice=[f"Look at {lagging[0]} first: its own verdicts say whether it starves "
                        "(input pipeline) or its cards throttle"],
                confidence=0.5,
            )
        counts = {k: n for k, n in summary.kinds.items() if n and k in SEVERITY}
        busy = [k for k in counts if k not in ("idle", "unknown")]
        if not busy and not counts:
            return Verdict(kind="unknown", why=[f"no verdict yet from {summary.hosts} hosts"])
        worst = min(busy or ["idle"], key=_rank)
        kind: VerdictKind = worst if is_verdict_kind(worst) else "unknown"
        causes = [p.cause for p in summary.problems if p.kind == kind and p.cause]
        why = [f"{summary.hosts} hosts, {summary.cards} cards: " + ", ".join(
            f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: _rank(kv[0])))]
        return Verdict(kind=kind, cause=statistics.mode(causes) if causes else None, why=why,
                       confidence=0.5)


def _names(hosts: list[str], limit: int = 4) -> str:
    shown = ", ".join(sorted(hosts)[:limit])
    return shown + (f" and {len(hosts) - limit} more" if len(hosts) > limit else "")


def _figures(card: CardReading) -> str:
    parts = []
    if card.util_pct is not None:
        parts.append(f"util {_p(card.util_pct)}")
    frac = card.power_frac
    if frac is not None:
        parts.append(f"power {_p(100 * frac)} of cap")
    if card.mem_pct is not None:
        parts.append(f"VRAM {_p(card.mem_pct)}")
    return ", ".join(parts) + " (now)" if parts else ""
