"""What polling costs: CPU of the monitor (and of the tools it runs) per poll, by hand.

Run: ``python benchmarks/bench_live.py [--polls 40] [--interval 0.25] [--enrich-every 5]
[--tools npu-smi] [--modes-only]``. Puts a fake of every
vendor tool (tests/fakes: ``#!/bin/sh`` scripts printing real-format tables, 8 cards each) in a
temporary folder and polls them one vendor at a time, then all at once, through `LiveSource`.
Prints wall time per poll and CPU per poll (this process + its reaped children, getrusage), and
the median ``Frame.monitor_cpu_pct`` the dashboard would show. The fake tools are shell scripts, so
the child CPU is an upper bound for fork+exec+print, not a real vendor tool's own cost.

Then call-per-poll against stream (``--modes``): each tool that has both (nvidia-smi ``-lms``,
npu-smi ``info watch``) is polled once through calls and once through its loop mode, and the
stream-only tools (tegrastats, neuron-monitor) through their stream. A stream child's CPU
reaches getrusage(RUSAGE_CHILDREN) when it is reaped, so each run is measured up to after
`LiveSource.aclose`: the child's whole life, start-up included, is in the figure. The fake
stream is a shell loop that runs ``sleep`` once per record: a fork per period, like the fake
calls, so the tool side of both modes is an upper bound; the monitor side (this process) is
what the mode itself changes.
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
from gpusat_tui.collectors.base import ToolSpec
from gpusat_tui.collectors.loops import loop_stream
from gpusat_tui.sources.options import DEFAULT_ENRICH_EVERY
from gpusat_tui.sources.polling.live import LiveSource
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import neuron_monitor as nm_fmt
from tests.fakes.formats import npu_smi_watch as watch_fmt
from tests.fakes.formats import tegrastats as tg_fmt
from tests.fakes.stream import Run, write_dispatch, write_fake_stream
from tests.fakes.tool import FakeBin


def cpu_now() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


async def bench(
    specs: list, path: str, polls: int, interval: float, enrich_every: int = DEFAULT_ENRICH_EVERY,
    streams: bool | None = False,
) -> tuple[float, float, float]:
    src = LiveSource(interval=interval, specs=specs, path=path, process_monitor=None,
                     enrich_every=enrich_every, streams=streams)
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


async def bench_mode(
    spec: ToolSpec, path: str, polls: int, interval: float, streams: bool
) -> tuple[float, float, int]:
    """(own CPU ms/poll, own + tools' CPU ms/poll, cards) through calls or the stream."""
    src = LiveSource(interval=interval, specs=[spec], path=path, process_monitor=None,
                     streams=streams)
    src.discover()
    frame = await src.poll_once()
    own0, all0 = time.process_time(), cpu_now()
    for _ in range(polls):
        t = time.monotonic()
        frame = await src.poll_once()
        await asyncio.sleep(max(0.0, interval - (time.monotonic() - t)))
    own = time.process_time() - own0
    await src.aclose()  # reaps the stream child: its CPU is in RUSAGE_CHILDREN from here
    total = cpu_now() - all0
    return own / polls * 1000, total / polls * 1000, len(frame.cards)


def write_modes_fakes(
    folder: Path, spec: ToolSpec, cards: list[FakeCard], period: float, streams: bool
) -> FakeBin:
    """A fake of ``spec`` for calls, or for its stream: nvidia-smi's fake plays ``-lms`` itself;
    npu-smi's watch is a dispatcher on the loop flag, so that its process-list calls still
    answer (it costs them one more exec).

    Its stream prints a record every ``period`` (the poll interval, as the live source asks
    the real tools to)."""
    fakes = FakeBin(folder)
    fakes.dir.mkdir()
    procs = [FakeProcess(pid=30000 + c.index, name="python", card_index=c.index) for c in cards]
    if spec.tool == "tegrastats":
        write_fake_stream(fakes.dir / "tegrastats",
                          [Run(records=[tg_fmt.render_line(cards[0])], period=period)])
        return fakes
    if spec.tool == "neuron-monitor":
        write_fake_stream(fakes.dir / "neuron-monitor",
                          [Run(records=[nm_fmt.render_report(cards, procs)], period=period)])
        return fakes
    if spec.tool == "nvidia-smi":
        # One script for both modes, as the real tool: ``<query> -lms N`` prints a sample
        # every N ms in one process (`tests.fakes.tool`), other argv are calls.
        fakes.add_for_spec(spec, [cards], loop_flag="-lms")
        return fakes
    if not streams:
        fakes.add_for_spec(spec, [cards])
        return fakes
    # npu-smi info watch: the header once, then rows (another renderer: a dispatcher).
    calls = fakes.add_for_spec(spec, [cards], name=f"{spec.names[0]}-calls")
    records = [watch_fmt.render_sample(cards), watch_fmt.render_sample(cards, header=False)]
    stream = write_fake_stream(fakes.dir / f"{spec.names[0]}-loop",
                               [Run(records=records, period=period)])
    write_dispatch(fakes.dir / spec.names[0], "watch", stream.path, calls.path)
    return fakes


def bench_modes(specs: list[ToolSpec], cards: list[FakeCard], polls: int, interval: float,
                tmp: str) -> None:
    print()
    print(f"{'tool':<15} {'mode':<8} {'own CPU ms/poll':>16} {'with tools ms/poll':>19}"
          f" {'cards':>6}")
    for spec in specs:
        stream = spec.stream or loop_stream(spec.tool)
        if stream is None:
            continue
        modes = [True] if spec.stream is not None else [False, True]
        for streams in modes:
            folder = Path(tmp) / f"modes-{spec.tool}-{streams}"
            fakes = write_modes_fakes(folder, spec, cards, interval, streams)
            own, total, n = asyncio.run(bench_mode(spec, fakes.path, polls, interval, streams))
            mode = "stream" if streams else "calls"
            print(f"{spec.tool:<15} {mode:<8} {own:16.2f} {total:19.2f} {n:6d}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--polls", type=int, default=40)
    parser.add_argument("--interval", type=float, default=0.25)
    parser.add_argument("--enrich-every", type=int, default=DEFAULT_ENRICH_EVERY,
                        help="per-card enrichment queries run on one poll in this many "
                             "(1: every poll, the cost before the throttle)")
    parser.add_argument("--tools", nargs="*", help="only these tools (e.g. npu-smi)")
    parser.add_argument("--modes-only", action="store_true",
                        help="only the call-per-poll vs stream comparison")
    args = parser.parse_args()
    cards = [FakeCard(index=i, util_pct=50.0 + i, mem_used_mib=1000.0 * (i + 1),
                      mem_total_mib=65536.0, power_w=100.0 + i, temp_c=40.0 + i)
             for i in range(8)]
    chosen = [
        s for s in all_specs() if s.reader is None and (not args.tools or s.tool in args.tools)
    ]
    specs = [s for s in chosen if s.stream is None]  # called every poll
    with tempfile.TemporaryDirectory() as tmp:
        if args.modes_only:
            bench_modes(chosen, cards, args.polls, args.interval, tmp)
            return
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
        bench_modes(chosen, cards, args.polls, args.interval, tmp)


if __name__ == "__main__":
    main()
