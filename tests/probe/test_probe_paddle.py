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

from tests.fakes.tool import FakeBin
from tests.probe.test_probe_jobs import probe_share, waited_by
from tests.probe_helpers import JOBS, check_beside, probed_job, roles_over

pytestmark = pytest.mark.frameworks
pytest.importorskip("paddle", reason="paddlepaddle not installed (pip install '.[frameworks]')")

JOB = str(JOBS / "paddle_job.py")


@pytest.mark.parametrize(("sleep_ms", "compute_ms"), [(120.0, 90.0), (120.0, 30.0)])
def test_data_wait_is_the_constructed_share_and_the_worker_is_found(
    private_probe_dir: Path, tmp_path: Path, sleep_ms: float, compute_ms: float
) -> None:
    marks_file = tmp_path / "marks.json"
    with probed_job(private_probe_dir, sys.executable, JOB, "--sleep-ms", str(sleep_ms),
                    "--compute-ms", str(compute_ms), "--workers", "1",
                    "--marks", str(marks_file)) as job:
        roles = roles_over(job.pid, 3.0)
        first, last = job.first, job.latest()
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


def test_compute_bound_paddle_loop_reads_under_5_percent(
    private_probe_dir: Path, tmp_path: Path
) -> None:
    """Under 5 % as constructed; on a loaded machine, where fetching a batch in the loop
    itself takes longer, what the job timed of its own next() calls (within 3 points)."""
    marks_file = tmp_path / "marks.json"
    with probed_job(private_probe_dir, sys.executable, JOB, "--compute-ms", "30",
                    "--marks", str(marks_file)) as job:
        first = job.first
        last = job.latest()
        deadline = time.monotonic() + 120.0
        while last["elapsed_s"] < first["elapsed_s"] + 2.0:
            assert time.monotonic() < deadline, "the probe published nothing new for 120 s"
            time.sleep(0.1)
            last = job.latest()
    share = probe_share(first, last)
    marks = json.loads(marks_file.read_text())
    own = 100.0 * (waited_by(marks, last["t"]) - waited_by(marks, first["t"])) / (
        last["t"] - first["t"])
    assert abs(share - own) <= 3.0, (share, own)
    assert share < 5.0 or own >= 4.0, (share, own)


def test_check_json_says_starving_with_the_measured_wait(
    fake_bin: FakeBin, private_probe_dir: Path
) -> None:
    with probed_job(private_probe_dir, sys.executable, JOB, "--sleep-ms", "120",
                    "--compute-ms", "30", "--workers", "1") as job:
        report = check_beside(fake_bin, private_probe_dir)  # Hygon: a Paddle user's card
    [card] = report["cards"]
    verdict = card["verdict"]
    assert (verdict["kind"], verdict["cause"]) == ("starving", "input-bound"), verdict
    assert "measured in the trainer" in verdict["why"][0]
    assert not any("num_workers > 0" in a for a in verdict["advice"]), verdict["advice"]
    assert job.trainer(report)["probe"]["framework"] == "paddle"
