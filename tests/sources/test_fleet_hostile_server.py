"""The fleet view's server, misbehaving at the HTTP level on 127.0.0.1 (`tests.prom.hostile`):
it trickles its answer, hangs after its headers, closes in the middle of the body, trickles its
status line, or never stops sending. A request is bounded as a whole, and no request the source
gave up on holds ``check --prometheus`` (or the dashboard, tests/ui/test_fleet_exit.py) open."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from gpusat_tui.sources.fleet_view.fleet import FleetSource
from gpusat_tui.sources.fleet_view.prometheus_api import FleetError, PrometheusAPI
from tests.prom.hostile import MODES, HostileServer
from tests.prom.hosts import REPO

#: mode -> the kind of error a request gets.
KINDS = {"trickle": "timeout", "hang": "timeout", "close": "unreachable",
         "trickle-headers": "timeout", "endless": "parse"}
#: Long enough for the 64 MiB cap to end the endless answer first, however busy the host.
ENDLESS_DEADLINE_S = 60.0


@pytest.mark.parametrize("mode", MODES)
def test_one_request_is_bounded_whatever_the_server_does(mode: str) -> None:
    # The server would go on for a minute, a byte every 0.1 s (each read well within the
    # timeout): a request that waits on it fails the bound.
    # The endless answer is ended by the size cap, not the deadline: it gets a deadline long
    # enough for 64 MiB through loopback on a busy host (0.5 s was not, under load).
    deadline = ENDLESS_DEADLINE_S if mode == "endless" else 0.5
    with HostileServer(mode, gap_s=0.1, run_s=60) as url:
        api = PrometheusAPI(url, timeout=deadline)
        start = time.monotonic()
        with pytest.raises(FleetError) as info:
            api.get("query", {"query": "up"})
        took = time.monotonic() - start
    assert info.value.kind == KINDS[mode], info.value
    assert took < deadline + 15, f"{mode}: the request took {took:.1f} s against {deadline} s"


def test_what_each_failure_says() -> None:
    said = {}
    for mode in ("trickle", "close", "endless"):
        deadline = ENDLESS_DEADLINE_S if mode == "endless" else 0.5
        with HostileServer(mode, run_s=60) as url, pytest.raises(FleetError) as info:
            PrometheusAPI(url, timeout=deadline).get("query", {"query": "up"})
        said[mode] = str(info.value)
    assert said["trickle"] == "no whole answer within 0.5 s"
    assert said["close"].startswith("the server closed the connection in the middle of its "
                                    "answer (34 bytes came, 35 more were announced)")
    assert said["endless"] == "answer cut: over the 64 MiB limit (narrow the view with --match)"


async def test_an_abandoned_request_leaves_no_thread_that_holds_the_exit() -> None:
    with HostileServer("trickle", run_s=60) as url:
        source = FleetSource(url, timeout=0.5, history=False)
        frame = await source.poll_once()
        await source.aclose()
        # Non-daemon threads are joined at exit (asyncio.run's executor shutdown and the
        # interpreter's): none may be left that runs a request or parses its answer.
        held = [t.name for t in threading.enumerate()
                if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    assert [(e.tool, e.kind) for e in frame.errors] == [("prometheus", "timeout")]
    assert held == []


@pytest.mark.parametrize("mode", ["trickle", "hang", "close"])
def test_check_against_a_misbehaving_server_ends_on_time(mode: str) -> None:
    # The server misbehaves for two minutes; check --duration 1 must not wait for it.
    with HostileServer(mode, run_s=120) as url:
        start = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "gpusat_tui", "check", "--prometheus", url, "--duration", "1",
             "--interval", "0.5", "--json"],
            capture_output=True, text=True, timeout=90, cwd=REPO,
        )
        took = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [(e["tool"], e["kind"]) for e in report["errors"]] == [("prometheus", KINDS[mode])]
    # One poll's deadline (2 s) plus the interpreter's start, never the server's two minutes.
    assert took < 60, f"check took {took:.1f} s against a server that {mode}s"
    assert report["duration_s"] < 10
