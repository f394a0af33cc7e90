"""What the fleet asks Prometheus for, and what its answers become: one `CardReading` per host x
card and the verdicts the exporters published. Pure (no I/O), so every odd answer can be tested
as data.

Cards carry ``host`` (the exporter's ``host`` label, else Prometheus' ``instance``), so their
ids (``host/vendor:index``, ``host/vendor:index/mig1`` for a MIG instance) are unique across
hosts; a ``/`` in a host label is quoted in the id (``ns%2Fpod/nvidia:0``, with a note), so an
id reads one way only. Every label value (host, instance, name, uuid, cause) goes through the
sanitiser (`gpusat_tui.text.clean`: whole escape sequences removed, controls shown as ``?``)
and is capped before use: they end up on the terminal. A series that cannot be tied to a card
is skipped, with a note when that tells the user something.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpusat_tui.analysis.fleet_triage import triage
from gpusat_tui.model import (
    CardReading,
    Frame,
    JobContext,
    Vendor,
    VerdictKind,
    host_in_id,
    is_vendor,
    is_verdict_kind,
)
from gpusat_tui.sources.fleet_view.prometheus_api import WARNINGS, selector
from gpusat_tui.text import clean

__all__ = [
    "BUSY_LABEL",
    "FIGURES",
    "HISTORY_FIGURES",
    "CardKey",
    "FleetAnswer",
    "RemoteVerdict",
    "card_key",
    "card_reading",
    "clean_label",
    "fleet_jobs",
    "frame_from_answer",
    "group_by_job",
    "history_frames",
    "history_selector",
    "host_of",
    "instant_query",
    "job_context",
    "key_id",
]

#: Longest label value kept (names, hosts); longer ones are cut with an ellipsis.
MAX_LABEL_CHARS = 64

MIB = 1024 * 1024


#: Card figures read every poll: metric -> (CardReading field, factor to its unit).
FIGURES: dict[str, tuple[str, float]] = {
    "gpusat_card_utilization_ratio": ("util_pct", 100.0),
    "gpusat_card_memory_used_bytes": ("mem_used_mib", 1.0 / MIB),
    "gpusat_card_memory_total_bytes": ("mem_total_mib", 1.0 / MIB),
    "gpusat_card_memory_used_ratio": ("mem_pct", 100.0),
    "gpusat_card_power_watts": ("power_w", 1.0),
    "gpusat_card_power_limit_watts": ("power_cap_w", 1.0),
    "gpusat_card_temperature_celsius": ("temp_c", 1.0),
    "gpusat_card_figures_age_seconds": ("stale_s", 1.0),
}
#: The figures the charts draw: all the start-up history asks for (a quarter of the points).
HISTORY_FIGURES = (
    "gpusat_card_utilization_ratio", "gpusat_card_memory_used_ratio",
    "gpusat_card_power_watts", "gpusat_card_power_limit_watts",
)


@dataclass(frozen=True)
class RemoteVerdict:
    """A verdict as an exporter published it: kind and cause only (the figures stay there)."""

    kind: VerdictKind
    cause: str | None = None


#: Label that marks the busy-share series in the instant query's answer (see `instant_query`).
BUSY_LABEL = "gpusat_fleet_figure"


def instant_query(matchers: Sequence[str] = ()) -> str:
    """Every figure, the verdict series that are 1, and each card's busy share, in one query.

    The busy share is ``irate`` of the exporter's ``gpusat_card_busy_seconds_total``: the mean
    utilisation between the last two scrapes, counted at every poll of the node. The gauge
    alone, sampled once per scrape, aliases a swinging utilisation (a card bursting on every
    second poll, scraped every second poll, reads busy every time). ``or`` matches label sets,
    so the busy series get a label of their own and the verdicts carry ``kind``: nothing is
    dropped.
    """
    braces = "{" + ", ".join(matchers) + "}" if matchers else ""
    busy = (
        f'label_replace(irate(gpusat_card_busy_seconds_total{braces}[5m]), "{BUSY_LABEL}", '
        '"busy_ratio", "", "")'
    )
    return (
        f"{selector([*FIGURES, 'gpusat_exporter_last_poll_timestamp_seconds'], matchers)}"
        f" or gpusat_card_verdict{braces} == 1 or gpusat_job_verdict{braces} == 1 or {busy}"
        f" or gpusat_job_info{braces} or gpusat_card_job_info{braces}"
    )


# --- answers -> Frames --------------------------------------------------------------------------


def clean_label(value: object) -> str:
    """A label value fit for the terminal: the sanitiser's (escape sequences removed whole,
    control and format characters shown as ``?``), trimmed and capped.

    Label values repeat every poll (hosts, card names, UUIDs): a string's cleaned form is
    remembered (`_clean_text`, bounded), which halved reading a 1000-host answer's labels."""
    return _clean_text(value) if isinstance(value, str) else _clean_any(value)


