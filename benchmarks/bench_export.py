"""Cost of the exporter and of the fleet view.

Run by hand: ``.venv/bin/python benchmarks/bench_export.py [--duration 60]``.

1. ``gpusat-tui export`` at 1 Hz against a fake 8-card nvidia-smi: the exporter's CPU (its own
   ``gpusat_exporter_cpu_seconds_total``: process time plus the tools it ran, from rusage) over
   ``--duration`` seconds, scraped every 15 s as a Prometheus would; then the latency of
   ``--scrapes`` back-to-back scrapes of /metrics.
2. The fleet view's per-poll work for 64 hosts x 8 cards: the size of Prometheus' answer to the
   instant query, reading it into cards (`frame_from_answer`, in the request's thread), and
   `FleetTracker.push` (in the UI's worker); then the whole app under Pilot fed such a frame
   every second: key press to the selection moving, 30 presses, against 1 host x 8 cards.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client.parser import text_string_to_metric_families

from gpusat_tui.analysis.fleet import FleetTracker
from gpusat_tui.commands.metric_table import CARD_LABELS
from gpusat_tui.model import VERDICT_KINDS, Frame
from gpusat_tui.sources.fleet_view.fleet_answers import FIGURES, frame_from_answer
from gpusat_tui.sources.fleet_view.prometheus_api import decode_answer
from tests.prom.hosts import fake_host, start_exporter


def cpu_seconds(text: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "gpusat_exporter_cpu_seconds_total":
                return float(sample.value)
    raise LookupError("no gpusat_exporter_cpu_seconds_total")


def bench_exporter(duration: float, scrapes: int) -> None:
    root = Path(tempfile.mkdtemp())
    exporter = start_exporter(fake_host(root, "saturated", cards=8, steps=120), "bench",
                              interval=1.0)
    try:
        time.sleep(3.0)  # discovery and the first polls are not the steady state
        start_cpu, start = cpu_seconds(exporter.scrape()), time.monotonic()
        while time.monotonic() - start < duration:
            time.sleep(min(15.0, max(0.0, duration - (time.monotonic() - start))))
            exporter.scrape()
        end_cpu, end = cpu_seconds(exporter.scrape()), time.monotonic()
        share = 100.0 * (end_cpu - start_cpu) / (end - start)
        print(f"exporter at 1 Hz, 8 cards, scraped every 15 s: {share:.2f} % of one core "
              f"({1000 * (end_cpu - start_cpu) / (end - start):.1f} ms CPU/s, fake tool's own "
              f"CPU included) over {end - start:.0f} s")
        text = exporter.scrape()
        times = []
        for _ in range(scrapes):
            t0 = time.perf_counter()
            exporter.scrape()
            times.append(1000 * (time.perf_counter() - t0))
        times.sort()
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        print(f"scrape latency over {scrapes} scrapes: median {statistics.median(times):.2f} ms, "
              f"p99 {p99:.2f} ms, max {times[-1]:.2f} ms; body {len(text) / 1024:.1f} KiB")
    finally:
        exporter.stop()


def fleet_answer(hosts: int, cards: int) -> bytes:
    result = []
    for h in range(hosts):
        for i in range(cards):
            labels = {"host": f"node-{h:03d}", "vendor": "nvidia", "card": f"nvidia:{i}",
                      "index": str(i), "name": "NVIDIA H100 80GB HBM3",
                      "uuid": f"GPU-{h:04d}-{i:04d}-0000-0000", "instance": f"10.0.{h}.1:9478",
                      "job": "gpusat"}
            assert set(CARD_LABELS) <= set(labels)
            for name in FIGURES:
                result.append({"metric": {"__name__": name, **labels},
                               "value": [1.8e9, "0.93" if "ratio" in name else "123.4"]})
            result.append({"metric": {"__name__": "gpusat_card_verdict", **labels,
                                      "kind": VERDICT_KINDS[0]}, "value": [1.8e9, "1"]})
        result.append({"metric": {"__name__": "gpusat_job_verdict", "host": f"node-{h:03d}",
                                  "kind": VERDICT_KINDS[0]}, "value": [1.8e9, "1"]})
    return json.dumps({"status": "success",
                       "data": {"resultType": "vector", "result": result}}).encode()


def bench_fleet(rounds: int) -> None:
    body = fleet_answer(64, 8)
    reads, pushes = [], []
    answer = None
    for _ in range(rounds):
        t0 = time.perf_counter()
        answer = frame_from_answer(decode_answer(body))
        reads.append(1000 * (time.perf_counter() - t0))
    assert answer is not None and len(answer.cards) == 512
    verdicts = answer.verdicts
    tracker = FleetTracker(lambda: verdicts, lambda: {})
    frame = Frame(t=0.0, cards=list(answer.cards.values()))
    for k in range(rounds):
        t0 = time.perf_counter()
        tracker.push(frame.model_copy(update={"t": float(k)}))
        pushes.append(1000 * (time.perf_counter() - t0))
    print(f"fleet, 64 hosts x 8 cards: answer {len(body) / 1e6:.2f} MB; reading it "
          f"{statistics.median(reads):.0f} ms median (max {max(reads):.0f}); tracker push "
          f"{statistics.median(pushes):.1f} ms median (max {max(pushes):.1f})")


class _ScriptedAPI:
    base_url = "http://bench:9090"

    def __init__(self, data: object) -> None:
        self.data = data

    def get(self, endpoint: str, params: object) -> object:
        if endpoint == "query_range":
            return {"resultType": "matrix", "result": []}
        return self.data


async def bench_fleet_app(hosts: int, presses: int = 30) -> None:
    from gpusat_tui.sources.fleet_view.fleet import FleetSource
    from gpusat_tui.ui.app import GpusatApp

    source = FleetSource("http://bench:9090", interval=1.0,
                         api=_ScriptedAPI(decode_answer(fleet_answer(hosts, 8))))  # type: ignore[arg-type]
    tracker = FleetTracker(lambda: source.verdicts, lambda: source.job_verdicts)
    app = GpusatApp(source, tracker=tracker, interval=1.0, own_cpu=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        while app.frame is None or len(app.frame.cards) < hosts * 8:
            await pilot.pause(0.05)
        waits = []
        for _ in range(presses):
            before = app.selected
            t0 = time.perf_counter()
            await pilot.press("down")
            while app.selected == before:
                await pilot.pause(0.001)
            waits.append(1000 * (time.perf_counter() - t0))
            await pilot.pause(0.1)
        await pilot.press("q")
    print(f"fleet app, {hosts} x 8 cards, a frame per second: key to selection median "
          f"{statistics.median(waits):.0f} ms, max {max(waits):.0f} ms over {presses} presses")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--fleet-rounds", type=int, default=20)
    args = parser.parse_args()
    bench_fleet(args.fleet_rounds)
    import asyncio

    for hosts in (1, 64):  # 1 host: the same path's baseline (Pilot's own press cost included)
        asyncio.run(bench_fleet_app(hosts))
    bench_exporter(args.duration, args.scrapes)


if __name__ == "__main__":
    main()
