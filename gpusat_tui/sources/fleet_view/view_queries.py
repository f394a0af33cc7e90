"""What the fleet view asks Prometheus for on each refresh, and what the answers become: a
`FleetSummary` of the whole fleet and the figures of the rows on screen. Pure (no I/O).

The server does the counting (``count by``), the picking (a verdict series at 1 with
``kind!~"saturated|idle"`` is a problem card) and the ranking (`view_ranks`: ``topk`` of the
problem groups' scores); the answers grow with the groups the list can show and the rows on
screen, not with the problems in the fleet. What each query is for:

- ``counts``: cards per verdict kind, and the hosts (one number each);
- ``job_kinds``: per problem kind, the jobs with a card of that kind (one number each);
- ``ranks``: the first problem jobs and hosts by severity and waste (`view_ranks`);
- ``problems`` (asked once ``ranks`` has answered, `view_ranks.group_queries`): the ranked
  groups' problem cards, with their utilisation, only the labels that name the card kept
  (``max by``), and the hosts whose exporter saw a card lag within the host;
- ``down_counts``: the cards (by their last kind) and the hosts whose series were there in the
  last `DOWN_WINDOW` and are gone (an exporter stopped, a scrape failing);
- ``down`` (after ``ranks``, only where the page reaches past the live problem hosts, as many
  as it has room for): those hosts and their cards, with the exporter's last poll time;
- ``jobs`` (after ``ranks``): the ranked groups' jobs, their info series and how many cards
  each has in all;
- ``busy``: the straggler's figures (every host the view matches taken as one job): each busy
  host's mean busy share between its last two scrapes, for the `LAGGING` lowest and the
  highest only (a lagging host is far below the leader); ``busy_count`` and ``busy_median``:
  how many busy hosts there are, and their median;
- ``healthy``: with a ``host:`` or ``kind:`` filter, the healthy cards it leaves, counted by
  kind; while the healthy row is unfolded, their verdict series (8,000 at 1000 hosts: the one
  answer that grows with the fleet, asked only while the user looks at it);
- ``rows``: the figures of the cards on screen and the selected one, one selector per host.

``check --prometheus`` keeps the full instant query (`fleet_answers.instant_query`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpusat_tui.model import FleetItem, FleetSummary, JobContext, is_verdict_kind
from gpusat_tui.sources.fleet_view.fleet_answers import (
    FIGURES,
    CardKey,
    RemoteVerdict,
    card_key,
    clean_label,
    fleet_jobs,
    host_of,
    job_context,
    key_id,
)
from gpusat_tui.sources.fleet_view.prometheus_api import selector
from gpusat_tui.sources.fleet_view.view_ranks import DOWN_WINDOW, host_regex, ranks_query
from gpusat_tui.sources.fleet_view.view_request import ViewRequest

__all__ = ["HEALTHY_KINDS", "LAGGING", "ViewAnswer", "read_view",
           "rows_query", "view_queries"]

HEALTHY_KINDS = ("saturated", "idle")
#: Lowest busy hosts asked for: the lagging hosts named, at most.
LAGGING = 16
_HEALTHY = "saturated|idle"
_LAST_POLL = "gpusat_exporter_last_poll_timestamp_seconds"


def _braces(matchers: Sequence[str]) -> str:
    return "{" + ", ".join(matchers) + "}" if matchers else ""


def _healthy_kinds(request: ViewRequest) -> list[str]:
    """The healthy kinds the filter's ``kind:`` leaves (a prefix, as the list reads it)."""
    return [k for k in HEALTHY_KINDS if k.startswith(request.kind)]


def view_queries(request: ViewRequest, matchers: Sequence[str] = ()) -> dict[str, str]:
    """The refresh's first instant queries by name (see the module docstring): less ``rows``
    and the ranked groups' (`view_ranks.group_queries`), which the ``ranks`` answer names."""
    m = list(matchers)
    verdict = f"gpusat_card_verdict{_braces(m)}"
    problem = f'gpusat_card_verdict{_braces([*m, f"kind!~{json.dumps(_HEALTHY)}"])} == 1'
    last_poll = f"{_LAST_POLL}{_braces(m)}"
    queries = {
        "counts": f"count by (kind) ({verdict} == 1) or count(count by (instance) ({last_poll}))",
        "job_kinds": (
            f"count by (kind) (count by (kind, job_key) (gpusat_card_job_info{_braces(m)}"
            f" * on (instance, card) group_left (kind) ({problem})))"
        ),
        "down_counts": (
            f"count by (kind) (last_over_time({verdict}[{DOWN_WINDOW}]) == 1 unless on "
            f"(instance) {last_poll}) or count(last_over_time({last_poll}[{DOWN_WINDOW}]) "
            f"unless on (instance) {last_poll})"
        ),
    }
    busy = (f"avg by (host, instance) (irate(gpusat_card_busy_seconds_total{_braces(m)}[5m]))"
            f" and on (instance) (gpusat_card_verdict"
            f'{_braces([*m, "kind!~" + json.dumps("idle|unknown")])} == 1)')
    queries["busy"] = f"bottomk({LAGGING}, {busy}) or topk(1, {busy})"
    queries["busy_count"] = f"count({busy})"
    queries["busy_median"] = f"quantile(0.5, {busy})"
    ranks = ranks_query(request, m)
    if ranks is not None:
        queries["ranks"] = ranks
    kinds = _healthy_kinds(request)
    if kinds and (request.unfolded or request.host or request.kind):
        narrowed = [*m, f"kind=~{json.dumps('|'.join(kinds))}"]
        if request.host:
            narrowed.append(f"host=~{json.dumps(host_regex(request.host))}")
        healthy = f"gpusat_card_verdict{_braces(narrowed)} == 1"
        queries["healthy"] = healthy if request.unfolded else f"count by (kind) ({healthy})"
    return queries


