"""The probe inside a real PaddlePaddle 3.x training loop (``pip install '.[frameworks]'``).

Known truth by construction (`probe_jobs/paddle_job.py`, one DataLoader worker preparing
batches of S ms while the step takes C ms: the loop waits (S - C) / S) and by the job's own
timing of every next() call.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from gpusat_tui.collectors import all_specs
from gpusat_tui.host.monitor.processes import ProcessMonitor
from tests.commands.test_check_probe import BUSY, check
from tests.fakes.tool import FakeBin
from tests.probe.test_probe_jobs import probe_share, waited_by
from tests.probe_helpers import JOBS, probe_docs, run_argv, start_job, stop_job, wait_for_doc
from tests.probe_helpers import wait_ready as ready

pytestmark = pytest.mark.frameworks
pytest.importorskip("paddle", reason="paddlepaddle not installed (pip install '.[frameworks]')")

JOB = str(JOBS / "paddle_job.py")


def start(probe_dir: Path, *args: str):  # type: ignore[no-untyped-def]
    return start_job(probe_dir, argv=run_argv(sys.executable, JOB, *args))


@pytest.mark.parametrize(("sleep_ms", "compute_ms"), [(120.0, 90.0), (120.0, 30.0)])
def test_data_wait_is_the_constructed_share_and_the_worker_is_found(
    private_probe_dir: Path, tmp_path: Path, sleep_ms: float, compute_ms: float
) -> None:
    marks_file = tmp_path / "marks.json"
    proc = start(private_probe_dir, "--sleep-ms", str(sleep_ms), "--compute-ms",
                 str(compute_ms), "--workers", "1", "--marks", str(marks_file))
    try:
        pid = ready(proc, timeout=180)
        first = wait_for_doc(private_probe_dir, pid)
        monitor = ProcessMonitor(pids=[pid], rescan_s=0.0)
        try:
            monitor.sample()
            time.sleep(3.0)
            roles = {p.pid: p.role for p in monitor.sample().processes}
        finally:
            monitor.close()
        last = probe_docs(private_probe_dir)[pid]
    finally:
        rc, _, err = stop_job(proc, timeout=60)
    assert rc == 0, err[-2000:]
    assert list(roles.values()).count("dataloader_worker") == 1, roles
    assert (last["framework"], last["num_workers"], last["step_source"]) == (
        "paddle", 1, "optimizer")
    marks = json.loads(marks_file.read_text())
    share = probe_share(first, last)
    truth = 100.0 * (waited_by(marks, last["t"]) - waited_by(marks, first["t"])) / (
        last["t"] - first["t"])
    constructed = 100.0 * (sleep_ms - compute_ms) / sleep_ms
    assert abs(share - truth) <= 5.0, (share, truth)
    assert abs(share - constructed) <= 5.0 or abs(truth - constructed) > 5.0, (
        share, truth, constructed)
    per_step = 1000.0 * (last["elapsed_s"] - first["elapsed_s"]) / (
        last["steps"] - first["steps"])
    assert last["step_ms"] == pytest.approx(per_step, rel=0.5)


def test_compute_bound_paddle_loop_reads_under_5_percent(private_probe_dir: Path) -> None:
    proc = start(private_probe_dir, "--compute-ms", "30")
    try:
        pid = ready(proc, timeout=180)
        first = wait_for_doc(private_probe_dir, pid)
        time.sleep(2.0)
        last = probe_docs(private_probe_dir)[pid]
    finally:
        stop_job(proc, timeout=60)
    assert probe_share(first, last) < 5.0


def test_check_json_says_starving_with_the_measured_wait(
    fake_bin: FakeBin, private_probe_dir: Path
) -> None:
    spec = next(s for s in all_specs() if s.tool == "hy-smi")  # Hygon: a Paddle user's card
    fake_bin.add_for_spec(spec, [[BUSY]])
    proc = start(private_probe_dir, "--sleep-ms", "120", "--compute-ms", "30", "--workers", "1")
    try:
        pid = ready(proc, timeout=180)
        wait_for_doc(private_probe_dir, pid)
        report = check(fake_bin, private_probe_dir)
    finally:
        stop_job(proc, timeout=60)
    [card] = report["cards"]
    verdict = card["verdict"]
    assert (verdict["kind"], verdict["cause"]) == ("starving", "input-bound"), verdict
    assert "measured in the trainer" in verdict["why"][0]
    assert not any("num_workers > 0" in a for a in verdict["advice"]), verdict["advice"]
    [trainer] = [p for p in report["processes"] if p["pid"] == pid]
    assert trainer["probe"]["framework"] == "paddle"
