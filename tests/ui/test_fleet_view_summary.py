"""The fleet view asking Prometheus only for what it shows (`FleetView`), in the app (Pilot),
against the PromQL subset serving a small synthetic fleet of real exporter series
(tests/prom/synthetic_fleet.py; the subset is checked against a real Prometheus in
tests/commands/test_prometheus_real.py)."""

from __future__ import annotations

import time
from typing import Any

from gpusat_tui.analysis.fleet import FleetTracker
from gpusat_tui.sources.fleet_view.fleet import FleetSource
from gpusat_tui.sources.fleet_view.fleet_answers import instant_query
from gpusat_tui.sources.fleet_view.prometheus_api import FleetError
from gpusat_tui.sources.fleet_view.view_request import GROUP_PAGE, FleetView
from gpusat_tui.ui.app import GpusatApp
from tests.prom.synthetic_fleet import Host, StoreAPI, fleet_store
from tests.ui.conftest import screen_text, settle

CARDS = 4


def small_fleet(now: float) -> list[Host]:
    """20 hosts: a stalled one, two starving hosts of one 2-host job (slurm 900), a starving
    host of its own job that wastes more (slurm 117), a gone host, the rest saturated."""
    hosts = []
    for h in range(20):
        name = f"gpu-{h:02d}"
        if h == 3:
            hosts.append(Host(name, "stalled", job_id="103", util=0.0, cards=CARDS,
                              cause="hung"))
        elif h in (5, 6):
            hosts.append(Host(name, "starving", job_id="900", util=60.0, cards=CARDS,
                              cause="input"))
        elif h == 17:
            hosts.append(Host(name, "starving", job_id="117", util=10.0, cards=CARDS,
                              cause="input", user="bob"))
        elif h == 12:
            hosts.append(Host(name, job_id="112", cards=CARDS, gone_at=now - 30))
        else:
            hosts.append(Host(name, job_id=str(100 + h), cards=CARDS))
    return hosts


def fleet_app(api: StoreAPI) -> tuple[GpusatApp, FleetSource]:
    source = FleetSource("http://prom.test:9090", interval=0.05, api=api,  # type: ignore[arg-type]
                         view=FleetView(), history=False)
    tracker = FleetTracker(lambda: source.verdicts, lambda: source.job_verdicts)
    tracker.view = source.view
    return GpusatApp(source, tracker=tracker, interval=0.05, own_cpu=lambda: 0.1,
                     view="card"), source


def _api(hosts: list[Host] | None = None) -> StoreAPI:
    return StoreAPI(fleet_store(hosts if hosts is not None else small_fleet(time.time())))


async def test_worst_first_from_the_summary_queries_with_the_healthy_folded() -> None:
    api = _api()
    app, _ = fleet_app(api)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, lambda: len(app.card_list.lines) > 5
                     and "healthy" in app.card_list.lines[-1], timeout=20)
        text = screen_text(app)
        assert ("20 hosts · 80 cards: 4 stalled in 1 job, 12 starving in 2 jobs, 1 host "
                "down, the rest saturated or idle") in text
        assert "(80 cards)" in text  # the job line counts the fleet, not the rows fetched
        lines = app.card_list.lines
        # Jobs first, by severity then waste: the stalled job, the starving job wasting 90 %
        # of 4 cards (3.6 cards) before the one wasting 40 % of 8 (3.2), then the gone host
        # (no job known for it), then the healthy, folded.
        heads = [line.split()[0] for line in lines if line.startswith("▾")]
        assert heads == ["▾slurm", "▾slurm", "▾slurm", "▾gpu-12"], lines
        groups = [(g.label, len(g.card_ids), g.cards, g.worst)
                  for g in app.card_list.triage.groups]
        assert groups == [("slurm 103 alice", 4, 4, "stalled"), ("slurm 117 bob", 4, 4, "starving"),
                          ("slurm 900 alice", 8, 8, "starving"), ("gpu-12", 4, 4, "down")]
        assert lines[0].startswith("▾slurm 103 alice")
        assert lines[-1][1:].startswith("+60 healthy ⏎")
        assert app.selected == "gpu-03/nvidia:0"  # the worst card, no key pressed
        # Its figures were asked for and came: the row reads its utilisation.
        await settle(pilot, lambda: app.frame is not None
                     and app.frame.card("gpu-03/nvidia:0") is not None)
        # No refresh asked for every card: the full query is check's, not the view's.
        assert instant_query() not in api.asked
        assert not any("label_replace" in q for q in api.asked)
        frame = app.frame
        assert frame is not None and frame.fleet is not None
        assert len(frame.cards) < 80  # the rows on screen, not the fleet
        assert frame.fleet.kinds == {"saturated": 60, "stalled": 4, "starving": 12, "down": 4}
        await pilot.press("q")


