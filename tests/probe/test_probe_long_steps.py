"""Rates over long steps: with few batches in a span, only batches whose whole span lies in it
count (never the span's edge). A real loop of 1.5 s steps under ``gpusat-tui run``: every
samples/s the probe publishes is within 10 % of the loop's own rate, the first included."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.probe_helpers import JOBS, probe_docs, run_argv, start_job, stop_job, wait_ready

pytest.importorskip("torch", reason="torch not installed")

STEP_MS = 1500.0
DEADLINE_S = 120.0


def test_every_published_rate_of_a_slow_loop_is_its_own(private_probe_dir: Path) -> None:
    proc = start_job(private_probe_dir, argv=run_argv(
        sys.executable, str(JOBS / "phase_shares_job.py"), f"--other-ms={STEP_MS:g}",
        "--warm", "1"))
    rates: dict[int, float] = {}  # batches counted -> samples/s published with them
    try:
        pid = wait_ready(proc)
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and len(rates) < 4:
            doc = probe_docs(private_probe_dir).get(pid)
            if doc is not None and doc["samples_per_s"] is not None:
                rates.setdefault(doc["batches"], doc["samples_per_s"])
            time.sleep(0.05)
    finally:
        rc, _, err = stop_job(proc)
    assert rc == 0, err
    assert len(rates) >= 4, rates
    truth = 1000.0 / STEP_MS  # one sample a batch, one batch a step
    for batches, rate in rates.items():
        assert abs(rate - truth) <= 0.1 * truth, (batches, rates, truth)