@functools.lru_cache(maxsize=1 << 15)
def _clean_text(value: str) -> str:
    return _clean_any(value)


def _clean_any(value: object) -> str:
    text = clean(value, limit=1 << 30).strip()
    if len(text) > MAX_LABEL_CHARS:
        text = text[: MAX_LABEL_CHARS - 1] + "…"
    return text


def _number(text: object) -> float | None:
    if not isinstance(text, (str, int, float)):  # JSON: a list, an object, null
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and abs(value) != float("inf") else None


def host_of(labels: Mapping[str, str]) -> str:
    """The host a series belongs to: the exporter's ``host`` label, else ``instance``."""
    return clean_label(labels.get("host") or labels.get("instance") or "?") or "?"


#: (host, vendor, index, instance): the instance is "" for a whole card, so keys sort.
CardKey = tuple[str, Vendor, int, str]

#: What a part of a card (a MIG instance) may be called in a card id (`CardReading.instance`).
_INSTANCE = re.compile(r"[A-Za-z0-9_.-]{1,32}")


def card_key(labels: Mapping[str, str], notes: dict[str, None]) -> CardKey | None:
    """Which card a series is for. The parts of one card (MIG instances) share its index: the
    exporter's ``card`` label tells them apart (``nvidia:0/mig1``)."""
    vendor = labels.get("vendor")
    host = host_of(labels)
    if host_in_id(host) != host:
        notes.setdefault(
            f"host label {host!r} holds '/' or '%': its card ids quote them "
            f"({host_in_id(host)}/{vendor if is_vendor(vendor) else 'vendor'}:index)", None,
        )
    if not is_vendor(vendor):
        notes.setdefault(f"{host}: unknown vendor {clean_label(vendor)!r} skipped", None)
        return None
    try:
        index = int(labels.get("index", ""))
    except ValueError:
        notes.setdefault(f"{host}: card without a numeric index skipped", None)
        return None
    card = str(labels.get("card") or "")
    _, whole, instance = card.rpartition(f"{vendor}:{index}")
    if not whole or not instance:
        return host, vendor, index, ""
    instance = instance[1:] if instance.startswith("/") else ""
    if not _INSTANCE.fullmatch(instance):
        notes.setdefault(
            f"{host}: card {clean_label(card)!r} is not vendor:index/instance, skipped", None
        )
        return None
    return host, vendor, index, instance


def key_id(key: CardKey) -> str:
    """The id the `CardReading` of ``key`` has (``host/vendor:index[/instance]``)."""
    host, vendor, index, instance = key
    card = f"{vendor}:{index}/{instance}" if instance else f"{vendor}:{index}"
    return f"{host_in_id(host)}/{card}"


def _cause(labels: Mapping[str, Any]) -> str | None:
    cause = labels.get("cause")
    return (clean_label(cause) or None) if cause else None


@dataclass
class FleetAnswer:
    """One instant query, read: cards per key, verdicts, hosts seen."""

    cards: dict[CardKey, CardReading]
    verdicts: dict[str, RemoteVerdict]
    job_verdicts: dict[str, RemoteVerdict]
    notes: list[str]
    #: Card id -> mean utilisation (0..1) between the last two scrapes, from the counter.
    busy: dict[str, float] = field(default_factory=dict)
    #: Whose jobs (``gpusat_job_info``), with their cards across hosts
    #: (``gpusat_card_job_info``): a Slurm job on four hosts is one job of all their cards.
    jobs: list[JobContext] = field(default_factory=list)


