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

import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.collectors import all_specs
from gpusat_tui.probe.trainer_hooks import SINK
from tests.commands.test_check_probe import BUSY, check
from tests.fakes.tool import FakeBin
from tests.probe.test_probe_iterators import need
from tests.probe_helpers import JOBS, probe_docs, run_argv, start_job, stop_job
from tests.probe_helpers import wait_ready as ready

pytestmark = pytest.mark.frameworks

JOB = str(JOBS / "mindspore_sink_job.py")


def wait_for(probe_dir: Path, pid: int, ok: Any, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    doc: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        doc = probe_docs(probe_dir).get(pid)
        if doc is not None and ok(doc):
            return doc
        time.sleep(0.1)
    raise AssertionError(f"PID {pid} never published what was awaited: {doc}")


def test_sink_mode_on_the_cpu_backend_is_the_measured_host_loop(private_probe_dir: Path) -> None:
    need("mindspore")
    proc = start_job(private_probe_dir, argv=run_argv(
        sys.executable, JOB, "--mode", "cpu", "--sleep-ms", "300"))
    try:
        pid = ready(proc, timeout=240)
        first = wait_for(private_probe_dir, pid, lambda d: d["batches"] >= 3)
        last = wait_for(private_probe_dir, pid,
                        lambda d: d["batches"] >= first["batches"] + 10
                        and d["elapsed_s"] - first["elapsed_s"] >= 1.0)
    finally:
        rc, _, err = stop_job(proc, timeout=120)
    assert rc == 0, err[-3000:]
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
    proc = start_job(private_probe_dir, argv=run_argv(sys.executable, JOB, "--mode", "device"))
    try:
        pid = ready(proc, timeout=240)
        assert proc.stdout is not None
        said = proc.stdout.readline()  # what the real sink loop ran into
        doc = wait_for(private_probe_dir, pid, lambda d: d["data_wait_note"] is not None)
        spec = next(s for s in all_specs() if s.tool == "hy-smi")
        fake_bin.add_for_spec(spec, [[BUSY]])
        report = check(fake_bin, private_probe_dir)
    finally:
        rc, _, err = stop_job(proc, timeout=120)
    assert rc == 0, err[-3000:]
    assert said.startswith("NO DEVICE QUEUE"), said  # the sink loop ran to the device queue
    assert (doc["framework"], doc["data_wait_note"]) == ("mindspore", SINK)
    assert doc["data_wait_pct"] is None
    [card] = report["cards"]
    why = card["verdict"]["why"]
    assert any(line.startswith(SINK) for line in why), why
    assert not any(re.match(r"data wait \d", line) for line in why), why
    [trainer] = [p for p in report["processes"] if p["pid"] == pid]
    probe = trainer["probe"]
    assert probe["data_wait_note"] == SINK
    assert probe["data_wait_pct"]["mean"] is None and probe["data_wait_pct"]["max"] is None
    assert probe["run"] is None or probe["run"]["data_wait_pct"] is None