async def test_the_healthy_row_opens_on_enter_and_its_cards_are_asked_for() -> None:
    api = _api()
    app, source = fleet_app(api)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, lambda: app.card_list.fold_id is not None, timeout=20)
        fold = app.card_list.fold_id
        while app.selected != fold:
            await pilot.press("down")
        asked = len(api.asked)
        await pilot.press("enter")
        # The next refreshes list the healthy cards (the one answer that grows with the fleet,
        # asked only while unfolded); the header is where the selection stays.
        await settle(pilot, lambda: any(line.startswith("▸60 healthy ")
                                        for line in app.card_list.lines)
                     and len(app.card_list.ids) > 60, timeout=10)
        assert any('kind=~"saturated|idle"} == 1' in q and "count" not in q
                   for q in api.asked[asked:])
        assert source.view is not None and source.view.request().unfolded
        await pilot.press("down")
        await settle(pilot, lambda: app.selected == "gpu-00/nvidia:0")
        await settle(pilot, lambda: app.frame is not None
                     and app.frame.card("gpu-00/nvidia:0") is not None, timeout=10)
        await pilot.press("q")


async def test_a_filter_narrows_the_problems_here_and_the_healthy_count_on_the_server() -> None:
    api = _api()
    app, _ = fleet_app(api)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, lambda: app.card_list.fold_id is not None, timeout=20)
        await pilot.press("slash")
        await settle(pilot, lambda: app.screen.query("#fleet-filter").first() is not None)
        for key in "host:gpu-1*":
            await pilot.press(key)
        await pilot.press("enter")
        # gpu-10..gpu-19: the starving gpu-17 and the gone gpu-12; 8 healthy hosts' cards
        # counted by the server under the host matcher.
        await settle(pilot, lambda: any("+32 healthy" in line for line in app.card_list.lines),
                     timeout=10)
        assert any('host=~"(?i)gpu\\\\-1.*"' in q for q in api.asked), api.asked[-3:]
        assert [g.label for g in app.card_list.triage.groups] == ["slurm 117 bob", "gpu-12"]
        assert "filter host:gpu-1*" in screen_text(app)
        # A user filter narrows the problem rows; the healthy row leaves (the server is not
        # asked which healthy card is whose).
        await pilot.press("slash")
        await settle(pilot, lambda: app.screen.query("#fleet-filter").first() is not None)
        await pilot.press("ctrl+u")
        for key in "user:bob":
            await pilot.press(key)
        await pilot.press("enter")
        await settle(pilot, lambda: len(app.card_list.ids) == 1 + CARDS)
        assert app.card_list.lines[0].startswith("▾slurm 117 bob")
        assert not any("healthy" in line for line in app.card_list.lines)
        await pilot.press("q")


async def test_a_refused_query_is_said_and_the_last_summary_kept() -> None:
    api = _api()
    app, _ = fleet_app(api)
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot, lambda: app.card_list.fold_id is not None, timeout=20)
        before = app.card_list.lines[0]
        api.fail = {"card, kind, cause) ("}  # the problems query
        await settle(pilot, lambda: "problems query: HTTP 503" in screen_text(app), timeout=10)
        assert app.card_list.lines[0] == before  # the last summary's rows, not an empty list
        api.fail = set()
        await settle(pilot, lambda: "HTTP 503" not in screen_text(app), timeout=10)
        await pilot.press("q")