@dataclass(frozen=True)
class Place:
    """Where a card's series are: the host label that names it (``host``, else
    ``instance``), its value, and the card label."""

    label: str
    host: str
    card: str


def rows_query(
    rows: Iterable[str], places: Mapping[str, Place], matchers: Sequence[str] = ()
) -> str | None:
    """The figures (`FIGURES`) of the cards ``rows`` names, one selector per host, or None
    when no row's place is known."""
    by_host: dict[tuple[str, str], dict[str, None]] = {}
    for card_id in rows:
        place = places.get(card_id)
        if place is not None:
            by_host.setdefault((place.label, place.host), {})[place.card] = None
    if not by_host:
        return None
    parts = []
    for (label, host), cards in by_host.items():
        pattern = "|".join(re.escape(c) for c in cards)
        parts.append(selector(FIGURES, [*matchers, f"{label}={json.dumps(host)}",
                                        f"card=~{json.dumps(pattern)}"]))
    return " or ".join(parts)


@dataclass
class ViewAnswer:
    """The refresh's answers, read."""

    summary: FleetSummary
    verdicts: dict[str, RemoteVerdict] = field(default_factory=dict)
    job_verdicts: dict[str, RemoteVerdict] = field(default_factory=dict)
    jobs: list[JobContext] = field(default_factory=list)
    #: Card id -> where its series are, for the next `rows_query`.
    places: dict[str, Place] = field(default_factory=dict)
    #: Down card id -> (its key, seconds since its exporter's last poll, at least 1).
    down: dict[str, tuple[CardKey, float]] = field(default_factory=dict)
    #: Hosts whose exporter is gone -> seconds since its last poll.
    down_hosts: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _series(data: Mapping[str, Any] | None) -> Iterable[tuple[dict[str, str], float | None]]:
    for series in (data or {}).get("result", []) or []:
        if not isinstance(series, dict):
            continue
        labels, value = series.get("metric"), series.get("value")
        if not isinstance(labels, dict) or not isinstance(value, list) or len(value) != 2:
            continue
        try:
            number: float | None = float(value[1])
        except (TypeError, ValueError):
            number = None
        if number is not None and (number != number or abs(number) == float("inf")):
            number = None
        yield labels, number


def _place(labels: Mapping[str, str]) -> Place:
    label = "host" if labels.get("host") else "instance"
    return Place(label, str(labels.get(label) or ""), str(labels.get("card") or ""))


def _cause(labels: Mapping[str, str]) -> str | None:
    cause = labels.get("cause")
    return (clean_label(cause) or None) if cause else None


