"""Where the probe cannot measure the data wait it says so, never a figure (real jobs; the
framework ones behind the ``frameworks`` marker): Keras ``fit`` (the iterator runs inside a
compiled function) and a job that imports DALI or Ray Data (their iterators bypass every hook:
detected by the import alone, so a stand-in package of that name is enough to test it)."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import time
from pathlib import Path

import pytest

from gpusat_tui.collectors import all_specs
from gpusat_tui.probe.trainer_hooks import KERAS_COMPILED, UNOBSERVED
from tests.commands.test_check_probe import BUSY, check
from tests.fakes.tool import FakeBin
from tests.probe_helpers import JOBS, probe_docs, run_argv, start_job, stop_job, wait_for_doc
from tests.probe_helpers import wait_ready as ready

pytestmark = pytest.mark.frameworks


def wait_for_steps(probe_dir: Path, pid: int, timeout: float = 60.0) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = probe_docs(probe_dir).get(pid)
        if doc is not None and doc["steps"] >= 3 and doc["step_ms"] is not None:
            return doc
        time.sleep(0.1)
    raise AssertionError(f"no steps published by PID {pid}")


def test_keras_fit_says_data_wait_not_measured(
    fake_bin: FakeBin, private_probe_dir: Path
) -> None:
    for package in ("keras", "tensorflow"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} not installed (pip install '.[frameworks]')")
    proc = start_job(private_probe_dir, argv=run_argv(
        sys.executable, str(JOBS / "keras_job.py"), "--sleep-ms", "100"),
        extra={"KERAS_BACKEND": "tensorflow"})
    try:
        pid = ready(proc, timeout=240)
        first = wait_for_steps(private_probe_dir, pid)
        time.sleep(2.0)
        last = probe_docs(private_probe_dir)[pid]
        spec = next(s for s in all_specs() if s.tool == "hy-smi")
        fake_bin.add_for_spec(spec, [[BUSY]])
        report = check(fake_bin, private_probe_dir)
    finally:
        rc, _, err = stop_job(proc, timeout=120)
    assert rc == 0, err[-3000:]
    assert (last["framework"], last["step_source"]) == ("keras", "callback")
    assert last["data_wait_note"] == KERAS_COMPILED
    assert last["data_wait_pct"] is None and first["data_wait_pct"] is None
    per_step = 1000.0 * (last["elapsed_s"] - first["elapsed_s"]) / (
        last["steps"] - first["steps"])
    assert per_step >= 90.0  # each step waits on the 100 ms map inside the graph
    assert last["step_ms"] == pytest.approx(per_step, rel=0.5)
    [card] = report["cards"]
    why = card["verdict"]["why"]
    assert any(line.startswith(KERAS_COMPILED) for line in why), why
    assert not any(re.match(r"data wait \d", line) for line in why), why
    [trainer] = [p for p in report["processes"] if p["pid"] == pid]
    probe = trainer["probe"]
    assert probe["data_wait_note"] == KERAS_COMPILED
    assert probe["data_wait_pct"]["mean"] is None and probe["run"]["data_wait_pct"] is None


STAND_IN = """
import os, sys, time
import {module}  # the job imports the pipeline's package
import torch
opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(4))], lr=0.1)
n = 0
while True:
    opt.step(); time.sleep(0.05); n += 1
    if n == 3:
        print(f"READY {{os.getpid()}}", flush=True)
    if n == 60:
        break
"""


@pytest.mark.parametrize("module", ["nvidia.dali", "ray.data"])
def test_dali_or_ray_data_job_says_input_pipeline_not_observed(
    private_probe_dir: Path, tmp_path: Path, module: str
) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed")
    package = tmp_path / "stand_in" / Path(*module.split("."))
    package.mkdir(parents=True)
    for folder in [package, *package.parents]:
        if folder == tmp_path / "stand_in":
            break
        (folder / "__init__.py").write_text("")
    path = os.pathsep.join([str(tmp_path / "stand_in"), os.environ.get("PYTHONPATH", "")])
    proc = start_job(private_probe_dir, argv=run_argv(
        sys.executable, "-c", STAND_IN.format(module=module)), extra={"PYTHONPATH": path})
    try:
        pid = ready(proc, timeout=120)
        doc = wait_for_steps(private_probe_dir, pid)
    finally:
        stop_job(proc, timeout=60)
    assert doc["data_wait_note"] == UNOBSERVED and doc["data_wait_pct"] is None
    assert doc["batches"] == 0


def test_no_note_is_published_for_a_plain_torch_loop(private_probe_dir: Path) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed")
    proc = start_job(private_probe_dir, "--sleep-ms", "20", "--compute-ms", "10")
    try:
        pid = ready(proc)
        doc = wait_for_doc(private_probe_dir, pid)
    finally:
        stop_job(proc)
    assert doc["data_wait_note"] is None and doc["data_wait_pct"] is not None
