#!/usr/bin/env python3
"""Recording, replay and report on a long session: run by hand, prints figures.

1. Generates a 24 h x 8-card recording at 1 Hz in /tmp (86 400 frames, ~0.9 GB; kept between
   runs, ``--regen`` to rebuild) through the real `Recorder`: 8 DDP ranks with 4 DataLoader
   workers each, saturated most of the day with a starving stretch, a straggler and an idle
   last hour.
2. Recording cost: CPU time (``time.process_time``) per `Recorder.write` of such a frame.
3. Replay: time to the first frame (in a fresh process: from interpreter start, and from
   opening the file), a seek to the middle and a jump to the end, and the peak memory (maxrss)
   of replaying 3 000 frames of the 24 h file vs of a 3 000-frame file (memory must not depend on
   the file's length).
4. ``gpusat-tui report`` (JSON and text) on it: wall time and peak memory (maxrss of the
   process). Targets: first frame < 1 s, report < 3 s and < 150 MB.

Each step runs for every format (``--formats plain,gzip,zstd``): the same frames recorded as
``.jsonl``, ``.jsonl.gz`` and ``.jsonl.zst``.

Usage: python benchmarks/bench_recording.py [--hours 24] [--cards 8] [--regen]
       [--formats plain,gzip,zstd]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpusat_tui.model import (  # noqa: E402
    CardProcess,
    CardReading,
    Frame,
    HostSample,
    ProcessSample,
)
from gpusat_tui.sources.recording.recorder import Recorder, make_header  # noqa: E402

T0 = 1_767_225_600.0


def make_frame(k: int, cards: int, rng: random.Random, hours: float) -> Frame:
    hour = k / 3600.0
    idle = hour >= hours - 1
    starving = 3 <= hour < 5
    straggler = 10 <= hour < 12
    readings = []
    for i in range(cards):
        if idle:
            util, mem, power = 0.0, 0.5, rng.uniform(68, 75)
        elif starving:
            util = rng.uniform(92, 100) if k % 4 == 0 else rng.uniform(0, 8)
            mem, power = 60.0, rng.uniform(150, 250)
        elif straggler and i == cards - 1:
            util, mem, power = rng.uniform(25, 35), 75.0, rng.uniform(200, 260)
        else:
            util, mem, power = rng.uniform(92, 100), 75.0, rng.uniform(580, 640)
        readings.append(
            CardReading(
                vendor="nvidia", index=i, name="NVIDIA H100 80GB HBM3",
                uuid=f"GPU-{i:08x}-1111-2222-3333-444455556666",
                bus_id=f"00000000:{16 + i:02X}:00.0",
                util_pct=round(util), mem_used_mib=round(81559 * mem / 100), mem_total_mib=81559.0,
                power_w=round(power, 1), power_cap_w=700.0, temp_c=float(rng.randint(50, 70)),
                tool="nvml",
            )
        )
    procs: list[ProcessSample] = []
    if not idle:
        for i in range(cards):
            pid = 10_000 + 100 * i
            pegged = starving or (straggler and i == cards - 1)
            procs.append(ProcessSample(
                pid=pid, role="trainer", name="python", cpu_pct=round(rng.uniform(60, 90), 1),
                state="running", card_ids=[f"nvidia:{i}"], num_threads=40,
            ))
            for w in range(4):
                procs.append(ProcessSample(
                    pid=pid + 1 + w, role="dataloader_worker", name="pt_data_worker",
                    cpu_pct=round(rng.uniform(94, 100) if pegged else rng.uniform(30, 50), 1),
                    state="running", trainer_pid=pid, card_ids=[f"nvidia:{i}"],
                ))
    return Frame(
        t=T0 + k, seq=k, cards=readings,
        card_processes=[] if idle else [
            CardProcess(pid=10_000 + 100 * i, card_id=f"nvidia:{i}", name="python",
                        mem_used_mib=60000.0) for i in range(cards)
        ],
        processes=procs,
        host=HostSample(cpu_pct=round(rng.uniform(40, 60), 1), iowait_pct=0.5, cpu_count=64),
        monitor_cpu_pct=0.4,
    )


def generate(path: Path, hours: float, cards: int) -> None:
    rng = random.Random(1)
    n = int(hours * 3600)
    header = make_header({"nvml": "550.54.15"}, 1.0).model_copy(
        update={"host": "bench", "started_at": T0}
    )
    start = time.perf_counter()
    with Recorder(path, header, mode="overwrite") as rec:
        for k in range(n):
            rec.write(make_frame(k, cards, rng, hours))
    print(f"generated {path}: {n} frames, {path.stat().st_size / 2**20:.0f} MiB "
          f"in {time.perf_counter() - start:.0f} s")


SUFFIXES = {"plain": ".jsonl", "gzip": ".jsonl.gz", "zstd": ".jsonl.zst"}


def bench_write(cards: int, hours: float, fmt: str) -> None:
    rng = random.Random(2)
    frames = [make_frame(k, cards, rng, hours) for k in range(3000)]
    path = Path(f"/tmp/gpusat-bench-write{SUFFIXES[fmt]}")
    with Recorder(path, make_header({}, 1.0), mode="overwrite") as rec:
        cpu = time.process_time()
        wall = time.perf_counter()
        for frame in frames:
            rec.write(frame)
        cpu = time.process_time() - cpu
        wall = time.perf_counter() - wall
    size = path.stat().st_size / len(frames)
    path.unlink()
    print(f"recording {fmt}: {cpu / len(frames) * 1e6:.0f} µs CPU per {cards}-card frame "
          f"({wall / len(frames) * 1e6:.0f} µs wall, {size / 1024:.1f} KiB per line)")


#: Appended to every measured child: its own peak RSS. (ru_maxrss from wait4 would also count
#: the pages it shared with this parent between fork and exec: Linux carries the old mm's
#: high-water mark across exec. VmHWM belongs to the new program only.)
_HWM = (
    "\nimport sys\nsys.stderr.write(''.join(l for l in open('/proc/self/status')"
    " if l.startswith('VmHWM')))\n"
)


def run_measured(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS MiB of the program itself, and stdout of ``cmd``.

    ``cmd`` is ``[python, "-c", code, ...]`` or ``[python, "-m", "gpusat_tui", ...]``.
    """
    if cmd[1] == "-m":
        code = "import sys\nfrom gpusat_tui.cli import main\nrc = main(sys.argv[1:])\n"
        cmd = [cmd[0], "-c", code + _HWM + "sys.exit(rc)\n", *cmd[3:]]
    else:
        cmd = [cmd[0], "-c", cmd[2] + _HWM, *cmd[3:]]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=env, cwd=REPO)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed: {proc.stderr.decode()}")
    hwm = next(line for line in proc.stderr.decode().splitlines() if line.startswith("VmHWM"))
    return wall, int(hwm.split()[1]) / 1024, proc.stdout.decode()