def frame_from_answer(data: Mapping[str, Any]) -> FleetAnswer:
    """Read the `instant_query` result into cards and verdicts. Pure; never raises on odd
    series (they are skipped, with a note when it tells the user something)."""
    figures: dict[CardKey, dict[str, Any]] = {}
    verdicts: dict[str, RemoteVerdict] = {}
    jobs: dict[str, RemoteVerdict] = {}
    busy: dict[str, float] = {}
    notes: dict[str, None] = {}
    job_infos: dict[tuple[str, str], JobContext] = {}
    job_cards: list[tuple[str, str, str]] = []
    for series in data.get("result", []):
        if not isinstance(series, dict):
            continue
        labels = series.get("metric")
        value = series.get("value")
        if not isinstance(labels, dict) or not isinstance(value, list) or len(value) != 2:
            continue
        name = labels.get("__name__")
        if name == "gpusat_job_verdict":
            kind = labels.get("kind")
            if is_verdict_kind(kind) and _number(value[1]) == 1.0:
                jobs.setdefault(host_of(labels), RemoteVerdict(kind, _cause(labels)))
            continue
        if name == "gpusat_exporter_last_poll_timestamp_seconds":
            continue
        if name == "gpusat_job_info":
            job = job_context(labels)
            if job is not None:
                job_infos.setdefault((job.host or "?", labels["job_key"]), job)
            continue
        if name == "gpusat_card_job_info":
            if labels.get("card") and labels.get("job_key"):
                job_cards.append((host_of(labels), clean_label(labels["card"]),
                                  str(labels["job_key"])))
            continue
        key = card_key(labels, notes)
        if key is None:
            continue
        if labels.get(BUSY_LABEL) == "busy_ratio":
            share = _number(value[1])
            if share is not None:
                busy.setdefault(key_id(key), share)
            continue
        if name == "gpusat_card_verdict":
            kind = labels.get("kind")
            if is_verdict_kind(kind) and _number(value[1]) == 1.0:
                verdicts.setdefault(key_id(key), RemoteVerdict(kind, _cause(labels)))
            continue
        target = FIGURES.get(str(name))
        if target is None:
            continue
        entry = figures.setdefault(key, {
            "name": clean_label(labels["name"]) if labels.get("name") else None,
            "uuid": clean_label(labels["uuid"]) if labels.get("uuid") else None,
        })
        field, factor = target
        number = _number(value[1])
        entry.setdefault(field, None if number is None else number * factor)
    cards = {key: card_reading(key, entry) for key, entry in sorted(figures.items())}
    _warned(data, notes)
    return FleetAnswer(cards, verdicts, jobs, list(notes), busy,
                       fleet_jobs(job_infos, job_cards))


#: ``gpusat_job_info`` labels read into `JobContext` fields of the same name.
_JOB_FIELDS = ("job_id", "step", "name", "user", "partition", "namespace", "pod_uid")


def job_context(labels: Mapping[str, str]) -> JobContext | None:
    if not labels.get("job_key"):
        return None
    values = {f: clean_label(labels[f]) for f in _JOB_FIELDS if labels.get(f)}
    return JobContext.model_validate({
        "scheduler": clean_label(labels.get("scheduler") or "plain") or "plain",
        "host": host_of(labels), "source": "exporter", **values,
    })


def fleet_jobs(
    infos: Mapping[tuple[str, str], JobContext], cards: Iterable[tuple[str, str, str]]
) -> list[JobContext]:
    """One `JobContext` per job across hosts (by `JobContext.key`), with its cards' fleet ids
    (``host/vendor:index``). ``cards``: (host, card, job key) of each card-to-job series.

    Linear: the cards are indexed by (host, job key) in one pass, and each job's hosts and
    ids gather in ordered dicts; comparing every job with every card was quadratic (0.2 s
    of a 1000-host answer)."""
    ids_of: dict[tuple[str, str], list[str]] = {}
    for host, card, job_key in cards:
        ids_of.setdefault((host, job_key), []).append(f"{host}/{card}")
    merged: dict[str, tuple[JobContext, dict[str, None], dict[str, None]]] = {}
    for (host, job_key), job in sorted(infos.items()):
        ids = ids_of.get((host, job_key), ())
        entry = merged.get(job.key)
        if entry is None:
            merged[job.key] = (job, {host: None}, dict.fromkeys(ids))
        else:
            entry[1][host] = None
            entry[2].update(dict.fromkeys(ids))
    return [
        job.model_copy(update={"card_ids": list(ids), "host": ",".join(hosts)})
        for job, hosts, ids in merged.values()
    ]


