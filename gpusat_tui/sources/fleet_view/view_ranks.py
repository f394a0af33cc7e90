"""The problem groups the fleet list can show, ranked on the server: what keeps a refresh's
cost with the rows on screen rather than with the problems in the fleet. Pure (no I/O).

The list is worst first: problem jobs, then problem hosts (cards no job is known on), each by
its worst kind and then by its waste (the sum of ``1 - utilisation`` of its problem cards).
Prometheus computes that score per group (the worst kind as a tier, ``1e5`` apart, plus the
waste) and returns the first ``topk`` jobs and hosts (`ranks_query`); only the cards and jobs
of the first of them in the list's order (jobs before hosts) are then asked for
(`group_queries`), and the down hosts where the page reaches them. Scrolling asks for more
groups (`ViewRequest.groups`), a page at a time: ``topk`` of the larger number, so the groups
already shown keep their places. A card without a utilisation series counts whole, as the
list does (a group of over 100,000 problem cards would reach the next tier). A down card
(its exporter gone) is not ranked here: ``down`` lists the gone hosts (most recently gone
first) as far as the page has room after the live problem groups, ``down_counts`` counts them.

The filter becomes matchers (`problem_cards`): ``host:`` a ``host=~`` regex, ``kind:`` a
``kind=~`` prefix, ``job:``/``user:`` the cards of the jobs whose info series match, a bare
word any of these; the list still applies it to the cards it gets (the same test).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpusat_tui.sources.fleet_view.view_request import ViewRequest

__all__ = ["CARD_LABELS", "DOWN_WINDOW", "IMBALANCED", "Ranked", "group_queries", "host_regex",
           "problem_cards", "ranks_query", "read_ranks"]

_HEALTHY = "saturated|idle"
_CARD_JOB = "gpusat_card_job_info"
_LAST_POLL = "gpusat_exporter_last_poll_timestamp_seconds"
#: Severity tiers of the list's order (`fleet_triage.PROBLEMS`), worst highest; a kind this
#: does not name ranks as imbalanced, as the list ranks it.
_TIERS = (
    ('kind="stalled"', 6),
    ('kind!~"saturated|idle|stalled|fragmenting|starving|unknown"', 5),
    ('kind="fragmenting"', 4),
    ('kind="starving"', 3),
    ('kind="unknown"', 1),
)
_TIER = 100000
#: The tier of a down host (after starving, before unknown), where the list places it.
_DOWN_TIER = 2
#: How long a gone host stays in the view, marked down (then Prometheus forgets it here too).
DOWN_WINDOW = "10m"
IMBALANCED = 'kind="imbalanced"'
#: The labels that name a card: what the problem cards' answers keep of their series' labels
#: (a card's name, UUID and scrape job would double the answer).
CARD_LABELS = "host, instance, vendor, index, card"


@dataclass(frozen=True)
class Ranked:
    """The ranks answer: job keys and (host, instance) pairs, each best first, and how many
    of the hosts rank above a down host (the room left on the page for down hosts)."""

    jobs: list[str] = field(default_factory=list)
    hosts: list[tuple[str, str]] = field(default_factory=list)
    above_down: int = 0


def host_regex(pattern: str) -> str:
    """The filter's ``host:`` pattern as an RE2 regex for ``host=~``: a glob (``*``, ``?``)
    matches the whole host, a plain word any part of it; case-insensitive as the filter is."""
    if any(c in pattern for c in "*?"):
        body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    else:
        body = f".*{re.escape(pattern)}.*"
    return f"(?i){body}"


def _braces(matchers: Sequence[str]) -> str:
    return "{" + ", ".join(matchers) + "}" if matchers else ""


def _contains(word: str) -> str:
    return json.dumps(f"(?i).*{re.escape(word)}.*")


def _jobs_matching(word: str, fields: Sequence[str], m: Sequence[str]) -> str:
    """The card-to-job series of the jobs whose info has ``word`` in one of ``fields``."""
    infos = " or ".join(f"gpusat_job_info{_braces([*m, f'{f}=~{_contains(word)}'])}"
                        for f in fields)
    return f"{_CARD_JOB}{_braces(m)} and on (instance, job_key) ({infos})"


def problem_cards(request: ViewRequest, m: Sequence[str]) -> str | None:
    """The verdict series (at 1) of the problem cards the filter leaves, or None where it
    leaves none the server ranks (``kind:`` a healthy kind or ``down``)."""
    matchers = [*m, f"kind!~{json.dumps(_HEALTHY)}"]
    if request.kind:
        problem_kinds = ("stalled", "imbalanced", "fragmenting", "starving", "unknown")
        if not any(k.startswith(request.kind) for k in problem_kinds):
            return None
        matchers.append(f"kind=~{json.dumps('(?i)' + re.escape(request.kind) + '.*')}")
    if request.host:
        matchers.append(f"host=~{json.dumps(host_regex(request.host))}")
    base = f"gpusat_card_verdict{_braces(matchers)} == 1"
    query = base
    if request.job:
        query += (" and on (instance, card) ("
                  f"{_jobs_matching(request.job, ('job_key', 'job_id', 'name'), m)})")
    if request.user:
        query += f" and on (instance, card) ({_jobs_matching(request.user, ('user',), m)})"
    for word in request.words:
        by_host = f"gpusat_card_verdict{_braces([*matchers, f'host=~{_contains(word)}'])} == 1"
        prefix = json.dumps(f"{re.escape(word)}.*")
        by_kind = f"gpusat_card_verdict{_braces([*matchers, f'kind=~{prefix}'])} == 1"
        by_job = (f"{base} and on (instance, card) ("
                  f"{_jobs_matching(word, ('job_key', 'job_id', 'name', 'user'), m)})")
        query = f"({query}) and ({by_host} or {by_kind} or {by_job})"
    return query


def _scores(problem: str, m: Sequence[str]) -> tuple[str, str]:
    """(job score by ``job_key``, host score by ``host, instance``) of the problem cards."""
    tiers = " or ".join(
        f"max by (host, instance, card) (gpusat_card_verdict{_braces([*m, tier])} == 1)"
        f" * {weight * _TIER}" for tier, weight in _TIERS
    )
    worst = f"({tiers}) and on (instance, card) ({problem})"
    waste = (f"max by (host, instance, card) (1 - gpusat_card_utilization_ratio{_braces(m)})"
             f" and on (instance, card) ({worst}) or ({worst}) * 0 + 1")
    jobs = f"{_CARD_JOB}{_braces(m)}"

    def of_jobs(cards: str) -> str:
        return f"({jobs} * on (instance, card) group_left () ({cards}))"

    job_score = (f"max by (job_key) {of_jobs(worst)} + on (job_key) "
                 f"sum by (job_key) {of_jobs(waste)}")
    host_score = (f"max by (host, instance) (({worst}) unless on (instance, card) {jobs})"
                  f" + on (host, instance) "
                  f"sum by (host, instance) (({waste}) unless on (instance, card) {jobs})")
    return job_score, host_score


def ranks_query(request: ViewRequest, m: Sequence[str]) -> str | None:
    """The first `ViewRequest.groups` problem jobs and problem hosts by score (see the module
    docstring), or None where the filter leaves no problem card to rank."""
    problem = problem_cards(request, m)
    if problem is None:
        return None
    job_score, host_score = _scores(problem, m)
    n = max(1, request.groups)
    return f"topk({n}, {job_score}) or topk({n}, {host_score})"


def read_ranks(data: Mapping[str, Any] | None) -> Ranked:
    """The ranks answer (`Ranked`)."""
    jobs: list[tuple[float, str]] = []
    hosts: list[tuple[float, tuple[str, str]]] = []
    for series in (data or {}).get("result", []) or []:
        try:
            labels, value = series["metric"], float(series["value"][1])
        except (KeyError, TypeError, ValueError, IndexError):
            continue
        if not isinstance(labels, dict) or value != value:
            continue
        if labels.get("job_key"):
            jobs.append((value, str(labels["job_key"])))
        elif labels.get("instance"):
            hosts.append((value, (str(labels.get("host") or ""), str(labels["instance"]))))
    jobs.sort(key=lambda e: (-e[0], e[1]))
    hosts.sort(key=lambda e: (-e[0], e[1]))
    above = sum(1 for score, _ in hosts if score >= (_DOWN_TIER + 1) * _TIER)
    return Ranked([k for _, k in jobs], [h for _, h in hosts], above)


def _alternatives(values: Sequence[str]) -> str:
    return json.dumps("|".join(re.escape(v) for v in values))


def group_queries(
    ranked: Ranked, request: ViewRequest, m: Sequence[str]
) -> dict[str, str]:
    """The ``problems``, ``jobs`` and ``down`` queries (`view_queries` module docstring) for
    the page's groups only (the first `ViewRequest.groups` of the list's order: the ranked
    jobs, then the ranked hosts): their problem cards and utilisation, their jobs' info and
    card counts, and as many down hosts as the page has room for after the live problem
    groups ranked above them."""
    problem = problem_cards(request, m)
    # The page: the first groups in the list's order, jobs before hosts.
    page = max(1, request.groups)
    job_keys = ranked.jobs[:page]
    hosts = ranked.hosts[:page - len(job_keys)]
    parts = []
    queries: dict[str, str] = {}
    room = page - len(job_keys) - ranked.above_down
    if room > 0 and (not request.kind or "down".startswith(request.kind)):
        last_poll = f"{_LAST_POLL}{_braces(m)}"
        gone = (f"topk({room}, last_over_time({last_poll}[{DOWN_WINDOW}]) unless on (instance)"
                f" {last_poll})")
        queries["down"] = (
            f"max by ({CARD_LABELS}, kind) (last_over_time(gpusat_card_verdict{_braces(m)}"
            f"[{DOWN_WINDOW}]) == 1 unless on (instance) {last_poll} and on (instance) {gone})"
            f" or {gone}"
        )
    if problem is not None and job_keys:
        parts.append(f"({problem}) and on (instance, card) "
                     f"{_CARD_JOB}{_braces([*m, f'job_key=~{_alternatives(job_keys)}'])}")
    if problem is not None and hosts:
        instances = _alternatives([i for _, i in hosts])
        parts.append(f"({problem}) unless on (instance, card) {_CARD_JOB}{_braces(m)} "
                     f"and on (instance) {_LAST_POLL}{_braces([*m, f'instance=~{instances}'])}")
    imbalanced = f"gpusat_job_verdict{_braces([*m, IMBALANCED])} == 1"
    if not parts:
        queries["problems"] = imbalanced
        return queries
    chosen = " or ".join(f"({p})" for p in parts)
    queries["problems"] = (
        f"max by ({CARD_LABELS}, kind, cause) ({chosen}) or max by ({CARD_LABELS}) "
        f"(gpusat_card_utilization_ratio{_braces(m)} and on (instance, card) ({chosen}))"
        f" or {imbalanced}"
    )
    links = f"{_CARD_JOB}{_braces(m)} and on (instance, card) ({chosen})"
    queries["jobs"] = (
        f"{links} or gpusat_job_info{_braces(m)} and on (instance, job_key) ({links})"
        f" or count by (job_key) ({_CARD_JOB}{_braces(m)} and on (job_key) ({links}))"
    )
    return queries
