"""Cost of ``gpusat-tui status`` with a running monitor (target: 10 ms per call).

Run by hand: ``.venv/bin/python benchmarks/bench_status.py [--calls 50]``.

A status file is written as a running dashboard leaves it (in a private ``GPUSAT_PROBE_DIR``),
a fake ``nvidia-smi`` that counts its calls is first on PATH, and then:

1. in process: reading the freshest file and rendering the tmux line (`read_fresh` +
   `render`), median over many calls: what ``status`` itself does;
2. the whole command, ``python -m gpusat_tui status``, as tmux runs it: wall time per call
   (median, 90th percentile) next to a bare ``python -c pass`` on the same interpreter, and
   the start-up imports ``-X importtime`` counts;
3. that the fake tool was never started.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpusat_tui.commands.status import render  # noqa: E402  (after the path insert)
from gpusat_tui.notify.status_file import JobStatus, StatusFileWriter, read_fresh  # noqa: E402
from tests.prom.hosts import fake_host  # noqa: E402


def wall(cmd: list[str], env: dict[str, str], calls: int) -> tuple[list[float], float]:
    """Wall ms of each call, and the mean CPU ms (user + system) of one, from rusage (the
    CPU figure holds on a busy machine, where wall time measures the queue)."""
    times = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(calls):
        started = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - started) * 1e3)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / calls * 1e3
    return times, cpu


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        probe_dir = Path(tmp) / "probes"
        probe_dir.mkdir(mode=0o700)
        os.environ["GPUSAT_PROBE_DIR"] = str(probe_dir)
        fakes = fake_host(Path(tmp) / "h", "saturated", cards=8)
        writer = StatusFileWriter("dashboard", 1.0, fresh_s=3600.0)
        writer.write(JobStatus("starving", "input-bound", since=time.time() - 120,
                               util_pct=45.0, data_wait_pct=41.0, cards=8, t=time.time()))

        n = 2000
        started = time.perf_counter()
        for _ in range(n):
            line = render(read_fresh(), "tmux")
        in_process_us = (time.perf_counter() - started) / n * 1e6
        print(f"in process (read_fresh + render): {in_process_us:.0f} µs per call -> {line}")

        env = fakes.env({"GPUSAT_PROBE_DIR": str(probe_dir)})
        status, status_cpu = wall([sys.executable, "-m", "gpusat_tui", "status"], env,
                                  args.calls)
        bare, bare_cpu = wall([sys.executable, "-c", "pass"], env, args.calls)
        print(f"python -c pass:            median {statistics.median(bare):.1f} ms, "
              f"p90 {pct(bare, 0.9):.1f} ms, CPU {bare_cpu:.1f} ms")
        print(f"gpusat-tui status:         median {statistics.median(status):.1f} ms, "
              f"p90 {pct(status, 0.9):.1f} ms, CPU {status_cpu:.1f} ms")
        print(f"status beyond interpreter: median "
              f"{statistics.median(status) - statistics.median(bare):.1f} ms")
        calls = fakes.tools["nvidia-smi"].calls()
        print(f"fake nvidia-smi started: {calls} times")
        writer.close()
        if calls:
            raise SystemExit("a vendor tool was started although fresh figures existed")


if __name__ == "__main__":
    main()
