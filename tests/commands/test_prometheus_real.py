"""End to end on real components: ``gpusat-tui export`` processes against fake vendor tools, a
real Prometheus server (the distribution's binary) scraping them every second on 127.0.0.1, its
HTTP API, and the fleet view driven by Textual's Pilot against it.

Hosts: node-a and node-c saturated, node-b starving (tests/prom/hosts.py), node-d saturated
(stopped by the fleet test to see its host go stale). Every process is stopped at the end; a
test that leaks one fails on the leftover check.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from gpusat_tui.sources.fleet_view.fleet import build_fleet
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.widgets.fleet_list import FOLD_CARD
from tests.conftest import leftover_processes
from tests.prom.hosts import Exporter, fake_host, start_exporter
from tests.prom.promql_subset import Series, Store
from tests.prom.server import PromServer, prometheus, prometheus_binary
from tests.ui.conftest import screen_text, settle

pytestmark = pytest.mark.skipif(
    prometheus_binary() is None,
    reason="no prometheus binary (apt-get install prometheus; .ci/run installs it)",
)

HOSTS = {"node-a": "saturated", "node-b": "starving", "node-c": "saturated",
         "node-d": "saturated"}
CARDS = 2


@dataclass
class Fleet:
    prom: PromServer
    exporters: dict[str, Exporter]
    root: Path
    #: When every card's verdict was first seen settled and stored (seconds since the epoch).
    settled_t: float


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("fleet")
    exporters: dict[str, Exporter] = {}
    try:
        for host, kind in HOSTS.items():
            exporters[host] = start_exporter(
                fake_host(root / host, kind, cards=CARDS), host, interval=0.5
            )
        targets = {"gpusat": [e.address for e in exporters.values()]}
        with prometheus(root / "prom", targets, scrape_interval="1s") as prom:
            # Every card's verdict settled as its scenario says (the exporters need a few
            # polls and the tracker's hold), and stored, with two scrapes of every busy
            # counter (its irate; on a loaded machine the exporters may have settled before
            # the server's first scrape).
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                on = prom.query("gpusat_card_verdict == 1")
                kinds = {(s["metric"]["host"], s["metric"]["kind"]) for s in on}
                rates = prom.query("irate(gpusat_card_busy_seconds_total[5m])")
                if (len(on) == len(rates) == len(HOSTS) * CARDS
                        and kinds == set(HOSTS.items())):
                    break
                time.sleep(0.25)
            else:
                raise AssertionError(f"verdicts never settled: {kinds}")
            yield Fleet(prom, exporters, root, time.time())
    finally:
        for exporter in exporters.values():
            exporter.stop()
    assert not leftover_processes(root, grace=2.0)


def by_host(series: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for s in series:
        out.setdefault(s["metric"]["host"], []).append(s)
    return out


def value(series: dict) -> float:
    return float(series["value"][1])


def test_stored_series_carry_the_scenarios_figures_and_labels(fleet: Fleet) -> None:
    prom = fleet.prom
    util = by_host(prom.query('gpusat_card_utilization_ratio{host=~"node-(a|b|c)"}'))
    assert sorted(util) == ["node-a", "node-b", "node-c"]
    for host, series in util.items():
        assert sorted(s["metric"]["card"] for s in series) == ["nvidia:0", "nvidia:1"]
        for s in series:
            labels = s["metric"]
            assert labels["vendor"] == "nvidia" and labels["index"] == labels["card"][-1]
            assert labels["name"] == "NVIDIA H100 80GB HBM3"
            assert labels["uuid"].startswith("GPU-")
            assert labels["job"] == "gpusat" and labels["instance"] == (
                fleet.exporters[host].address
            )
            if HOSTS[host] == "saturated":
                assert 0.96 <= value(s) <= 1.0
            else:
                assert 0.0 <= value(s) <= 1.0
    mem = {(s["metric"]["host"], s["metric"]["card"]): value(s)
           for s in prom.query("gpusat_card_memory_used_ratio")}
    assert mem[("node-a", "nvidia:0")] == pytest.approx(0.71, abs=0.001)
    assert mem[("node-b", "nvidia:1")] == pytest.approx(0.60, abs=0.001)
    total = prom.query('gpusat_card_memory_total_bytes{host="node-a"}')
    assert {value(s) for s in total} == {81920 * 1024 * 1024}
    for s in prom.query("gpusat_card_power_watts / gpusat_card_power_limit_watts"):
        share = value(s)
        if HOSTS[s["metric"]["host"]] == "saturated":
            assert 0.82 <= share <= 0.90
        else:
            assert 0.25 <= share <= 0.40
    verdicts = {(s["metric"]["host"], s["metric"]["card"]): (s["metric"]["kind"],
                                                             s["metric"].get("cause", ""))
                for s in prom.query("gpusat_card_verdict == 1")}
    assert verdicts[("node-a", "nvidia:1")] == ("saturated", "")
    assert verdicts[("node-b", "nvidia:0")][0] == "starving"
    # Counting cards by kind, as the README's queries do.
    counts = {s["metric"]["kind"]: value(s)
              for s in prom.query("sum by (kind) (gpusat_card_verdict)")}
    assert counts["saturated"] == 6 and counts["starving"] == 2 and counts["idle"] == 0
    jobs = {s["metric"]["host"]: s["metric"]["kind"] for s in prom.query("gpusat_job_verdict == 1")}
    assert jobs == {h: k for h, k in HOSTS.items()}
    info = prom.query("gpusat_exporter_info")
    assert {s["metric"]["metrics_version"] for s in info} == {"1"}
    # The busy counter grows at the card's utilisation: fast for saturated, slow for starving.
    # Slope between the first and last stored samples (rate() over a window this short
    # extrapolates to its edges), over at least 8 s: a scrape reads the counter as of the
    # exporter's last poll, so either end may be off by one poll's step (measured as the largest
    # step between stored samples), which over a 2 s span was once 22 % on a loaded machine.
    deadline = time.monotonic() + 40
    while True:
        stored = prom.query("gpusat_card_busy_seconds_total[60s]")
        spans = [s["values"][-1][0] - s["values"][0][0] for s in stored if s["values"]]
        if (len(spans) == len(stored) and min(spans, default=0) >= 8) or (
            time.monotonic() > deadline
        ):
            break
        time.sleep(0.5)
    rate: dict[tuple[str, str], tuple[float, float]] = {}
    for s in stored:
        points = [(t, float(v)) for t, v in s["values"]]
        (t0, v0), (t1, v1) = points[0], points[-1]
        step = max(b - a for (_, a), (_, b) in itertools.pairwise(points))
        rate[(s["metric"]["host"], s["metric"]["card"])] = (
            (v1 - v0 - step) / (t1 - t0), (v1 - v0 + step) / (t1 - t0)
        )
    assert len(rate) == len(HOSTS) * CARDS, stored
    low, high = rate[("node-a", "nvidia:0")]
    assert high >= 0.9 and low <= 1.05, (low, high)
    assert rate[("node-b", "nvidia:0")][0] < 0.7
    polls = prom.query('gpusat_exporter_polls_total{host="node-a"}')
    assert value(polls[0]) >= 4
    assert value(prom.query('gpusat_exporter_cpu_seconds_total{host="node-a"}')[0]) > 0


def test_every_grafana_panel_query_runs_on_the_real_server(fleet: Fleet) -> None:
    from tests.commands.test_export_metrics import dashboard_exprs

    answered = 0
    for expr in dashboard_exprs():
        promql = expr.replace("$host", ".*").replace("$__rate_interval", "1m")
        fleet.prom.query(promql)  # a parse or type error fails here (status "error")
        answered += 1
    assert answered >= 10


def test_check_judges_the_fleet_headless(fleet: Fleet) -> None:
    import json
    import subprocess
    import sys

    from tests.prom.hosts import REPO

    result = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--prometheus", fleet.prom.url,
         "--match", "job=gpusat", "--interval", "0.5", "--duration", "3", "--json"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    cards = {c["id"]: c for c in report["cards"]}
    assert set(cards) == {f"{h}/nvidia:{i}" for h in HOSTS for i in range(CARDS)}
    assert cards["node-b/nvidia:0"]["verdict"]["kind"] == "starving"
    assert cards["node-a/nvidia:1"]["verdict"]["kind"] == "saturated"
    assert 96 <= cards["node-c/nvidia:0"]["util_pct"]["mean"] <= 100
    assert report["verdict"] == "imbalanced"  # the job across hosts: node-b lags


async def test_fleet_view_shows_every_host_names_the_lagging_one_and_marks_a_stopped_host(
    fleet: Fleet,
) -> None:
    source, tracker = build_fleet(fleet.prom.url, ["job=gpusat"], interval=0.5)
    # The card list view: 8 cards in 140x40 would otherwise open in the overview, whose
    # down arrow steps a row of blocks, not a row of the list.
    app = GpusatApp(source, tracker=tracker, interval=0.5, own_cpu=lambda: 0.1, view="card")
    async with app.run_test(size=(140, 40)) as pilot:
        expected = {f"{h}/nvidia:{i}" for h in HOSTS for i in range(CARDS)}
        # Worst first: the starving host's cards under its header, the healthy folded.
        await settle(pilot, lambda: app.card_list.lines[:1] != []
                     and app.card_list.lines[0].startswith(f"▾node-b {CARDS}/{CARDS} ")
                     and app.assessment.job.kind == "imbalanced"
                     # A healthy host's mean between two scrapes can read low once (its
                     # exporter late under load): the lag names node-b alone once it settles.
                     and app.assessment.job.why[:1] != []
                     and app.assessment.job.why[0].startswith("lagging host: node-b at "),
                     timeout=30)
        assert (app.selected or "").startswith("node-b/")  # a problem card, no key pressed
        job = app.assessment.job
        assert job.cause == "straggler"
        assert job.why[0].startswith("lagging host: node-b at ")
        text = screen_text(app)
        assert "lagging host: node-b" in text
        assert f"{len(HOSTS)} hosts · {len(HOSTS) * CARDS} cards: {CARDS} starving" in text
        verdicts = app.assessment.cards
        assert verdicts["node-b/nvidia:1"].kind == "starving"
        # The healthy are counted, not fetched, while folded (the view asks for the rows).
        assert "node-c/nvidia:0" not in verdicts
        # Arrow keys walk the rows; Enter opens the healthy row; the selected card in full.
        for _ in range(CARDS):
            await pilot.press("down")
        await settle(pilot, lambda: app.card_list.fold_id == app.selected)  # type: ignore[attr-defined]
        await pilot.press("enter")
        # The healthy header stands for no card (a stop of the arrows, where Enter left
        # the selection): the rows under it are the healthy cards, fetched once unfolded.
        await settle(pilot, lambda: set(app.card_list.ids) - {FOLD_CARD.id} == expected)
        await settle(pilot, lambda: app.assessment.cards.get("node-c/nvidia:0") is not None
                     and app.assessment.cards["node-c/nvidia:0"].kind == "saturated")
        cards = [line for line in app.card_list.lines if not line.startswith("▾")]
        for host in HOSTS:  # every host's rows are in the card list
            assert sum(1 for line in cards if host in line) == CARDS
        await pilot.press("down")
        await settle(pilot, lambda: app.selected is not None
                     and app.selected in screen_text(app) and not app.selected.startswith("node-b"))
        # Stop node-d's exporter: Prometheus marks its series stale, the view carries its
        # cards over marked stale and the status line names the host.
        assert fleet.exporters["node-d"].stop() == 0

        def d_stale() -> bool:
            frame = app.frame
            return frame is not None and all(
                c.stale_s is not None for c in frame.cards if c.host == "node-d"
            ) and any(e.tool == "node-d" and e.kind == "stale" for e in frame.errors)

        await settle(pilot, d_stale, timeout=20)
        assert "node-d stale" in screen_text(app)
        assert app.assessment.cards["node-d/nvidia:0"].kind == "unknown"
        assert all(c.stale_s is None for c in app.frame.cards if c.host != "node-d")  # type: ignore[union-attr]
        await pilot.press("q")


def _stored_moment(prom: PromServer, after: float, timeout: float = 30.0) -> float:
    """A moment after ``after`` by which every target's scrapes are stored: the oldest of the
    targets' newest scrapes. Evaluated there, the real server and a stored copy read the same
    samples (evaluated now, a scrape could land between the two: the ranks' waste sums then
    differed by a scrape's step)."""
    deadline = time.monotonic() + timeout
    while True:
        newest = [value(s) for s in prom.query('timestamp(up{job="gpusat"})')]
        if newest and min(newest) > after:
            return min(newest)
        if time.monotonic() > deadline:
            raise AssertionError(f"no scrape of every target after {after}: {newest}")
        time.sleep(0.25)


def _stored_as_store(prom: PromServer, at: float) -> Store:
    """Every gpusat series the real server holds at time ``at``, as the PromQL subset's store:
    a series whose last sample is older than two scrapes is gone (its exporter stopped); the
    busy counters' rates are the real server's ``irate``."""
    rates = {
        tuple(sorted(s["metric"].items())): value(s)
        for s in prom.query("irate(gpusat_card_busy_seconds_total[5m])", at=at)
    }
    store = Store()
    for s in prom.query('{__name__=~"gpusat_.+"}[10m]', at=at):
        last_t, last_v = s["values"][-1]
        labels = s["metric"]
        named = tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))
        gone = float(last_t) + 1.0 if at - float(last_t) > 2.5 else None
        store.add([Series(dict(labels), float(last_v), gone, rates.get(named))])
    return store