def group_by_job(cards: Sequence[CardReading], jobs: Sequence[JobContext]) -> list[CardReading]:
    """The fleet view groups cards by job: each job's cards together (jobs in order), then
    the cards no job is known on, each group in its own order."""
    rank: dict[str, int] = {}
    for n, job in enumerate(jobs):
        for card_id in job.card_ids:
            rank.setdefault(card_id, n)
    order = {card.id: i for i, card in enumerate(cards)}
    return sorted(cards, key=lambda c: (rank.get(c.id, len(jobs)), order[c.id]))


def card_reading(key: CardKey, entry: dict[str, Any]) -> CardReading:
    host, vendor, index, instance = key
    values = dict(entry)
    if not values.get("stale_s"):
        values["stale_s"] = None  # 0 = fresh on the exporter
    return CardReading(vendor=vendor, index=index, instance=instance or None,
                       host=host, tool="prometheus", **values)


#: Cards, worst first as the list opens on them, whose hosts' start-up history is asked for:
#: the rows of a tall pane. A host's cards come together (one matcher per host).
HISTORY_CARDS = 48


def history_selector(
    first: Frame, kinds: Mapping[str, str], matchers: Sequence[str] = (),
    cards: int = HISTORY_CARDS,
) -> str:
    """The start-up history's query: `HISTORY_FIGURES` of the hosts of the first ``cards``
    cards the list shows (`analysis.fleet_triage`), by ``host`` or, for a host known by it,
    ``instance``. Its answer grows with what is shown, not with the fleet (the whole fleet's
    answer passed 64 MiB at 1000 hosts)."""
    result = triage(first.cards, kinds, first.jobs)
    order = [i for group in result.groups for i in group.card_ids] + list(result.healthy)
    hosts_of = {card.id: card.host or "" for card in first.cards}
    hosts = list(dict.fromkeys(hosts_of[i] for i in order[:cards]))
    pattern = json.dumps("|".join(re.escape(h) for h in hosts))
    return " or ".join(
        selector(HISTORY_FIGURES, [*matchers, f"{label}=~{pattern}"])
        for label in ("host", "instance")
    )


def history_frames(data: Mapping[str, Any]) -> list[Frame]:
    """Frames from a ``query_range`` answer over `HISTORY_FIGURES`, one per step, oldest first.

    Only what the charts draw; a card missing at a step is missing from that Frame.
    """
    points: dict[float, dict[CardKey, dict[str, Any]]] = {}
    names: dict[CardKey, dict[str, Any]] = {}
    notes: dict[str, None] = {}
    for series in data.get("result", []):
        if not isinstance(series, dict) or not isinstance(series.get("values"), list):
            continue
        labels = series.get("metric")
        if not isinstance(labels, dict):
            continue
        target = FIGURES.get(str(labels.get("__name__")))
        key = card_key(labels, notes) if target is not None else None
        if key is None or target is None:
            continue
        names.setdefault(key, {
            "name": clean_label(labels["name"]) if labels.get("name") else None,
            "uuid": clean_label(labels["uuid"]) if labels.get("uuid") else None,
        })
        field, factor = target
        for pair in series["values"]:
            if not isinstance(pair, list) or len(pair) != 2:
                continue
            t = _number(pair[0])
            number = _number(pair[1])
            if t is None:
                continue
            cards = points.setdefault(t, {})
            cards.setdefault(key, dict(names[key]))[field] = (
                None if number is None else number * factor
            )
    frames = []
    for seq, t in enumerate(sorted(points)):
        readings = [card_reading(key, entry) for key, entry in sorted(points[t].items())]
        frames.append(Frame(t=t, seq=seq, cards=readings))
    _warned(data, notes)
    if frames and notes:  # what was skipped or partial, said once, on the oldest frame
        frames[0] = frames[0].model_copy(update={"notes": list(notes)})
    return frames


def _warned(data: Mapping[str, Any], notes: dict[str, None]) -> None:
    """The server's warnings about its answer (partial, a limit hit) as notes."""
    for warning in data.get(WARNINGS) or ():
        notes.setdefault(f"Prometheus warns: {clean(warning, 200)}", None)
