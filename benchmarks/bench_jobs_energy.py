"""Cost of job attribution and of energy integration.

Run by hand: ``.venv/bin/python benchmarks/bench_jobs_energy.py``.

1. `read_job_context` on a real process started with a Slurm-like environment (three small
   ``/proc`` reads and the parse): done once per trainer, when it is first seen.
2. `EnergyMeter.add` per poll for 8 cards, one job with 8 ranks and their probes (the
   dashboard, ``check`` and the exporter each fold every poll into one).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpusat_tui.analysis.energy import EnergyMeter
from gpusat_tui.host.scheduler.job_reader import read_job_context
from gpusat_tui.model import CardReading, Frame, JobContext, ProbeSample


def bench_read(n: int = 2000) -> float:
    env = {**os.environ, "SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "train",
           "SLURM_STEP_ID": "0", "SLURM_JOB_USER": "alice"}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    try:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            ctx = read_job_context(proc.pid)
            times.append(time.perf_counter() - t0)
        assert ctx.job_id == "4242"
    finally:
        proc.kill()
        proc.wait()
    return statistics.median(times)


def bench_meter(polls: int = 3000) -> float:
    job = JobContext(scheduler="slurm", job_id="1", pids=list(range(100, 108)),
                     card_ids=[f"nvidia:{i}" for i in range(8)])
    frames = [
        Frame(t=1000.0 + k,
              cards=[CardReading(vendor="nvidia", index=i, power_w=300.0 + i + k % 7)
                     for i in range(8)],
              jobs=[job],
              probes=[ProbeSample(pid=100 + i, card_id=f"nvidia:{i}", samples_per_s=900.0)
                      for i in range(8)])
        for k in range(polls)
    ]
    meter = EnergyMeter()
    t0 = time.perf_counter()
    for frame in frames:
        meter.add(frame)
    return (time.perf_counter() - t0) / polls


if __name__ == "__main__":
    print(f"read_job_context: {bench_read() * 1e6:.0f} µs median per trainer (once)")
    print(f"EnergyMeter.add, 8 cards + 1 job of 8 probed ranks: {bench_meter() * 1e6:.0f} µs "
          "per poll")
