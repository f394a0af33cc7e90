"""Per-poll cost of the NVML reader, run by hand.

    python benchmarks/bench_nvml.py [--polls 300] [--gpus 8] [--mig 0] [--json]
    python benchmarks/bench_nvml.py --real [--polls 60] [--json]   # on a machine with a GPU

Without ``--real`` the reader runs against the scenario fake pynvml (tests/fakes/pynvml.py):
H200-like GPUs with GPM, throttle reasons and a process each (``--mig N``: N MIG instances on
every GPU). The fake answers in Python, so the figure is the reader's own cost plus a
Python-call per NVML function, not the driver's time: a real NVML call is an ioctl. ``--real``
uses the installed nvidia-ml-py and the machine's driver (what tools/device_check.sh runs).

Times each poll (``NvmlReader.__call__``) with ``time.perf_counter`` (wall) and
``time.process_time`` (CPU), after the first read (the static scan), and separately the polls
that also read the process list (one in ``enrich_every``). Prints the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from statistics import mean, median

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpusat_tui.collectors import nvml  # noqa: E402
from gpusat_tui.errors import ToolFailed, ToolMissing  # noqa: E402


def _fake_loader(gpus: int, mig: int):  # type: ignore[no-untyped-def]
    from tests.fakes.pynvml import FakeGpu, FakeMig, FakeNvml, FakeProc

    rates = {"graphics_util": 97.0, "sm_active_pct": 81.0, "sm_occupancy_pct": 40.0,
             "tensor_active_pct": 55.0, "dram_active_pct": 62.0, "fp16_active_pct": 4.0,
             "fp32_active_pct": 9.0, "fp64_active_pct": 0.0}
    fake = FakeNvml([
        FakeGpu(uuid=f"GPU-{i:04d}", bus_id=f"00000000:{0x18 + i:02X}:00.0", reasons=0x4,
                gpm=dict(rates), procs=[FakeProc(1000 + i)],
                mig=[FakeMig(m, m + 1, gpm=dict(rates)) for m in range(mig)] if mig else None)
        for i in range(gpus)
    ])
    module = fake.module()
    module.nvmlInit()
    return lambda: module, fake


def run(polls: int, gpus: int, mig: int, real: bool, enrich_every: int) -> dict[str, object]:
    fake = None
    if real:
        reader = nvml.NvmlReader(enrich_every=enrich_every)
    else:
        load, fake = _fake_loader(gpus, mig)
        reader = nvml.NvmlReader(enrich_every=enrich_every, load=load)
    t0, c0 = time.perf_counter(), time.process_time()
    first = reader()
    scan_ms = (time.perf_counter() - t0) * 1e3
    scan_cpu_ms = (time.process_time() - c0) * 1e3
    plain: list[float] = []
    plain_cpu: list[float] = []
    with_procs: list[float] = []
    for n in range(1, polls + 1):
        t, c = time.perf_counter(), time.process_time()
        reading = reader()
        wall, cpu = (time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3
        (with_procs if n % enrich_every == 0 else plain).append(wall)
        if n % enrich_every:
            plain_cpu.append(cpu)
    cards = reading.cards
    calls = None
    if fake is not None:
        calls = round(sum(fake.calls.values()) / (polls + 1), 1)
    return {
        "source": "real NVML" if real else "fake pynvml",
        "cards": len(cards),
        "gpm_cards": sum(1 for c in cards if "sm_active_pct" in c.extras),
        "first_read_ms": round(scan_ms, 3),
        "first_read_cpu_ms": round(scan_cpu_ms, 3),
        "poll_ms_median": round(median(plain), 3) if plain else None,
        "poll_ms_mean": round(mean(plain), 3) if plain else None,
        "poll_ms_max": round(max(plain), 3) if plain else None,
        "poll_cpu_ms_mean": round(mean(plain_cpu), 3) if plain_cpu else None,
        "poll_with_processes_ms_median": round(median(with_procs), 3) if with_procs else None,
        "nvml_calls_per_poll": calls,
        "notes": list(first.notes),
        "polls": polls,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=300)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--mig", type=int, default=0)
    parser.add_argument("--enrich-every", type=int, default=5)
    parser.add_argument("--real", action="store_true", help="the installed nvidia-ml-py")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    try:
        result = run(args.polls, args.gpus, args.mig, args.real, args.enrich_every)
    except (ToolMissing, ToolFailed) as exc:
        print(f"bench_nvml: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>32}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
