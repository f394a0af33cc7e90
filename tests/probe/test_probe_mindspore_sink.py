"""MindSpore's data sink mode (``Model.train(..., dataset_sink_mode=True)``), as far as the
CPU build runs it (`probe_jobs/mindspore_sink_job.py`):

- on the CPU backend MindSpore itself falls back to the host loop, which the probe times: a
  measured wait, no sink sentence (the fallback is what runs, so a figure is the truth);
- with ``Model._train`` told the device target is Ascend, the real data-sink loop
  (``Model._train_dataset_sink_process``) starts until it needs the device queue: the probe
  says "data sink mode: the wait is on the device queue, not measured", never a number, in its
  file and in ``check --json``.

**Untested**: a real data-sink run on a device (Ascend or GPU), where the loop goes on past
the device queue's set-up; see docs/probe.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpusat_tui.probe.trainer_hooks import SINK
from tests.fakes.tool import FakeBin
from tests.probe.test_probe_iterators import need
from tests.probe_helpers import (
    JOBS,
    assert_doc_says_not_measured,
    assert_note_never_a_number,
    check_beside,
    probed_job,
    wait_for_published,
)

pytestmark = pytest.mark.frameworks

JOB = str(JOBS / "mindspore_sink_job.py")


def test_sink_mode_on_the_cpu_backend_is_the_measured_host_loop(private_probe_dir: Path) -> None:
    need("mindspore")
    with probed_job(private_probe_dir, sys.executable, JOB, "--mode", "cpu", "--sleep-ms", "300",
                    until=lambda d: d["batches"] >= 3) as job:
        first = job.first
        last = wait_for_published(private_probe_dir, job.pid,
                                  lambda d: d["batches"] >= first["batches"] + 10
                                  and d["elapsed_s"] - first["elapsed_s"] >= 1.0)
    assert last["framework"] == "mindspore"
    assert last["data_wait_note"] is None
    share = 100.0 * (last["data_wait_s"] - first["data_wait_s"]) / (
        last["elapsed_s"] - first["elapsed_s"])
    # The loop waits on a 300 ms generator around a step of a one-layer network (tens of ms).
    assert share >= 30.0, share
    assert last["data_wait_pct"] is not None


def test_sink_mode_as_on_a_device_says_not_measured_never_a_number(
    fake_bin: FakeBin, private_probe_dir: Path
) -> None:
    need("mindspore")
    with probed_job(private_probe_dir, sys.executable, JOB, "--mode", "device",
                    until=lambda d: d["data_wait_note"] is not None) as job:
        assert job.proc.stdout is not None
        said = job.proc.stdout.readline()  # what the real sink loop ran into
        report = check_beside(fake_bin, private_probe_dir)
    assert said.startswith("NO DEVICE QUEUE"), said  # the sink loop ran to the device queue
    assert job.first["framework"] == "mindspore"
    assert_doc_says_not_measured(job.first, SINK)
    assert_note_never_a_number(report, job, SINK)
