"""The problem groups ranked on the server (`view_ranks`): a refresh asks for a page of the
worst jobs and hosts, not for every problem card; the next page comes by rank; each filter
narrows the ranking on the server as the list narrows its rows."""

from __future__ import annotations

import time

import pytest

from gpusat_tui.analysis.fleet_triage import Triage, parse_filter, summary_triage
from gpusat_tui.sources.fleet_view.view_queries import read_view
from gpusat_tui.sources.fleet_view.view_request import GROUP_PAGE, FleetView, ViewRequest
from tests.prom.promql_subset import Store
from tests.prom.synthetic_fleet import Host, fleet_store, view_answers


def _fleet() -> Store:
    """20 starving hosts outside any job and 12 starving one-host jobs, each with its own
    waste; a stalled host and a stalled job that waste little (worst kind first all the
    same); a fragmenting 2-host job; 20 saturated hosts."""
    hosts = [Host(f"s{h:02d}", "starving", cards=2, util=10.0 + 3 * h, cause="input")
             for h in range(20)]
    hosts += [Host(f"j{j:02d}", "starving", job_id=f"9{j:03d}", user=f"u{j % 3}", cards=2,
                   util=12.0 + 5 * j, cause="input") for j in range(12)]
    hosts.append(Host("stuck", "stalled", cards=2, util=90.0, cause="hang"))
    hosts.append(Host("stuckjob", "stalled", job_id="7001", user="zed", cards=2, util=92.0,
                      cause="hang"))
    hosts += [Host(f"f{h}", "fragmenting", job_id="8001", user="u1", cards=2, util=50.0 + h,
                   cause="memory") for h in range(2)]
    hosts += [Host(f"ok{h:02d}", job_id=f"5{h:03d}") for h in range(20)]
    return fleet_store(hosts)


def _triage(store: Store, request: ViewRequest, now: float, flt: str = "") -> Triage:
    view = read_view(view_answers(store, request, now), now)
    return summary_triage(view.summary, view.jobs, parse_filter(flt))


def _page(full: Triage, n: int) -> list[str]:
    """The keys of the first ``n`` groups of ``full``."""
    return [g.key for g in full.groups[:n]]


def test_a_refresh_asks_for_a_page_of_the_worst_groups_not_every_problem() -> None:
    store = _fleet()
    now = time.time()
    full = _triage(store, ViewRequest(groups=1000), now)
    assert len(full.groups) == 35  # 20 + 1 hosts, 12 + 1 + 1 jobs
    assert full.groups[0].key == "slurm:7001"  # stalled first, though it wastes least
    paged = read_view(view_answers(store, ViewRequest(groups=16), now), now)
    page = summary_triage(paged.summary, paged.jobs)
    assert [g.key for g in page.groups] == _page(full, 16)
    assert page.groups[14].key == "stuck"  # the stalled host first among the hosts
    # Only the page's cards came: 16 groups of 2 cards (the fragmenting job has 4).
    assert len(paged.summary.problems) == 2 * 16 + 2
    # The summary still counts the whole fleet.
    assert page.summary == full.summary
    assert page.summary.startswith("56 hosts · 232 cards: 4 stalled in 1 job, 4 fragmenting "
                                   "in 1 job, 64 starving in 12 jobs")


def test_the_next_page_brings_the_next_groups_by_rank() -> None:
    store = _fleet()
    now = time.time()
    full = _triage(store, ViewRequest(groups=1000), now)
    view = FleetView()
    assert view.request().groups == GROUP_PAGE
    first = _triage(store, view.request(), now)
    view.reach(GROUP_PAGE + 1)  # the list scrolled past the first page
    assert view.request().groups == 2 * GROUP_PAGE
    second = _triage(store, view.request(), now)
    assert [g.key for g in first.groups] == _page(full, GROUP_PAGE)
    assert [g.key for g in second.groups] == _page(full, 2 * GROUP_PAGE)
    view.narrow("s1*", "")  # a new filter starts again at the first page
    assert view.request().groups == GROUP_PAGE


@pytest.mark.parametrize("text", [
    "host:s1*", "host:J0", "kind:stal", "kind:frag", "job:9003", "job:train", "user:u1",
    "user:zed kind:sta", "u2", "s01", "fragm", "host:ok0", "kind:sat", "kind:down",
])
def test_each_filter_narrows_the_ranking_on_the_server(text: str) -> None:
    """The server's page under a filter is the first page of the whole fleet's groups that
    pass the filter: the server ranked only what the filter leaves."""
    store = _fleet()
    now = time.time()
    flt = parse_filter(text)
    full = _triage(store, ViewRequest(groups=1000), now, text)
    request = ViewRequest(host=flt.host, kind=flt.kind, job=flt.job, user=flt.user,
                          words=flt.words, groups=2)
    page = _triage(store, request, now, text)
    assert [g.key for g in page.groups] == _page(full, 2)
    assert page.summary == full.summary