def read_view(answers: Mapping[str, Mapping[str, Any] | None], now: float) -> ViewAnswer:
    """The `view_queries` answers (name -> the API's ``data``) as one `ViewAnswer`. Linear in
    the series; odd series are skipped."""
    notes: dict[str, None] = {}
    out = ViewAnswer(FleetSummary())
    kinds: dict[str, int] = {}
    hosts = 0
    kind_jobs = {clean_label(labels["kind"]): int(value)
                 for labels, value in _series(answers.get("job_kinds"))
                 if value is not None and labels.get("kind")}
    for labels, value in _series(answers.get("counts")):
        if value is None:
            continue
        if "kind" in labels:
            kinds[clean_label(labels["kind"])] = int(value)
        else:
            hosts = int(value)
    util: dict[str, float] = {}
    problems: dict[str, tuple[str, str, str | None]] = {}
    for labels, value in _series(answers.get("problems")):
        name = labels.get("__name__")
        if name == "gpusat_job_verdict":
            out.job_verdicts[host_of(labels)] = RemoteVerdict("imbalanced", _cause(labels))
            continue
        key = card_key(labels, notes)
        if key is None or name is not None:
            continue
        card_id = key_id(key)
        kind = labels.get("kind")
        if kind is None:  # the card's utilisation
            if value is not None:
                util[card_id] = 100.0 * value
            continue
        if not is_verdict_kind(kind):
            continue
        out.verdicts[card_id] = RemoteVerdict(kind, _cause(labels))
        out.places[card_id] = _place(labels)
        problems[card_id] = (key[0], kind, _cause(labels))
    down_hosts: dict[str, float] = {}
    down_cards: dict[str, tuple[CardKey, str]] = {}
    for labels, value in _series(answers.get("down")):
        if "card" not in labels:
            if value is not None:
                down_hosts[host_of(labels)] = max(0.0, now - value)
            continue
        key = card_key(labels, notes)
        if key is not None:
            card_id = key_id(key)
            down_cards[card_id] = (key, clean_label(labels.get("kind") or "unknown"))
            out.places[card_id] = _place(labels)
    down_counted: dict[str, int] = {}
    hosts_down = None
    for labels, value in _series(answers.get("down_counts")):
        if value is None:
            continue
        if labels.get("kind"):
            down_counted[clean_label(labels["kind"])] = int(value)
        else:
            hosts_down = int(value)
    for card_id, (key, last) in down_cards.items():
        out.verdicts[card_id] = RemoteVerdict(last if is_verdict_kind(last) else "unknown")
        out.down[card_id] = (key, max(1.0, down_hosts.get(key[0], 0.0)))
        problems[card_id] = (key[0], "down", None)
    infos: dict[tuple[str, str], JobContext] = {}
    links: list[tuple[str, str, str]] = []
    sizes: dict[str, int] = {}
    for labels, value in _series(answers.get("jobs")):
        name = labels.get("__name__")
        job_key = str(labels.get("job_key") or "")
        if not job_key:
            continue
        if name == "gpusat_job_info":
            job = job_context(labels)
            if job is not None:
                infos.setdefault((job.host or "?", job_key), job)
        elif name == "gpusat_card_job_info":
            if labels.get("card"):
                links.append((host_of(labels), clean_label(labels["card"]), job_key))
        elif name is None and value is not None:
            sizes[job_key] = int(value)
    out.jobs = fleet_jobs(infos, links)
    job_of = {card_id: job.key for job in out.jobs for card_id in job.card_ids}
    job_cards: dict[str, int] = {}
    for (_, job_key), job in infos.items():
        job_cards[job.key] = sizes.get(job_key, 0)
    host_busy = {host_of(labels): value for labels, value in _series(answers.get("busy"))
                 if value is not None}
    busy_hosts = next((int(v) for _, v in _series(answers.get("busy_count")) if v is not None),
                      None)
    busy_median = next((v for _, v in _series(answers.get("busy_median")) if v is not None),
                       None)
    healthy_ids: list[str] = []
    healthy = sum(kinds.get(k, 0) for k in HEALTHY_KINDS)
    if "healthy" in answers:
        healthy = 0
        for labels, value in _series(answers.get("healthy")):
            if "__name__" not in labels:  # counted by kind
                healthy += int(value or 0)
                continue
            key = card_key(labels, notes)
            kind = labels.get("kind")
            if key is None or not is_verdict_kind(kind):
                continue
            card_id = key_id(key)
            healthy_ids.append(card_id)
            out.verdicts[card_id] = RemoteVerdict(kind, None)
            out.places[card_id] = _place(labels)
        if healthy_ids:
            healthy_ids.sort()
            healthy = len(healthy_ids)
    # Built from values this module read and cleaned: no second validation (800 items a
    # refresh at 1000 hosts).
    items = [
        FleetItem.model_construct(id=card_id, host=host, kind=kind, cause=cause,
                                  job=job_of.get(card_id), util_pct=util.get(card_id))
        for card_id, (host, kind, cause) in sorted(problems.items())
    ]
    # The server's counts where it gave them (the list names only the down hosts its page
    # reaches), else what the answers listed.
    down_total = sum(down_counted.values()) if "down_counts" in answers else len(down_cards)
    if hosts_down is None:
        hosts_down = 0 if "down_counts" in answers else len(down_hosts)
    if down_total:
        kinds["down"] = down_total
    out.summary = FleetSummary(
        hosts=hosts + hosts_down, cards=sum(kinds.values()), kinds=kinds,
        down_hosts=hosts_down, problems=items, healthy=healthy,
        healthy_ids=healthy_ids, job_cards=job_cards, host_busy=host_busy,
        kind_jobs=kind_jobs if "job_kinds" in answers else None,
        busy_hosts=busy_hosts, busy_median=busy_median,
    )
    out.down_hosts = down_hosts
    out.notes = list(notes)
    return out
