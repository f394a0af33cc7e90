"""Real jobs whose step is one compiled call, under ``gpusat-tui run``: ``check --json`` reads
their phases as constructed (`probe_jobs/compiled_job.py`: a data source that sleeps in the
loop's ``next()``, a compiled step whose compute dominates, nothing else in the loop).

A ``jax.jit`` step runs on pjit's C++ fast path (no Python frame) and JAX dispatches
asynchronously, so its compute is read as compiled (the call) plus sync (the ``float(loss)``
that waits for it); MindSpore's graph mode and ``mindspore.jit`` alike (``asnumpy`` waits).
TensorFlow runs a ``tf.function`` synchronously on the CPU, inside Python frames of its own;
Keras' ``fit`` is one compiled train function. None of them may read as the loop's own code
("other") or, for MindSpore's graph-mode cell, as a forward pass.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.fakes.tool import FakeBin
from tests.probe_helpers import JOBS, Doc, check_beside, probed_job

pytestmark = pytest.mark.frameworks

JOB = str(JOBS / "compiled_job.py")
#: Samples published before ``check`` starts (the compilation is over at READY).
WARM_SAMPLES = 100
#: Samples in ``check``'s window, at least (3 s at 100 Hz on an idle machine: some 300).
MIN_SAMPLES = 60

#: framework -> (the package it needs, the job's arguments).
JOBS_BY_FRAMEWORK = {
    "jax": ("grain", ["--size", "512", "--depth", "6"]),
    "tf": ("tensorflow", ["--size", "512", "--depth", "6"]),
    "keras": ("keras", ["--size", "512", "--depth", "6"]),
    "mindspore-graph": ("mindspore", ["--size", "512", "--depth", "6"]),
    "mindspore-jit": ("mindspore", ["--size", "512", "--depth", "6"]),
}


def sampled(doc: Doc) -> bool:
    return bool(doc.get("stack_samples", 0) >= WARM_SAMPLES)


def phases_of(fake_bin: FakeBin, probe_dir: Path, framework: str) -> dict[str, float]:
    """``check --json``'s phase shares (percent) of the job's trainer."""
    needs, args = JOBS_BY_FRAMEWORK[framework]
    # Whether installed, not imported here: the job imports it in its own process (MindSpore
    # cannot be imported beside torch's oneDNN in one process, as pytest's worker may hold).
    for package in (needs, "jax") if framework == "jax" else (needs,):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} not installed (pip install '.[frameworks]')")
    with probed_job(probe_dir, sys.executable, JOB, "--framework", framework, *args,
                    extra={"GPUSAT_PROBE_STACK_HZ": "100", "TF_CPP_MIN_LOG_LEVEL": "3"},
                    until=sampled) as job:
        report = check_beside(fake_bin, probe_dir)
    stack = job.trainer(report)["probe"]["stack"]
    assert stack is not None and stack["samples"] >= MIN_SAMPLES, stack
    return {k: float(v) for k, v in stack["phases_pct"].items()}


def share(phases: dict[str, float], *names: str) -> float:
    return sum(phases.get(n, 0.0) for n in names)


def test_a_jax_jit_loop_reads_as_its_data_and_its_compiled_step(
    fake_bin: FakeBin, private_probe_dir: Path
) -> None:
    """Grain data, a jitted value-and-grad step, ``float(loss)``: data plus compute (compiled
    and the sync that waits for it), next to nothing of the loop's own code."""
    phases = phases_of(fake_bin, private_probe_dir, "jax")
    assert share(phases, "compiled", "sync") >= 40.0, phases
    assert share(phases, "data") >= 5.0, phases
    assert share(phases, "other") <= 10.0, phases


@pytest.mark.parametrize("framework", ["mindspore-graph", "mindspore-jit"])
def test_a_mindspore_compiled_step_reads_as_compiled_not_forward_or_other(
    fake_bin: FakeBin, private_probe_dir: Path, framework: str
) -> None:
    """A graph-mode ``TrainOneStepCell`` (its ``Cell.__call__`` is ``mindspore.nn``, the
    graph runs under ``mindspore.graph``) and a ``mindspore.jit`` step, each followed by
    ``asnumpy``: compute, not a forward pass or the loop's code."""
    phases = phases_of(fake_bin, private_probe_dir, framework)
    assert share(phases, "compiled", "sync") >= 60.0, phases
    assert share(phases, "forward", "backward", "optimizer") <= 5.0, phases
    assert share(phases, "other") <= 20.0, phases


@pytest.mark.parametrize("framework", ["tf", "keras"])
def test_a_tf_function_step_and_keras_fit_read_as_one_compiled_step(
    fake_bin: FakeBin, private_probe_dir: Path, framework: str
) -> None:
    """A custom loop over ``tf.data`` calling a ``tf.function`` step, and ``model.fit``: the
    step is one compiled phase (never split into forward, backward and optimizer)."""
    phases = phases_of(fake_bin, private_probe_dir, framework)
    assert share(phases, "compiled") >= 60.0, phases
    assert share(phases, "forward", "backward", "optimizer") <= 5.0, phases
    assert share(phases, "other") <= 10.0, phases
