"""The fleet view in the app (Pilot), fed by `FleetSource` over a scripted Prometheus API: many
hosts, and a server that goes away. The real-server version is
tests/commands/test_prometheus_real.py."""

from __future__ import annotations

import json
from typing import Any

from gpusat_tui.analysis.fleet import FleetTracker
from gpusat_tui.sources.fleet_view.fleet import FleetSource
from gpusat_tui.sources.fleet_view.fleet_answers import FIGURES
from gpusat_tui.sources.fleet_view.prometheus_api import FleetError, decode_answer
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.fleet_state import MAX_CARDS
from tests.ui.conftest import screen_text, settle


def answer(hosts: int, cards: int, slow_host: int | None = None) -> Any:
    result = []
    for h in range(hosts):
        for i in range(cards):
            labels = {"host": f"gpu-node-{h:03d}", "vendor": "nvidia", "index": str(i),
                      "name": "NVIDIA H100 80GB HBM3"}
            util = "0.2" if h == slow_host else "0.95"
            for name in FIGURES:
                value = util if "utilization" in name else "0.5" if "ratio" in name else "300"
                if name == "gpusat_card_figures_age_seconds":
                    value = "0"
                result.append({"metric": {"__name__": name, **labels}, "value": [1.0, value]})
            kind = "starving" if h == slow_host else "saturated"
            result.append({"metric": {"__name__": "gpusat_card_verdict", **labels, "kind": kind},
                           "value": [1.0, "1"]})
    body = {"status": "success", "data": {"resultType": "vector", "result": result}}
    return decode_answer(json.dumps(body).encode())


class API:
    base_url = "http://prom.test:9090"

    def __init__(self, data: Any) -> None:
        self.data = data

    def get(self, endpoint: str, params: dict[str, str]) -> Any:
        if isinstance(self.data, BaseException):
            raise self.data
        if endpoint == "query_range":
            return {"resultType": "matrix", "result": []}
        return self.data


def fleet_app(api: API) -> GpusatApp:
    source = FleetSource("http://prom.test:9090", interval=0.05, api=api)  # type: ignore[arg-type]
    tracker = FleetTracker(lambda: source.verdicts, lambda: source.job_verdicts)
    return GpusatApp(source, tracker=tracker, interval=0.05, own_cpu=lambda: 0.1)


async def test_64_hosts_open_worst_first_with_the_healthy_folded() -> None:
    app = fleet_app(API(answer(64, 8, slow_host=17)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, lambda: len(app.card_list.ids) == 10
                     and app.assessment.job.kind == "imbalanced", timeout=20)
        assert app.assessment.job.why[0].startswith("lagging host: gpu-node-017 at 20 %")
        text = screen_text(app)
        assert "64 hosts · 512 cards: 8 starving, the rest saturated or idle" in text
        lines = app.card_list.lines
        assert lines[0].startswith("▾gpu-node-017 8/8")  # the problem host first
        assert lines[1].startswith("▸…de-017  0  20%")
        assert all("…de-017" in line for line in lines[1:9])
        assert lines[9].startswith(" +504 healthy")  # the other 63 hosts, one row
        assert app.selected == "gpu-node-017/nvidia:0"  # the worst card, without a key
        # Chart history for the rows on screen (and some scrolled past), not the fleet's 512.
        await settle(pilot, lambda: len(app.state.cards) <= MAX_CARDS < 512)
        assert "gpu-node-017/nvidia:0" in app.state.cards
        for _ in range(8):
            await pilot.press("down")
        await settle(pilot, lambda: app.selected == "gpu-node-000/nvidia:0")
        assert app.card_list.lines[9].startswith("▸+504 healthy")
        await pilot.press("enter")  # opens the healthy row
        await settle(pilot, lambda: len(app.card_list.ids) == 1 + 8 + 1 + 504)
        assert app.card_list.lines[9].startswith("▾504 healthy")
        assert not app.why_open  # Enter opened the row, not the reasons
        await pilot.press("down")
        await settle(pilot, lambda: app.selected == "gpu-node-000/nvidia:1")
        assert "gpu-node-000/nvidia:1" in screen_text(app)
        await pilot.press("q")


async def test_slash_filters_by_host_pattern_and_kind() -> None:
    app = fleet_app(API(answer(12, 2, slow_host=7)))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot, lambda: len(app.card_list.ids) == 4)
        await pilot.press("slash")
        await settle(pilot, lambda: app.screen.query("#fleet-filter").first() is not None)
        for key in "host:gpu-node-01*":
            await pilot.press(key)
        await pilot.press("enter")
        # Hosts 010 and 011, healthy, folded: their row only, no problem host.
        await settle(pilot, lambda: len(app.card_list.ids) == 1, timeout=10)
        assert app.card_list.lines[0][1:].startswith("+4 healthy"), app.card_list.lines
        assert "filter host:gpu-node-01*: 4 cards" in screen_text(app)
        await pilot.press("slash")
        await settle(pilot, lambda: app.screen.query("#fleet-filter").first() is not None)
        await pilot.press("ctrl+u")
        for key in "kind:starving":
            await pilot.press(key)
        await pilot.press("enter")
        await settle(pilot, lambda: len(app.card_list.ids) == 3)
        assert app.card_list.lines[0].startswith("▾gpu-node-007 2/2")
        assert app.selected == "gpu-node-007/nvidia:0"
        await pilot.press("q")


async def test_an_unreachable_server_is_said_on_the_status_line() -> None:
    api = API(answer(2, 2))
    app = fleet_app(api)
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and len(app.frame.cards) == 4)
        api.data = FleetError("cannot reach http://prom.test:9090: Connection refused",
                              "unreachable")
        await settle(pilot, lambda: "fleet prom.test:9090 · 2 hosts · server unreachable"
                     in screen_text(app))
        assert all(c.stale_s is not None for c in app.frame.cards)  # type: ignore[union-attr]
        await settle(pilot, lambda: app.assessment.cards["gpu-node-000/nvidia:0"].kind
                     == "unknown")
        api.data = answer(2, 2)
        await settle(pilot, lambda: "unreachable" not in screen_text(app))
        assert all(c.stale_s is None for c in app.frame.cards)  # type: ignore[union-attr]
        await pilot.press("q")


class CutHistoryAPI(API):
    def get(self, endpoint: str, params: dict[str, str]) -> Any:
        if endpoint == "query_range":
            raise FleetError("answer cut: over the 64 MiB limit (narrow the view with --match)",
                             "parse")
        return super().get(endpoint, params)


async def test_a_cut_history_is_said_on_the_status_line() -> None:
    app = fleet_app(CutHistoryAPI(answer(2, 2)))
    async with app.run_test(size=(200, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and len(app.frame.cards) == 4)
        await settle(pilot, lambda: "prometheus parse: start-up history: answer cut"
                     in screen_text(app))
        await pilot.press("q")
