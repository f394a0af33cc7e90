"""What polling costs: CPU of the monitor (and of the tools it runs) per poll, by hand.

Run: ``python benchmarks/bench_live.py [--polls 40] [--interval 0.25] [--enrich-every 5]
[--tools npu-smi]``. Puts a fake of every
vendor tool (tests/fakes: ``#!/bin/sh`` scripts printing real-format tables, 8 cards each) in a
temporary folder and polls them one vendor at a time, then all at once, through `LiveSource`.
Prints wall time per poll and CPU per poll (this process + its reaped children, getrusage), and
the median ``Frame.monitor_cpu_pct`` the dashboard would show. The fake tools are shell scripts, so
the child CPU is an upper bound for fork+exec+print, not a real vendor tool's own cost.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpusat_tui.collectors import all_specs
from gpusat_tui.sources.live import DEFAULT_ENRICH_EVERY, LiveSource
from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin


def cpu_now() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


async def bench(
    specs: list, path: str, polls: int, interval: float, enrich_every: int = DEFAULT_ENRICH_EVERY
) -> tuple[float, float, float]:
    src = LiveSource(interval=interval, specs=specs, path=path, process_monitor=None,
                     enrich_every=enrich_every)
    src.discover()
    await src.poll_once()  # warm-up: fallbacks and refused flags settle
    cpu0 = cpu_now()
    shown: list[float] = []
    busy = 0.0
    for _ in range(polls):
        t = time.monotonic()
        frame = await src.poll_once()
        busy += time.monotonic() - t
        if frame.monitor_cpu_pct is not None:
            shown.append(frame.monitor_cpu_pct)
        await asyncio.sleep(max(0.0, interval - (time.monotonic() - t)))
    cpu = cpu_now() - cpu0
    await src.aclose()
    return busy / polls * 1000, cpu / polls * 1000, (statistics.median(shown) if shown else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--polls", type=int, default=40)
    parser.add_argument("--interval", type=float, default=0.25)
    parser.add_argument("--enrich-every", type=int, default=DEFAULT_ENRICH_EVERY,
                        help="per-card enrichment queries run on one poll in this many "
                             "(1: every poll, the cost before the throttle)")
    parser.add_argument("--tools", nargs="*", help="only these tools (e.g. npu-smi)")
    args = parser.parse_args()
    cards = [FakeCard(index=i, util_pct=50.0 + i, mem_used_mib=1000.0 * (i + 1),
                      mem_total_mib=65536.0, power_w=100.0 + i, temp_c=40.0 + i)
             for i in range(8)]
    specs = [
        s for s in all_specs() if s.reader is None and (not args.tools or s.tool in args.tools)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'tools':<14} {'poll wall ms':>13} {'CPU ms/poll':>12}"
              f" {'median monitor_cpu_pct':>23}")
        every: list = []
        for spec in specs:
            fakes = FakeBin(Path(tmp) / spec.tool)
            fakes.dir.mkdir()
            fakes.add_for_spec(spec, [cards])
            every.append((spec, fakes))
            wall_ms, cpu_ms, pct = asyncio.run(
                bench([spec], fakes.path, args.polls, args.interval, args.enrich_every)
            )
            print(f"{spec.tool:<14} {wall_ms:13.1f} {cpu_ms:12.1f} {pct:23.1f}")
        # All at once (one PATH holding every fake): the worst case of a mixed machine.
        all_dir = FakeBin(Path(tmp) / "all")
        all_dir.dir.mkdir()
        for spec, _ in every:
            all_dir.add_for_spec(spec, [cards])
        wall_ms, cpu_ms, pct = asyncio.run(
            bench(specs, all_dir.path, args.polls, args.interval, args.enrich_every)
        )
        print(f"{'all vendors':<14} {wall_ms:13.1f} {cpu_ms:12.1f} {pct:23.1f}")


if __name__ == "__main__":
    main()
