"""The fleet view's summary queries and their answers (`view_queries`, `read_view`), over the
PromQL subset serving a synthetic fleet of real exporter series."""

from __future__ import annotations

import time

from gpusat_tui.sources.fleet_view.view_queries import read_view, rows_query
from gpusat_tui.sources.fleet_view.view_request import ViewRequest
from tests.prom.synthetic_fleet import Host, fleet_store, view_answers


def test_the_job_join_on_a_fleet_of_many_jobs() -> None:
    """120 hosts, one job each, but every 10 hosts form one 5-host job of which one host
    starves: each problem card gets its job, and each job its card count on every host."""
    hosts = []
    for h in range(120):
        block = h // 10
        in_big = h % 10 < 5
        job = f"9{block:03d}" if in_big else f"1{h:04d}"
        starving = h % 10 == 2 or h % 10 == 7
        hosts.append(Host(f"n{h:03d}", "starving" if starving else "saturated", job_id=job,
                          cards=2, util=30.0 if starving else 97.0,
                          cause="input" if starving else None, user=f"u{block}"))
    store = fleet_store(hosts)
    now = time.time()
    view = read_view(view_answers(store, ViewRequest(groups=100), now), now)
    problems = {item.id: item for item in view.summary.problems}
    assert len(problems) == 24 * 2
    for h in range(120):
        if h % 10 not in (2, 7):
            continue
        block = h // 10
        expected = f"slurm:9{block:03d}" if h % 10 == 2 else f"slurm:1{h:04d}"
        for i in range(2):
            assert problems[f"n{h:03d}/nvidia:{i}"].job == expected
            assert problems[f"n{h:03d}/nvidia:{i}"].util_pct == 30.0
    # The 5-host job counts its 10 cards on all its hosts, not the starving host's 2.
    assert {k: v for k, v in view.summary.job_cards.items() if k.startswith("slurm:9")} == {
        f"slurm:9{b:03d}": 10 for b in range(12)}
    assert len(view.jobs) == 24  # only the problem cards' jobs were asked for
    users = {job.key: job.user for job in view.jobs}
    assert users["slurm:9003"] == "u3"
    assert view.summary.kinds == {"saturated": 192, "starving": 48}
    assert view.summary.hosts == 120
    # The straggler's figures: the 16 lowest busy hosts and the highest, and how many in all.
    assert sorted(view.summary.host_busy.values()) == [0.30] * 16 + [0.97]
    assert view.summary.busy_hosts == 120
    assert view.summary.busy_median == 0.97


def test_rows_query_asks_for_the_rows_cards_only() -> None:
    hosts = [Host(f"n{h}", cards=4) for h in range(3)]
    store = fleet_store(hosts)
    now = time.time()
    # Where the cards are comes from an answer (here the unfolded healthy list).
    view = read_view(view_answers(store, ViewRequest(unfolded=True), now), now)
    assert len(view.summary.healthy_ids) == 12
    query = rows_query(["n0/nvidia:1", "n2/nvidia:3", "n2/nvidia:0", "nowhere/nvidia:0"],
                       view.places)
    assert query is not None
    cards = {(s["metric"]["host"], s["metric"]["card"]) for s in store.answer(query, now)[
        "result"]}
    assert cards == {("n0", "nvidia:1"), ("n2", "nvidia:3"), ("n2", "nvidia:0")}
    assert rows_query(["nowhere/nvidia:0"], view.places) is None
