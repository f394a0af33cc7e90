#!/usr/bin/env python3
"""The fleet view at scale: the dashboard and ``check --prometheus`` against a synthetic
Prometheus HTTP API serving 100 or 1000 hosts x 8 cards.

Run by hand:  python benchmarks/bench_fleet_scale.py [--hosts 100 1000] [--seconds 60]
              [--no-check] [--no-dashboard]

The server (a child process, 127.0.0.1, port 0) answers ``/api/v1/query`` and
``/api/v1/query_range`` with series whose label sets are a real exporter's: each host's
are one scrape of `ExportState` through prometheus_client's exposition and parser (what
Prometheus stores), with the ``instance`` and ``job`` labels Prometheus adds. 10 % of the hosts
starve (one job each), every 50th host is in a 4-host job, 1 % of the hosts go down 10 s in
(their series are gone from the answers, as when Prometheus marks them stale). The dashboard's
queries are evaluated over these series by the PromQL subset (tests/prom/promql_subset.py,
checked against a real Prometheus by tests/commands/test_prometheus_real.py); check's full
instant query is served from precomputed text, and the range query serves its ``host=~``
hosts, or all. It is no Prometheus: its figures are the bytes and CPU of the client, not of
the server (the subset's evaluation runs in the server's process, on the same 2 cores).

Figures, per size:
1. ``check --prometheus --json --duration 5``: wall time, CPU (user+sys of the child), peak
   RSS, cards in the report, starving cards found.
2. The dashboard (``gpusat-tui --prometheus URL``, default interval 1 s) in a detached tmux
   pane of 160x50: the time to the first screen with the summary and a problem row (``▾``)
   on it; then over ``--seconds``: its CPU (all its threads, scheduler's count) as % of a core
   and per refresh, refreshes per second (the view's ``counts`` queries, or check's
   full ones, the server answered), bytes of every instant answer per refresh, RSS every 10 s.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import multiprocessing as mp
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpusat_tui.sources.fleet_view.view_queries import view_queries  # noqa: E402
from gpusat_tui.sources.fleet_view.view_ranks import group_queries, read_ranks  # noqa: E402
from gpusat_tui.sources.fleet_view.view_request import ViewRequest  # noqa: E402
from tests.prom.promql_subset import Store, Unsupported  # noqa: E402 (the repo on the path)
from tests.prom.synthetic_fleet import Host, host_samples, series_of  # noqa: E402

CARDS = 8
DOWN_AFTER_S = 10.0
HISTORY_NAMES = ("gpusat_card_utilization_ratio", "gpusat_card_memory_used_ratio",
                 "gpusat_card_power_watts", "gpusat_card_power_limit_watts")


# --- the synthetic fleet -------------------------------------------------------------------------


def fleet(hosts: int) -> list[tuple[Host, bool, list[tuple[str, dict[str, str], float]]]]:
    """(host, down later, samples) of every host."""
    made = []
    for h in range(hosts):
        starving = h % 10 == 7
        job_id = str(900000 + h // 4) if h % 50 < 4 else str(100000 + h)
        host = Host(f"gpu-{h:04d}", "starving" if starving else "saturated", job_id=job_id,
                    cards=CARDS, util=35.0 if starving else 97.0,
                    cause="input" if starving else None)
        made.append((host, h % 100 == 42, host_samples(host)))
    return made


_INSTANT = ({"gpusat_card_utilization_ratio", "gpusat_card_memory_used_bytes",
             "gpusat_card_memory_total_bytes", "gpusat_card_memory_used_ratio",
             "gpusat_card_power_watts", "gpusat_card_power_limit_watts",
             "gpusat_card_temperature_celsius", "gpusat_card_figures_age_seconds",
             "gpusat_exporter_last_poll_timestamp_seconds", "gpusat_job_info",
             "gpusat_card_job_info"})


def instant_parts(
    samples: list[tuple[str, dict[str, str], float]],
) -> list[tuple[str, float, float]]:
    """The series the instant query selects, as (JSON up to the value, value, how much it
    moves between answers: the utilisation only, so every refresh repaints something)."""
    parts = []
    for name, labels, value in samples:
        if name in _INSTANT or (name in ("gpusat_card_verdict", "gpusat_job_verdict")
                                and value == 1.0):
            metric = {"__name__": name, **labels}
        elif name == "gpusat_card_busy_seconds_total":
            metric = {**labels, "gpusat_fleet_figure": "busy_ratio"}
            value = 0.35 if value < 1.2 else 0.97
        else:
            continue
        moves = 1.0 if name == "gpusat_card_utilization_ratio" else 0.0
        parts.append((json.dumps({"metric": metric})[:-1] + ',"value":[', value, moves))
    return parts


def serve(hosts: int, port: Any, counters: Any, ready: Any) -> None:
    made = fleet(hosts)
    instant = [(host.name, down, instant_parts(samples)) for host, down, samples in made]
    history = {
        host.name: [(json.dumps({"metric": {"__name__": n, **labels}})[:-1] + ',"values":[', v)
                    for n, labels, v in samples if n in HISTORY_NAMES]
        for host, _, samples in made
    }
    started = time.time()
    store = Store()
    for host, down, samples in made:
        gone = replace(host, gone_at=started + DOWN_AFTER_S) if down else host
        store.add(series_of(gone, samples))
    gc.collect()
    gc.freeze()  # 150,000 series: no collection walks them again
    first = view_queries(ViewRequest())
    # Prometheus answers them in ms: evaluated here before and after the hosts go, not while
    # the dashboard waits (4-5 s of Python at 1000 hosts each time).
    for at in (started, started + DOWN_AFTER_S + 1):
        for query in first.values():
            store.answer(query, at, remember=True)
        ranked = read_ranks(store.answer(first["ranks"], at, remember=True))
        for query in group_queries(ranked, ViewRequest(), []).values():
            store.answer(query, at, remember=True)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            params = dict(urllib.parse.parse_qsl(url.query))
            now = time.time()
            gone = now - started > DOWN_AFTER_S
            live = [h for h in instant if not (gone and h[1])]
            if url.path.endswith("/query_range"):
                body = self.range_body(params, live)
            elif url.path.endswith("/query") and "label_replace" in params.get("query", ""):
                # check's full query: every card, as it was measured before the view's
                wobble = (now % 10) / 1000
                series = [f'{head}{now:.3f},"{value - moves * wobble:g}"]}}'
                          for _, _, parts in live for head, value, moves in parts]
                body = ('{"status":"success","data":{"resultType":"vector","result":['
                        + ",".join(series) + "]}}").encode()
                self.count(body, refresh=True)
            elif url.path.endswith("/query"):
                query = params.get("query", "")
                with lock:  # one evaluation at a time: its sub-expression cache is shared
                    store.wobble = (now % 10) / 1000
                    try:
                        # the rows' figures fresh (they move), the summary's remembered
                        body = store.answer_bytes(query, now,
                                                  remember=not query.startswith("{"))
                    except Unsupported:
                        body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
                self.count(body, refresh=query.startswith(
                    "count by (kind) (gpusat_card_verdict"))
            else:
                body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the client hung up
                self.wfile.write(body)

        def count(self, body: bytes, refresh: bool) -> None:
            with counters.get_lock():
                counters[0] += 1 if refresh else 0
                counters[1] += len(body)

        def range_body(self, params: dict[str, str], live: list[Any]) -> bytes:
            start, end = float(params["start"]), float(params["end"])
            step = float(params["step"])
            times = [start + k * step for k in range(int((end - start) / step) + 1)]
            match = re.search(r'host=~("(?:[^"\\]|\\.)*")', params.get("query", ""))
            wanted = re.compile(json.loads(match.group(1))) if match else None
            series = []
            for host, _, _ in live:
                if wanted is not None and not wanted.fullmatch(host):
                    continue
                for head, value in history[host]:
                    points = ",".join(f'[{t:.3f},"{value:g}"]' for t in times)
                    series.append(f"{head}{points}]}}")
            with counters.get_lock():
                counters[2] += 1
                counters[3] += sum(len(s) for s in series)
            return ('{"status":"success","data":{"resultType":"matrix","result":['
                    + ",".join(series) + "]}}").encode()

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    port.value = httpd.server_port
    ready.set()
    httpd.serve_forever()


class Server:
    def __init__(self, hosts: int) -> None:
        ctx = mp.get_context("fork")
        self.port = ctx.Value("i", 0)
        #: instant queries, their bytes, range queries, their bytes
        self.counters = ctx.Array("d", 4)
        ready = ctx.Event()
        self.proc = ctx.Process(target=serve, args=(hosts, self.port, self.counters, ready),
                                daemon=True)
        self.proc.start()
        if not ready.wait(600):
            raise RuntimeError("the synthetic server did not start")
        self.url = f"http://127.0.0.1:{self.port.value}"
        self.started = time.monotonic()

    def counts(self) -> tuple[int, float, int, float]:
        with self.counters.get_lock():
            a, b, c, d = self.counters[:]
        return int(a), b, int(c), d

    def close(self) -> None:
        self.proc.terminate()
        self.proc.join(10)


# --- measuring ------------------------------------------------------------------------------------


def run_ns(pid: int) -> int:
    """CPU of every thread of ``pid`` in ns, the scheduler's count (see bench_ui.run_ns)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


