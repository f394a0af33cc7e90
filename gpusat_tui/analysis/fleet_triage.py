"""Worst first: the fleet's cards in the order a person triages a thousand hosts.

A summary (``1,000 hosts · 7,976 cards: 852 starving in 14 jobs, 3 stalled, 1 imbalanced job,
12 hosts down, the rest saturated or idle``), then the problem jobs, then the problem hosts
(cards no job is known on), each sorted by severity and then by waste (card-equivalents of
compute left idle: the sum of ``1 - utilisation`` of its problem cards, a card without fresh
figures counting whole), its cards by severity and then in the frame's order (rows that do not
jump about as figures move), and the healthy cards (saturated or idle) last, for the list to fold.
A filter (``job:4242 user:alice host:gpu-1* kind:starving``, bare words match any of these)
narrows the groups and the healthy cards; the summary always counts the whole fleet.

Pure and linear in the cards (one pass, then sorting the groups): it runs on every frame.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gpusat_tui.model import CardReading, FleetSummary, JobContext

__all__ = ["DOWN", "HEALTHY", "PROBLEMS", "FleetFilter", "Group", "Triage", "parse_filter",
           "summary_triage", "triage"]

#: Kinds the summary folds into "the rest": nothing to do about them.
HEALTHY = frozenset({"saturated", "idle"})
#: A card without fresh figures (its host's exporter down or not scraped).
DOWN = "down"
#: Problem kinds, most severe first (the verdict engine's order; a card without figures comes
#: after the verdicts that name a cause, and a card with no verdict yet last).
PROBLEMS: tuple[str, ...] = ("stalled", "imbalanced", "fragmenting", "starving", DOWN, "unknown")

_FILTER_KEYS = ("job", "user", "host", "kind")


@dataclass(frozen=True)
class FleetFilter:
    """What the list is narrowed to; every field set must match (words: any field)."""

    job: str = ""
    user: str = ""
    host: str = ""
    kind: str = ""
    words: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.job or self.user or self.host or self.kind or self.words)

    def text(self) -> str:
        """The filter as the user would type it (``job:4242 kind:starving gpu``)."""
        parts = [f"{key}:{getattr(self, key)}" for key in _FILTER_KEYS if getattr(self, key)]
        return " ".join([*parts, *self.words])


def parse_filter(text: str) -> FleetFilter:
    """``job:4242 user:alice host:gpu-1* kind:starving words``: case-insensitive; a ``key:``
    this does not know is a word like any other."""
    fields: dict[str, str] = {}
    words: list[str] = []
    for token in text.lower().split():
        key, sep, value = token.partition(":")
        if sep and key in _FILTER_KEYS and value:
            fields[key] = value
        else:
            words.append(token)
    return FleetFilter(**fields, words=tuple(words))


def _host_matches(pattern: str, host: str) -> bool:
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(host, pattern)
    return pattern in host


def _matches(flt: FleetFilter, host: str, kind: str, job: JobContext | None) -> bool:
    host = host.lower()
    job_words = (
        " ".join(str(v) for v in (job.key, job.job_id, job.name) if v).lower() if job else ""
    )
    user = (job.user or "").lower() if job else ""
    if flt.host and not _host_matches(flt.host, host):
        return False
    if flt.kind and not kind.startswith(flt.kind):
        return False
    if flt.job and flt.job not in job_words:
        return False
    if flt.user and flt.user not in user:
        return False
    return all(
        w in host or w in job_words or w in user or kind.startswith(w) for w in flt.words
    )


@dataclass(frozen=True)
class Group:
    """A problem job (``job`` set) or a problem host: its worst kind, its waste, its problem
    cards worst first, and how many cards it has in all."""

    key: str
    label: str
    worst: str
    waste: float
    card_ids: tuple[str, ...]
    cards: int
    job: JobContext | None = None


@dataclass(frozen=True)
class Triage:
    summary: str
    groups: tuple[Group, ...] = ()
    #: Healthy cards (saturated or idle) that pass the filter, in the frame's order.
    healthy: tuple[str, ...] = ()
    #: Cards that pass the filter.
    matched: int = 0
    filter: FleetFilter = field(default_factory=FleetFilter)
    #: How many healthy cards pass the filter: ``len(healthy)``, or more where the healthy
    #: are counted, not listed (`summary_triage`, folded).
    healthy_count: int = 0


def _rank(kind: str) -> int:
    return PROBLEMS.index(kind) if kind in PROBLEMS else PROBLEMS.index("imbalanced")


def _kind_of(card: CardReading, kinds: Mapping[str, str]) -> str:
    if card.stale_s is not None:
        return DOWN
    return kinds.get(card.id) or "unknown"


def _waste(card: CardReading, kind: str) -> float:
    if kind == DOWN or card.util_pct is None:
        return 1.0
    return max(0.0, min(1.0, 1.0 - card.util_pct / 100.0))


def _job_label(job: JobContext) -> str:
    who = f" {job.user}" if job.user else ""
    return f"{job.scheduler} {job.job_id or '?'}{who}"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def triage(
    cards: Sequence[CardReading],
    kinds: Mapping[str, str],
    jobs: Sequence[JobContext] = (),
    flt: FleetFilter = FleetFilter(),  # frozen: one shared default is safe
) -> Triage:
    """The summary, the problem groups worst first, and the healthy cards (module docstring).

    ``kinds``: card id -> verdict kind (the tracker's); a card with ``stale_s`` set is down.
    """
    job_of: dict[str, JobContext] = {}
    for each in jobs:
        for card_id in each.card_ids:
            job_of.setdefault(card_id, each)
    by_kind: dict[str, int] = {}
    kind_jobs: dict[str, set[str]] = {}
    host_cards: dict[str, int] = {}
    host_live: dict[str, int] = {}
    members: dict[tuple[bool, str], list[tuple[int, float, str]]] = {}
    group_cards: dict[tuple[bool, str], int] = {}
    healthy: list[str] = []
    matched = 0
    for card in cards:
        host = card.host or ""
        kind = _kind_of(card, kinds)
        job = job_of.get(card.id)
        host_cards[host] = host_cards.get(host, 0) + 1
        if kind != DOWN:
            host_live[host] = host_live.get(host, 0) + 1
        by_kind[kind] = by_kind.get(kind, 0) + 1
        if job is not None:
            kind_jobs.setdefault(kind, set()).add(job.key)
        group = (True, job.key) if job is not None else (False, host)
        group_cards[group] = group_cards.get(group, 0) + 1
        if flt.active and not _matches(flt, host, kind, job):
            continue
        matched += 1
        if kind in HEALTHY:
            healthy.append(card.id)
        else:
            members.setdefault(group, []).append((_rank(kind), _waste(card, kind), card.id))
    # Within a group by severity, then as the frame has them: rows that do not jump about
    # every poll as their figures move.
    groups = _groups(members, group_cards, {job.key: job for job in jobs})
    down = sum(1 for host in host_cards if not host_live.get(host))
    return Triage(
        summary=_summary(len(host_cards), len(cards), by_kind,
                         {kind: len(keys) for kind, keys in kind_jobs.items()}, down),
        groups=tuple(groups), healthy=tuple(healthy), matched=matched, filter=flt,
        healthy_count=len(healthy),
    )


def _groups(
    members: Mapping[tuple[bool, str], list[tuple[int, float, str]]],
    group_cards: Mapping[tuple[bool, str], int], job_by_key: Mapping[str, JobContext],
) -> list[Group]:
    groups = []
    for (is_job, key), entries in members.items():
        entries.sort(key=lambda e: e[0])
        owner = job_by_key.get(key) if is_job else None
        groups.append(Group(
            key=key, label=_job_label(owner) if owner is not None else key,
            worst=PROBLEMS[entries[0][0]], waste=sum(e[1] for e in entries),
            card_ids=tuple(e[2] for e in entries), cards=group_cards.get((is_job, key), 0),
            job=owner,
        ))
    groups.sort(key=lambda g: (g.job is None, _rank(g.worst), -g.waste, g.label))
    return groups


def summary_triage(
    summary: FleetSummary, jobs: Sequence[JobContext] = (),
    flt: FleetFilter = FleetFilter(),  # frozen: one shared default is safe
) -> Triage:
    """`triage` of a fleet whose problem cards and counts the server gave (`FleetSummary`):
    the same order, summary and filter, in one pass over the problem cards (where the server
    ranked the groups, only those it ranked first; the counts are still the whole fleet's).

    The filter applies to the problem cards here; the healthy ones are counted (or, unfolded,
    listed) by the server already narrowed by the filter's ``host:`` and ``kind:``. A ``job:``,
    ``user:`` or bare-word filter leaves the healthy row out (the server is not asked which
    healthy cards are in which job: that answer would grow with the fleet)."""
    job_by_key = {job.key: job for job in jobs}
    kind_jobs: dict[str, set[str]] = {}
    members: dict[tuple[bool, str], list[tuple[int, float, str]]] = {}
    group_cards: dict[tuple[bool, str], int] = {}
    host_cards: dict[str, int] = {}
    matched = 0
    for item in summary.problems:
        job = job_by_key.get(item.job) if item.job else None
        if job is not None:
            kind_jobs.setdefault(item.kind, set()).add(job.key)
        group = (True, job.key) if job is not None else (False, item.host)
        host_cards[item.host] = host_cards.get(item.host, 0) + 1
        if flt.active and not _matches(flt, item.host, item.kind, job):
            continue
        matched += 1
        waste = 1.0 if item.util_pct is None or item.kind == DOWN else max(
            0.0, min(1.0, 1.0 - item.util_pct / 100.0))
        members.setdefault(group, []).append((_rank(item.kind), waste, item.id))
    for (is_job, key) in members:
        group_cards[(is_job, key)] = (
            summary.job_cards.get(key, 0) if is_job else host_cards.get(key, 0)
        )
    by_kind = dict(summary.kinds)
    jobs_of_kind: Mapping[str, int] = (
        summary.kind_jobs if summary.kind_jobs is not None
        else {kind: len(keys) for kind, keys in kind_jobs.items()})
    word_filter = bool(flt.job or flt.user or flt.words) or bool(
        flt.kind and not any(kind.startswith(flt.kind) for kind in HEALTHY))
    healthy = 0 if word_filter else summary.healthy
    ids = () if word_filter else tuple(summary.healthy_ids)
    return Triage(
        summary=_summary(summary.hosts, summary.cards, by_kind, jobs_of_kind,
                         summary.down_hosts),
        groups=tuple(_groups(members, group_cards, job_by_key)), healthy=ids,
        matched=matched + healthy, filter=flt, healthy_count=healthy,
    )


def _summary(
    hosts: int, cards: int, by_kind: Mapping[str, int], kind_jobs: Mapping[str, int],
    down: int,
) -> str:
    head = f"{_plural(hosts, 'host')} · {_plural(cards, 'card')}"
    if not cards:
        return head
    parts = []
    for kind in PROBLEMS:
        n = by_kind.get(kind, 0)
        if not n:
            continue
        in_jobs = kind_jobs.get(kind, 0)
        if kind == "imbalanced" and in_jobs:
            parts.append(f"{_plural(in_jobs, 'imbalanced job')}")
        elif kind == DOWN:
            parts.append(
                f"{_plural(down, 'host')} down" if down else f"{n:,} cards without figures"
            )
        elif kind == "unknown":
            parts.append(f"{n:,} without a verdict yet")
        else:
            parts.append(f"{n:,} {kind}" + (f" in {_plural(in_jobs, 'job')}" if in_jobs else ""))
    healthy = sum(by_kind.get(k, 0) for k in HEALTHY)
    if not parts:
        return f"{head}: all saturated or idle"
    if healthy:
        parts.append("the rest saturated or idle")
    return f"{head}: " + ", ".join(parts)