_FIRST_FRAME = """
import asyncio, sys, time
t_start = time.perf_counter()
from gpusat_tui.sources.recording.replay import ReplaySource
async def main():
    t_open = time.perf_counter()
    src = ReplaySource(sys.argv[1], realtime=False, hold_at_end=False)
    gen = src.frames()
    await anext(gen)
    first = time.perf_counter()
    print(f"{first - t_open:.4f} {first - t_start:.4f}")
    t = time.perf_counter(); src.seek(src.duration / 2); f = await anext(gen)
    print(f"{time.perf_counter() - t:.4f} {f.seq}")
    t = time.perf_counter(); src.jump_end(); f = await anext(gen)
    print(f"{time.perf_counter() - t:.4f} {f.seq}")
    n = int(sys.argv[2])
    src.jump_start()
    for _ in range(n):
        await anext(gen)
    await src.aclose()
asyncio.run(main())
"""


def bench_replay(path: Path, small: Path) -> None:
    wall, rss, out = run_measured([sys.executable, "-c", _FIRST_FRAME, str(path), "3000"])
    (open_s, since_start), (seek_s, seek_seq), (end_s, end_seq) = (
        line.split() for line in out.strip().splitlines()
    )
    print(f"replay: first frame {float(open_s) * 1000:.1f} ms after opening the file, "
          f"{float(since_start) * 1000:.0f} ms after interpreter start "
          f"(process wall incl. startup {wall:.2f} s)")
    print(f"replay: seek to the middle {float(seek_s) * 1000:.1f} ms (frame {seek_seq}), "
          f"jump to end {float(end_s) * 1000:.1f} ms (frame {end_seq})")
    _, small_rss, _ = run_measured([sys.executable, "-c", _FIRST_FRAME, str(small), "2990"])
    print(f"replay memory, 3000 frames played: {rss:.0f} MiB on the 24 h file vs "
          f"{small_rss:.0f} MiB on a 3000-frame file")


def bench_report(path: Path) -> None:
    for label, extra in (("--json", ["--json"]), ("text", ["--width", "100"])):
        runs = [
            run_measured([sys.executable, "-m", "gpusat_tui", "report", str(path), *extra])
            for _ in range(3)
        ]
        best = min(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        print(f"report {label}: wall {best:.2f} s (best of 3; runs "
              f"{', '.join(f'{r[0]:.2f}' for r in runs)}), peak memory {rss:.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description="recording / replay / report benchmark")
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--cards", type=int, default=8)
    parser.add_argument("--regen", action="store_true")
    parser.add_argument("--formats", default="plain,gzip,zstd")
    args = parser.parse_args()
    for fmt in args.formats.split(","):
        suffix = SUFFIXES[fmt]
        path = Path(f"/tmp/gpusat-bench-{args.hours:g}h-{args.cards}c{suffix}")
        small = Path(f"/tmp/gpusat-bench-small-{args.cards}c{suffix}")
        if args.regen or not path.exists():
            generate(path, args.hours, args.cards)
        if args.regen or not small.exists():
            generate(small, 3000 / 3600, args.cards)
        print(f"== {fmt}: {path} ({path.stat().st_size / 2**20:.1f} MiB)")
        bench_write(args.cards, args.hours, fmt)
        bench_replay(path, small)
        bench_report(path)


if __name__ == "__main__":
    main()