async def test_rows_are_fetched_as_the_selection_moves() -> None:
    # 30 starving hosts, 120 problem rows: more than the pane shows.
    hosts = [Host(f"gpu-{h:02d}", "starving", job_id=str(100 + h), util=30.0 + h,
                  cards=CARDS, cause="input") for h in range(30)]
    hosts += [Host(f"ok-{h:02d}", job_id=str(200 + h), cards=CARDS) for h in range(5)]
    api = _api(hosts)
    app, _ = fleet_app(api)
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, lambda: app.card_list.fold_id is not None, timeout=20)
        first = app.frame
        assert first is not None
        # The least busy host first (most waste); the last hosts' rows are off screen and
        # their figures not asked for.
        assert app.selected == "gpu-00/nvidia:0"
        assert first.card("gpu-29/nvidia:3") is None
        assert not any('host="gpu-29"' in q for q in api.asked)
        await pilot.press("up")  # from the first row up: the healthy row, last
        await pilot.press("up")  # and the last problem card, off screen until now
        assert app.selected == "gpu-29/nvidia:3"
        await settle(pilot, lambda: app.frame is not None
                     and app.frame.card("gpu-29/nvidia:3") is not None, timeout=10)
        card = app.frame.card("gpu-29/nvidia:3")  # type: ignore[union-attr]
        assert card is not None and card.util_pct is not None
        assert abs(card.util_pct - 59.0) < 1.0
        assert any('host="gpu-29"' in q for q in api.asked)
        # The rows scrolled past are no longer asked for.
        last: Any = app.frame
        assert last.card("gpu-00/nvidia:0") is None
        await pilot.press("q")


class CutHistory(StoreAPI):
    def get(self, endpoint: str, params: Any) -> Any:
        if endpoint == "query_range":
            raise FleetError("answer cut: over the 64 MiB limit (narrow the view with --match)",
                             "parse")
        return super().get(endpoint, params)


async def test_a_cut_history_is_said_on_screen_with_the_summary_queries() -> None:
    api = CutHistory(fleet_store(small_fleet(time.time())))
    source = FleetSource("http://prom.test:9090", interval=0.05, api=api,  # type: ignore[arg-type]
                         view=FleetView())
    tracker = FleetTracker(lambda: source.verdicts, lambda: source.job_verdicts)
    tracker.view = source.view
    app = GpusatApp(source, tracker=tracker, interval=0.05, own_cpu=lambda: 0.1, view="card")
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot, lambda: "prometheus parse: start-up history: answer cut"
                     in screen_text(app), timeout=20)
        assert app.card_list.fold_id is not None  # the list came all the same
        await pilot.press("q")


async def test_scrolling_down_brings_the_next_page_of_groups_by_rank() -> None:
    """40 starving one-host jobs, each wasting less than the one before: the list opens on
    the first page of the worst (the server ranked them; no refresh asked for every problem
    card), and moving down past it brings the next page, in rank order."""
    hosts = [Host(f"gpu-{h:02d}", "starving", job_id=str(500 + h), util=5.0 + 2 * h,
                  cards=CARDS, cause="input") for h in range(40)]
    api = _api(hosts)
    app, source = fleet_app(api)
    page = GROUP_PAGE
    async with app.run_test(size=(140, 30)) as pilot:
        await settle(pilot, lambda: len(app.card_list.triage.groups) == page, timeout=20)
        frame = app.frame
        assert frame is not None and frame.fleet is not None
        assert len(frame.fleet.problems) == page * CARDS  # a page's cards, not all 160
        assert "160 starving in 40 jobs" in screen_text(app)  # the summary counts them all
        for _ in range(page * (CARDS + 1)):
            await pilot.press("down")
        await settle(pilot, lambda: len(app.card_list.triage.groups) > page, timeout=20)
        assert source.view is not None and source.view.request().groups == 2 * page
        assert any(q.startswith(f"topk({2 * page},") for q in api.asked)
        labels = [g.label for g in app.card_list.triage.groups]
        assert labels == [f"slurm {500 + h} alice" for h in range(2 * page)]
        await pilot.press("q")
