"""A synthetic fleet's series, as a real exporter produces them, in a `Store` the PromQL subset
answers from: what the fleet view's tests and ``benchmarks/bench_fleet_scale.py`` serve.

Each host's series are one scrape of `ExportState` through prometheus_client's exposition and
parser (what Prometheus stores), with the ``instance`` and ``job`` labels Prometheus adds.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpusat_tui.sources.fleet_view.view_queries import view_queries
from gpusat_tui.sources.fleet_view.view_ranks import group_queries, read_ranks
from gpusat_tui.sources.fleet_view.view_request import ViewRequest
from tests.prom.promql_subset import Series, Store

__all__ = ["Host", "StoreAPI", "fleet_store", "host_samples"]


@dataclass(frozen=True)
class Host:
    name: str
    #: Verdict kind of its cards (a card index -> kind overrides it).
    kind: str = "saturated"
    job_id: str = ""
    user: str = "alice"
    cards: int = 8
    util: float = 97.0
    cause: str | None = None
    #: When its exporter goes away (None: never).
    gone_at: float | None = None
    kinds: Mapping[int, str] | None = None


def host_samples(host: Host) -> list[tuple[str, dict[str, str], float]]:
    """One scrape of a real exporter's state for ``host``: (name, labels, value)."""
    from gpusat_tui.commands.export_metrics import ExportState
    from gpusat_tui.model import Assessment, CardReading, Frame, JobContext, Verdict
    from tests.prom.exposition import exposed_samples

    cards = [CardReading(vendor="nvidia", index=i, name="NVIDIA H100 80GB HBM3",
                         uuid=f"GPU-{abs(hash((host.name, i))) % 10**12:012d}",
                         util_pct=host.util, mem_used_mib=60000.0, mem_total_mib=81920.0,
                         mem_pct=73.2, power_w=3.0 * host.util + 10, power_cap_w=700.0,
                         temp_c=60.0) for i in range(host.cards)]
    jobs = [JobContext(scheduler="slurm", job_id=host.job_id, name="train", user=host.user,
                       step="0", card_ids=[c.id for c in cards], pids=[4242])] \
        if host.job_id else []
    kinds = host.kinds or {}

    def verdict(i: int) -> Verdict:
        kind = kinds.get(i, host.kind)
        healthy = kind in ("saturated", "idle")
        return Verdict(kind=kind, cause=None if healthy else host.cause)  # type: ignore[arg-type]

    verdicts = {c.id: verdict(c.index) for c in cards}
    state = ExportState(host=host.name)
    t = time.time()
    for step in range(3):  # counters need two polls for a rate
        state.update(Frame(t=t - 2 + step, cards=cards, jobs=jobs),
                     Assessment(cards=verdicts, job=Verdict(kind=host.kind)))  # type: ignore[arg-type]
    out = []
    for s in exposed_samples(state):
        labels = {**s.labels, "instance": f"{host.name}:9478", "job": "gpusat"}
        out.append((s.name, labels, float(s.value)))
    return out


def series_of(host: Host, samples: Iterable[tuple[str, dict[str, str], float]]) -> list[Series]:
    """``samples`` as stored series: the busy counter's rate is the host's utilisation, the
    utilisation moves with `Store.wobble`, all of them go at ``host.gone_at``."""
    out = []
    for name, labels, value in samples:
        rate = host.util / 100.0 if name == "gpusat_card_busy_seconds_total" else None
        moves = 1.0 if name == "gpusat_card_utilization_ratio" else 0.0
        out.append(Series({"__name__": name, **labels}, value, host.gone_at, rate, moves))
    return out


def fleet_store(hosts: Sequence[Host]) -> Store:
    store = Store()
    for host in hosts:
        store.add(series_of(host, host_samples(host)))
    return store


class StoreAPI:
    """`PrometheusAPI`'s ``get`` over a `Store`: every instant query evaluated, each asked
    query and its answer's size kept; the range query answered empty."""

    base_url = "http://prom.test:9090"

    def __init__(self, store: Store, clock: Any = time.time) -> None:
        self.store = store
        self.clock = clock
        self.asked: list[str] = []
        self.bytes = 0
        self.fail: set[str] = set()

    def get(self, endpoint: str, params: Mapping[str, str]) -> Any:
        if endpoint == "query_range":
            return {"resultType": "matrix", "result": []}
        query = params["query"]
        self.asked.append(query)
        for word in self.fail:
            if word in query:
                from gpusat_tui.sources.fleet_view.prometheus_api import FleetError

                raise FleetError(f"HTTP 503 for {word}", "http")
        data = self.store.answer(query, self.clock())
        self.bytes += len(repr(data))
        return data


def view_answers(
    store: Store, request: ViewRequest, now: float, matchers: Sequence[str] = ()
) -> dict[str, Any]:
    """A refresh's answers as the view asks them: the summary's queries, then the ranked
    groups' (`view_poll`'s two rounds, less the rows)."""
    answers = {name: store.answer(q, now) for name, q in view_queries(request, matchers).items()}
    ranked = read_ranks(answers.get("ranks"))
    answers.update({name: store.answer(q, now)
                    for name, q in group_queries(ranked, request, matchers).items()})
    return answers
