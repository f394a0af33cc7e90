"""The probe inside real Grain (+ JAX), tf.data and MindSpore loops (``pip install
'.[frameworks]'``): data wait is the time inside the loop's next(), step time the interval
between next() calls.

Known truth by construction (`probe_jobs/iter_job.py`: one worker preparing batches of S ms
while the step takes C ms: the loop waits (S - C) / S) and by the job's own timing of every
next() call.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.tool import FakeBin
from tests.probe.test_probe_jobs import probe_share, waited_by
from tests.probe_helpers import JOBS, check_beside, probed_job, roles_over

pytestmark = pytest.mark.frameworks

JOB = str(JOBS / "iter_job.py")

#: (--framework, the packages it needs, the framework name the probe publishes)
FRAMEWORKS = {
    "grain": (("grain", "jax"), "grain"),
    "grain-dataset": (("grain", "jax"), "grain"),
    "tf": (("tensorflow",), "tf.data"),
    "tf-numpy": (("tensorflow",), "tf.data"),
    "mindspore": (("mindspore",), "mindspore"),
    "mindspore-dict": (("mindspore",), "mindspore"),
}


def need(framework: str) -> str:
    packages, name = FRAMEWORKS[framework]
    for package in packages:
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} not installed (pip install '.[frameworks]')")
    return name


def measure(
    probe_dir: Path, framework: str, *args: str, seconds: float = 3.0, marks: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any], dict[int, str]]:
    """Run the job; its probe files ``seconds`` apart and its processes' roles over them."""
    extra = ("--marks", str(marks)) if marks is not None else ()
    with probed_job(probe_dir, sys.executable, JOB, "--framework", framework, *args,
                    *extra) as job:
        time.sleep(1.0)  # past the pipeline's start (worker start-up, a first jit)
        first = job.latest()
        roles = roles_over(job.pid, seconds)
        last = job.latest()
    return first, last, roles


#: Grain loads in worker processes; tf.data, and MindSpore with one worker, in threads inside
#: the trainer (MindSpore forks worker processes only for more than one: see below).
WORKER_PROCESSES = {"grain": 1, "grain-dataset": 1}


@pytest.mark.parametrize("framework", list(FRAMEWORKS))
@pytest.mark.parametrize(("sleep_ms", "compute_ms"), [(160.0, 120.0), (160.0, 40.0)])
def test_data_wait_is_the_constructed_share(
    private_probe_dir: Path, tmp_path: Path, framework: str, sleep_ms: float, compute_ms: float
) -> None:
    name = need(framework)
    marks_file = tmp_path / "marks.json"
    first, last, roles = measure(
        private_probe_dir, framework, "--sleep-ms", str(sleep_ms), "--compute-ms",
        str(compute_ms), "--workers", "1", marks=marks_file)
    assert (last["framework"], last["step_source"], last["data_wait_note"]) == (
        name, "batch", None)
    assert last["batch_size"] == 4
    workers = list(roles.values()).count("dataloader_worker")
    assert workers >= WORKER_PROCESSES.get(framework, 0), roles
    marks = json.loads(marks_file.read_text())
    share = probe_share(first, last)
    truth = 100.0 * (waited_by(marks, last["t"]) - waited_by(marks, first["t"])) / (
        last["t"] - first["t"])
    constructed = 100.0 * (sleep_ms - compute_ms) / sleep_ms
    assert abs(share - truth) <= 5.0, (share, truth)
    assert abs(share - constructed) <= 5.0 or abs(truth - constructed) > 5.0, (
        share, truth, constructed)
    # The step time over the probe's last interval is one of the job's own batch periods
    # (between the returns of consecutive next() calls, by its own clock) or their mean: on a
    # loaded machine single periods stretch, so it is checked against the window's range of
    # them, not against the window's mean.
    returns = [out for _, out in marks if first["t"] - 2.0 <= out <= last["t"]]
    periods = [1000.0 * (b - a) for a, b in itertools.pairwise(returns)]
    assert periods, marks[-5:]
    assert 0.9 * min(periods) <= last["step_ms"] <= 1.1 * max(periods), (
        last["step_ms"], min(periods), max(periods))


@pytest.mark.parametrize("framework", ["grain-dataset", "tf", "mindspore"])
def test_compute_bound_loop_reads_under_5_percent(private_probe_dir: Path, tmp_path: Path,
                                                  framework: str) -> None:
    """Under 5 % as constructed; where a loaded machine makes the job itself wait in next()
    (its pipeline gets no core), what the job timed of its own next() calls (within 5
    points): a compute-bound loop is never read as waiting beyond what it waited."""
    need(framework)
    marks_file = tmp_path / "marks.json"
    first, last, _ = measure(private_probe_dir, framework, "--compute-ms", "40", seconds=2.0,
                             marks=marks_file)
    share = probe_share(first, last)
    marks = json.loads(marks_file.read_text())
    own = 100.0 * (waited_by(marks, last["t"]) - waited_by(marks, first["t"])) / (
        last["t"] - first["t"])
    assert abs(share - own) <= 5.0, (share, own)
    assert share < 5.0 or own >= 4.0, (share, own)


@pytest.mark.parametrize("framework", ["mindspore", "grain"])
def test_worker_processes_are_found(private_probe_dir: Path, framework: str) -> None:
    need(framework)
    _, last, roles = measure(private_probe_dir, framework, "--sleep-ms", "160",
                             "--compute-ms", "40", "--workers", "2", seconds=1.0)
    assert list(roles.values()).count("dataloader_worker") >= 2, roles
    assert last["data_wait_pct"] is not None


@pytest.mark.parametrize("framework", ["tf-numpy", "mindspore"])
def test_check_json_says_starving_with_the_measured_wait(
    fake_bin: FakeBin, private_probe_dir: Path, framework: str
) -> None:
    name = need(framework)
    with probed_job(private_probe_dir, sys.executable, JOB, "--framework", framework,
                    "--sleep-ms", "160", "--compute-ms", "40", "--workers", "1") as job:
        report = check_beside(fake_bin, private_probe_dir)
    [card] = report["cards"]
    verdict = card["verdict"]
    trainer = job.trainer(report)
    assert (verdict["kind"], verdict["cause"]) == ("starving", "input-bound"), (
        verdict, trainer["probe"])
    assert "measured in the trainer" in verdict["why"][0]
    assert not any("num_workers > 0" in a for a in verdict["advice"]), verdict["advice"]
    if name in ("tf.data", "mindspore"):  # one worker: the pipeline's threads
        assert any(re.search(r"runs in (\d+ threads?|threads) inside the trainer", w)
                   for w in verdict["why"]), verdict
    assert trainer["probe"]["framework"] == name
