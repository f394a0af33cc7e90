"""The probe inside real torch CPU training jobs, started by ``gpusat-tui run``.

Nothing is faked on the trainer side: the job is a real DataLoader loop with a real optimizer,
and what it waits on is known by construction (`probe_jobs/train_job.py`).
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import psutil
import pytest

from tests.probe_helpers import probe_docs, start_job, stop_job, wait_for_doc, wait_ready


def window_docs(probe_dir: Path, pid: int, seconds: float) -> tuple[dict, dict]:
    first = wait_for_doc(probe_dir, pid)
    time.sleep(seconds)
    return first, probe_docs(probe_dir)[pid]


def probe_share(first: dict, last: dict) -> float:
    """Data wait over the window from the cumulative figures (what the verdict uses)."""
    span = last["elapsed_s"] - first["elapsed_s"]
    assert span > 1.0
    return 100.0 * (last["data_wait_s"] - first["data_wait_s"]) / span


def waited_by(marks: list[tuple[float, float]], t: float) -> float:
    """Seconds the job spent in next(dataloader) up to wall time ``t``, by its own timings."""
    return sum(max(0.0, min(t, out) - enter) for enter, out in marks if enter < t)


# Batches of 120 ms, so that the few ms a loaded machine adds to a busy-wait (2 shared cores
# in CI) move the share by a point or two.
@pytest.mark.parametrize(("sleep_ms", "compute_ms"), [(30.0, 90.0), (90.0, 30.0)])
def test_data_wait_is_the_constructed_share(
    private_probe_dir: Path, tmp_path: Path, sleep_ms: float, compute_ms: float
) -> None:
    """Known truth twice over: S/(S+C) by construction, and the job's own timing of each
    next() call over exactly the probe's window (a loaded machine stretches the busy-wait, and
    then the construction drifts while the job's own account stays exact)."""
    marks_file = tmp_path / "marks.json"
    proc = start_job(private_probe_dir, "--sleep-ms", str(sleep_ms), "--compute-ms",
                     str(compute_ms), "--marks", str(marks_file))
    try:
        pid = wait_ready(proc)
        first, last = window_docs(private_probe_dir, pid, 2.0)
    finally:
        rc, _, err = stop_job(proc)
    assert rc == 0, err
    marks = json.loads(marks_file.read_text())
    share = probe_share(first, last)
    truth = 100.0 * (waited_by(marks, last["t"]) - waited_by(marks, first["t"])) / (
        last["t"] - first["t"])
    constructed = 100.0 * sleep_ms / (sleep_ms + compute_ms)
    assert abs(share - truth) <= 5.0, (share, truth)
    assert abs(share - constructed) <= 5.0 or abs(truth - constructed) > 5.0, (
        share, truth, constructed)  # off the construction only where the job itself was
    assert abs(truth - constructed) <= 20.0, (truth, constructed)
    # One 0.25 s interval holds two or three batches: a figure, too coarse to hold to 5 points.
    assert 0.0 <= last["data_wait_pct"] <= 100.0
    # The rest of the figures agree with the construction too.
    assert last["batch_size"] == 4 and last["step_source"] == "optimizer"
    period = sleep_ms + compute_ms
    per_step = 1000.0 * (last["elapsed_s"] - first["elapsed_s"]) / (last["steps"] - first["steps"])
    assert period * 0.9 <= per_step <= period * 1.5, (per_step, last)
    assert last["step_ms"] > 0  # over one 0.25 s interval: two or three steps, coarse
    assert last["samples_per_s"] == pytest.approx(4 * last["batches_per_s"])
    assert (last["rank"], last["world_size"], last["device_type"]) == (None, None, None)
    # Removed at exit.
    assert not list(private_probe_dir.iterdir())


def test_compute_bound_loop_reads_under_5_percent(private_probe_dir: Path) -> None:
    proc = start_job(private_probe_dir, "--compute-ms", "20")
    try:
        pid = wait_ready(proc)
        first, last = window_docs(private_probe_dir, pid, 1.5)
    finally:
        stop_job(proc)
    assert probe_share(first, last) < 5.0


@pytest.mark.parametrize("start", ["fork", "spawn", "forkserver"])
def test_only_the_trainer_publishes_never_its_workers(private_probe_dir: Path, start: str) -> None:
    # The dataset even steps an optimizer inside each worker: the probe there must stay quiet.
    proc = start_job(private_probe_dir, "--workers", "2", "--start", start, "--worker-steps",
                     "--sleep-ms", "4", "--compute-ms", "4")
    try:
        pid = wait_ready(proc, timeout=120)
        wait_for_doc(private_probe_dir, pid)
        time.sleep(0.8)  # several publication intervals, for any worker that would publish
        doc = probe_docs(private_probe_dir)[pid]
        trainer = psutil.Process(pid)
        workers = [c for c in trainer.children(recursive=True)
                   if "python" in c.name().lower() or c.name() == "pt_data_worker"]
        files = sorted(p.name for p in private_probe_dir.iterdir())
    finally:
        rc, _, err = stop_job(proc)
    assert len(workers) >= 2  # the workers were there to publish, and did not
    assert files == [f"probe-{pid}.json"]
    assert doc["batches"] > 0 and doc["steps"] > 0
    assert rc == 0, err
    assert "gpusat-tui probe" not in err


def test_files_are_private_and_the_folder_is_made_0700(tmp_path: Path) -> None:
    folder = tmp_path / "not-yet" / "probes"
    proc = start_job(folder, "--compute-ms", "5")
    try:
        pid = wait_ready(proc)
        wait_for_doc(folder, pid)
        dir_mode = stat.S_IMODE(folder.stat().st_mode)
        file_mode = stat.S_IMODE((folder / f"probe-{pid}.json").stat().st_mode)
    finally:
        stop_job(proc)
    assert (dir_mode, file_mode) == (0o700, 0o600)
    assert os.listdir(folder) == []


def test_a_failure_inside_the_probe_never_reaches_the_job(private_probe_dir: Path) -> None:
    """Forced: the batch's ``.shape`` raises inside the probe's batch-size code."""
    proc = start_job(private_probe_dir, "--bad-batch", "--compute-ms", "2", "--warm", "20")
    wait_ready(proc)
    time.sleep(0.3)
    rc, out, err = stop_job(proc)
    assert rc == 0 and "DONE" in out
    lines = [line for line in err.splitlines() if "gpusat-tui probe" in line]
    assert len(lines) == 1 and "disabled" in lines[0] and "no shape" in lines[0]
    assert not list(private_probe_dir.glob("probe-*"))  # disabled: nothing published