def _answers(prom: PromServer, store: Store, promql: str, at: float) -> tuple[dict, dict]:
    """The real server's answer and the subset's, both evaluated at ``at``."""
    def keyed(result: list[tuple[dict[str, str], float]]) -> dict:
        return {tuple(sorted(labels.items())): v for labels, v in result}

    real = keyed([(s["metric"], value(s)) for s in prom.query(promql, at=at)])
    ours = keyed(store.evaluate(promql, at))
    return real, ours


def test_each_fleet_view_query_answers_as_the_real_server_does(fleet: Fleet) -> None:
    """The synthetic servers' evaluator against Prometheus, on every query the fleet view
    sends (the summary's, with a host and kind filter, unfolded, and the rows), over the
    same stored series; and the answers say what the cards are."""
    from gpusat_tui.sources.fleet_view.view_queries import (
        Place,
        read_view,
        rows_query,
        view_queries,
    )
    from gpusat_tui.sources.fleet_view.view_ranks import group_queries, read_ranks
    from gpusat_tui.sources.fleet_view.view_request import ViewRequest

    requests = [ViewRequest(), ViewRequest(host="node-*"),
                ViewRequest(host="?ode-b", kind="sat"), ViewRequest(unfolded=True),
                ViewRequest(kind="star", job="42", user="alice", words=("node", "b"), groups=1)]
    queries: dict[str, str] = {}
    for n, request in enumerate(requests):
        for name, promql in view_queries(request, ['job="gpusat"']).items():
            queries[f"{name}/{n}"] = promql
        # The ranked groups' queries for the groups the real server ranks, and a job (these
        # hosts run none: the job forms are checked on empty answers only).
        ranks = read_ranks({"result": fleet.prom.query(queries[f"ranks/{n}"])}
                           if f"ranks/{n}" in queries else None)
        if n == 0:
            assert [h for h, _ in ranks.hosts] == ["node-b"] and not ranks.jobs
        ranked = replace(ranks, jobs=["slurm:42", "plain:x|y", *ranks.jobs])
        for name, promql in group_queries(ranked, request, ['job="gpusat"']).items():
            queries[f"{name}/{n}"] = promql
    places = {f"{h}/nvidia:{i}": Place("host", h, f"nvidia:{i}") for h in ("node-a", "node-b")
              for i in range(CARDS)}
    rows = rows_query(["node-a/nvidia:1", "node-b/nvidia:0", "node-b/nvidia:1"], places)
    assert rows is not None
    queries["rows"] = rows
    # Both read at one moment already stored; three tries all the same.
    for _attempt in range(3):
        at = _stored_moment(fleet.prom, fleet.settled_t)
        store = _stored_as_store(fleet.prom, at)
        mismatched = []
        for name, promql in queries.items():
            real, ours = _answers(fleet.prom, store, promql, at)
            values_differ = name.split("/")[0] in (
                "counts", "jobs", "healthy", "job_kinds") and real != ours
            if name.startswith("ranks/") and set(real) == set(ours):  # sums: float order
                values_differ = any(abs(real[k] - ours[k]) > 1e-9 for k in real)
            if set(real) != set(ours) or values_differ:
                mismatched.append((name, promql, real, ours))
        if not mismatched:
            break
        time.sleep(1.0)
    assert not mismatched, [(n, len(r), len(o), sorted(set(r) ^ set(o))[:1])
                            for n, _, r, o in mismatched]
    # What the real answers become: the cards as the scenarios made them. A busy share is one
    # step of a counter between two scrapes: on a loaded machine a late poll of an exporter
    # can leave half a step between two of them (a saturated host read 0.48), so the moment
    # read is the first one where the saturated hosts' exporters polled on time.
    deadline = time.monotonic() + 30
    while True:
        view = read_view({name.split("/")[0]: {"result": fleet.prom.query(promql, at=at)}
                          for name, promql in queries.items() if name.endswith("/0")}, at)
        busy = view.summary.host_busy
        if ((busy.get("node-a", 0.0) > 0.7 and (view.summary.busy_median or 0.0) > 0.7)
                or time.monotonic() > deadline):
            break
        at = _stored_moment(fleet.prom, at)
    live = [h for h in HOSTS if not any(
        i.kind == "down" and i.host == h for i in view.summary.problems)]
    assert view.summary.kinds["saturated"] == CARDS * (len(live) - 1)
    assert {(i.id, i.kind) for i in view.summary.problems if i.kind != "down"} == {
        (f"node-b/nvidia:{i}", "starving") for i in range(CARDS)}
    assert view.summary.hosts == len(HOSTS)
    assert busy["node-b"] < 0.7 < busy["node-a"]
    assert view.summary.busy_hosts == len(busy)
    assert view.summary.busy_median is not None and view.summary.busy_median > 0.7