def bench_check(server: Server, hosts: int) -> None:
    # The server needs the down hosts gone for the figures to include them: wait for it.
    time.sleep(max(0.0, DOWN_AFTER_S + 1 - (time.monotonic() - server.started)))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--prometheus", server.url,
         "--duration", "5", "--json"], capture_output=True, text=True, cwd=REPO, timeout=600,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        report = json.loads(result.stdout)
        cards = len(report["cards"])
        starving = sum(1 for c in report["cards"] if c["verdict"]["kind"] == "starving")
        errors = [e["message"][:60] for e in report["errors"]][:2]
    except (ValueError, KeyError):
        cards, starving, errors = -1, -1, [result.stderr[-200:]]
    print(f"  check --json: {wall:5.1f} s wall, {cpu:5.2f} s CPU, peak RSS "
          f"{after.ru_maxrss / 1024:5.0f} MB (largest child so far), {cards} cards, "
          f"{starving} starving, errors {errors}", flush=True)


def tmux(sock: str, *args: str) -> str:
    return subprocess.run(["tmux", "-S", sock, *args], check=True, capture_output=True,
                          text=True, timeout=10).stdout


def bench_dashboard(server: Server, seconds: float, root: Path) -> None:
    sock = str(root / "fleet.sock")
    command = shlex.join([sys.executable, "-m", "gpusat_tui", "--prometheus", server.url])
    env_cmd = f"cd {shlex.quote(str(REPO))} && TERM=xterm-256color exec {command}"
    start = time.perf_counter()
    tmux(sock, "new-session", "-d", "-s", "b", "-x", "160", "-y", "50", env_cmd)
    try:
        pane_pid = int(tmux(sock, "display", "-p", "-t", "b", "#{pane_pid}").strip())
        proc = psutil.Process(pane_pid)
        first = None
        while time.perf_counter() - start < 120:
            screen = tmux(sock, "capture-pane", "-p", "-t", "b")
            if " hosts · " in screen and "▾" in screen:
                first = time.perf_counter() - start
                break
            time.sleep(0.05)
        if first is None:
            print("  dashboard: no first screen in 120 s:\n" + screen, flush=True)
            return
        summary = next((line for line in screen.splitlines() if " hosts · " in line), "")
        print(f"  dashboard first screen (summary and a problem row): {first:.1f} s", flush=True)
        print(f"    {summary.strip()[:150]}", flush=True)
        time.sleep(5)  # past start-up
        cpu0, n0, b0, _, _ = run_ns(proc.pid), *server.counts()
        t0 = time.perf_counter()
        rss = []
        while time.perf_counter() - t0 < seconds:
            time.sleep(min(10.0, seconds - (time.perf_counter() - t0)) or 0.1)
            rss.append(proc.memory_info().rss / 2**20)
        elapsed = time.perf_counter() - t0
        cpu1, n1, b1, _, _ = run_ns(proc.pid), *server.counts()
        polls = max(n1 - n0, 1)
        cpu_s = (cpu1 - cpu0) / 1e9
        print(f"  dashboard over {elapsed:.0f} s: {100 * cpu_s / elapsed:.1f} % of a core, "
              f"{1000 * cpu_s / polls:.0f} ms CPU a refresh, {polls / elapsed:.2f} refreshes/s, "
              f"{(b1 - b0) / polls / 2**20:.2f} MB a refresh", flush=True)
        print("    RSS every 10 s (MB): " + " ".join(f"{r:.0f}" for r in rss), flush=True)
        _, _, ranges, range_bytes = server.counts()
        print(f"    start-up history: {ranges} range queries, {range_bytes / 2**20:.2f} MB",
              flush=True)
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--no-dashboard", action="store_true")
    args = parser.parse_args()
    for hosts in args.hosts:
        print(f"{hosts} hosts x {CARDS} cards", flush=True)
        made = time.perf_counter()
        server = Server(hosts)
        print(f"  (synthetic server ready in {time.perf_counter() - made:.0f} s)", flush=True)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                if not args.no_dashboard:
                    bench_dashboard(server, args.seconds, Path(tmp))
                if not args.no_check:
                    bench_check(server, hosts)
        finally:
            server.close()


if __name__ == "__main__":
    threading.excepthook = lambda a: None  # a client hanging up mid-answer is no news
    main()
