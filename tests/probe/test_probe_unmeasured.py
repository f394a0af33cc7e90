"""Where the probe cannot measure the data wait it says so, never a figure (real jobs; the
framework ones behind the ``frameworks`` marker): Keras ``fit`` (the iterator runs inside a
compiled function) and a job that imports DALI or Ray Data (their iterators bypass every hook:
detected by the import alone, so a stand-in package of that name is enough to test it)."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import pytest

from gpusat_tui.probe.trainer_hooks import KERAS_COMPILED, UNOBSERVED
from tests.fakes.tool import FakeBin
from tests.probe_helpers import (
    JOBS,
    TRAIN_JOB,
    assert_doc_says_not_measured,
    assert_note_never_a_number,
    check_beside,
    has_steps,
    probed_job,
)

pytestmark = pytest.mark.frameworks


def test_keras_fit_says_data_wait_not_measured(
    fake_bin: FakeBin, private_probe_dir: Path
) -> None:
    for package in ("keras", "tensorflow"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} not installed (pip install '.[frameworks]')")
    with probed_job(private_probe_dir, sys.executable, str(JOBS / "keras_job.py"),
                    "--sleep-ms", "100", extra={"KERAS_BACKEND": "tensorflow"},
                    until=has_steps) as job:
        time.sleep(2.0)
        first, last = job.first, job.latest()
        report = check_beside(fake_bin, private_probe_dir)
    assert (last["framework"], last["step_source"]) == ("keras", "callback")
    assert_doc_says_not_measured(last, KERAS_COMPILED)
    assert first["data_wait_pct"] is None
    per_step = 1000.0 * (last["elapsed_s"] - first["elapsed_s"]) / (
        last["steps"] - first["steps"])
    assert per_step >= 90.0  # each step waits on the 100 ms map inside the graph
    assert last["step_ms"] == pytest.approx(per_step, rel=0.5)
    assert_note_never_a_number(report, job, KERAS_COMPILED)
    assert job.trainer(report)["probe"]["run"] is not None  # the run's summary, without a figure


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
    with probed_job(private_probe_dir, sys.executable, "-c", STAND_IN.format(module=module),
                    extra={"PYTHONPATH": path}, until=has_steps) as job:
        doc = job.first
    assert_doc_says_not_measured(doc, UNOBSERVED)
    assert doc["batches"] == 0


def test_no_note_is_published_for_a_plain_torch_loop(private_probe_dir: Path) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed")
    with probed_job(private_probe_dir, sys.executable, str(TRAIN_JOB), "--sleep-ms", "20",
                    "--compute-ms", "10") as job:
        doc = job.first
    assert doc["data_wait_note"] is None and doc["data_wait_pct"] is not None
