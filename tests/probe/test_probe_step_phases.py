"""The stack sampler in a real training loop under ``gpusat-tui run``: the step's phases, the
user's hottest lines and the current stack, from the probe file.

Known truth by construction (`probe_jobs/phase_shares_job.py`): every phase of a 200 ms step
busy-waits a known time in the main thread. Shares are read as the probe's cumulative counts
between two of its files (any window of a monitor is read so), over at least `SAMPLES`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.collectors import all_specs
from tests.commands.test_check_probe import BUSY, check
from tests.fakes.tool import FakeBin
from tests.probe_helpers import JOBS, probe_docs, run_argv, start_job, stop_job, wait_ready

pytest.importorskip("torch", reason="torch not installed")

JOB = str(JOBS / "phase_shares_job.py")
#: ms of each phase in one step, and the step's shares in percent.
STEP_MS = {"data": 60.0, "forward": 40.0, "backward": 50.0, "optimizer": 20.0, "other": 30.0}
SHARES = {k: 100.0 * v / sum(STEP_MS.values()) for k, v in STEP_MS.items()}
#: Samples between the two files read (100 Hz in this test: some 10 s of a loaded machine).
SAMPLES = 1000
DEADLINE_S = 180.0


def window(probe_dir: Path, pid: int, samples: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first file with samples, and the first one ``samples`` later."""
    deadline = time.monotonic() + DEADLINE_S
    first: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        doc = probe_docs(probe_dir).get(pid)
        if doc is not None and doc.get("stack_samples", 0) > 0:
            if first is None:
                first = doc
            elif doc["stack_samples"] - first["stack_samples"] >= samples:
                return first, doc
        time.sleep(0.2)
    raise AssertionError(f"no {samples} stack samples in {DEADLINE_S:.0f} s: "
                         f"{probe_docs(probe_dir).get(pid)}")


def test_the_step_splits_into_its_known_phases(
    fake_bin: FakeBin, private_probe_dir: Path
) -> None:
    spec = next(s for s in all_specs() if s.tool == "hy-smi")
    fake_bin.add_for_spec(spec, [[BUSY]])
    args = [f"--{k}-ms={v:g}" for k, v in STEP_MS.items()]
    proc = start_job(private_probe_dir, argv=run_argv(sys.executable, JOB, *args),
                     extra={"GPUSAT_PROBE_STACK_HZ": "100"})
    try:
        pid = wait_ready(proc)
        first, last = window(private_probe_dir, pid, SAMPLES)
        report = check(fake_bin, private_probe_dir, duration=3.0)
    finally:
        rc, _, err = stop_job(proc)
    assert rc == 0, err
    total = last["stack_samples"] - first["stack_samples"]
    shares = {
        phase: 100.0 * (last["phase_samples"].get(phase, 0)
                        - first["phase_samples"].get(phase, 0)) / total
        for phase in SHARES
    }
    for phase, truth in SHARES.items():
        assert abs(shares[phase] - truth) <= 5.0, (phase, shares, SHARES)
    assert sum(shares.values()) >= 97.0, shares  # nearly nothing unclassified elsewhere
    # The hottest user line is the job's busy-wait; the forward's own line is among them.
    lines = {(Path(f).name, fn) for f, _, fn, _ in last["user_lines"]}
    assert last["user_lines"][0][2] == "spin", last["user_lines"]
    assert ("phase_shares_job.py", "Model.forward") in lines, lines
    # The current stack: outermost first, ending in the job's own code, never still for long.
    # (innermost: the job's own line, or a framework's frame under it mid-backward)
    assert last["stack"][0][1] == "<module>"
    assert any(frame[2] == "phase_shares_job.py" for frame in last["stack"]), last["stack"]
    assert last["stack_phase"] in SHARES and last["stack_still_s"] < 5.0
    assert len(last["stack_sig"]) == 8

    # check --json: the same fields over its run (a few seconds: shares only roughly)
    [trainer] = [p for p in report["processes"] if p["pid"] == pid]
    stack = trainer["probe"]["stack"]
    assert stack["samples"] > 0 and set(stack["phases_pct"]) >= set(SHARES), stack
    assert abs(sum(stack["phases_pct"].values()) - 100.0) < 1.0, stack
    assert stack["user_lines"][0]["function"] == "spin", stack
    assert stack["frames"][0].startswith("__main__.<module> (phase_shares_job.py:"), stack
    assert stack["phase"] in SHARES and len(stack["sig"]) == 8


@pytest.mark.frameworks
@pytest.mark.parametrize("stack", ["hf", "lightning"])
def test_hf_and_lightning_steps_read_as_forward_backward_and_optimizer(
    private_probe_dir: Path, tmp_path: Path, stack: str
) -> None:
    """Unmodified HF ``Trainer`` and Lightning ``Trainer.fit`` (`probe_jobs/stack_job.py`):
    each of forward, backward and optimizer is sampled (Lightning runs the forward and the
    backward in a closure inside the optimizer's step: read innermost first)."""
    pytest.importorskip("transformers" if stack == "hf" else "lightning")
    control = tmp_path / "control.json"
    control.write_text('{"sleep_ms": 0, "compute_ms": 40}')
    proc = start_job(private_probe_dir, argv=run_argv(
        sys.executable, str(JOBS / "stack_job.py"), "--stack", stack, "--control", str(control)),
        extra={"GPUSAT_PROBE_STACK_HZ": "100"})
    try:
        pid = wait_ready(proc, timeout=240)
        _, last = window(private_probe_dir, pid, 1500)  # each phase sampled on a busy machine
    finally:
        rc, _, err = stop_job(proc, timeout=120)
    assert rc == 0, err[-2000:]
    phases = last["phase_samples"]
    for phase in ("forward", "backward", "optimizer"):
        assert phases.get(phase, 0) > 0, (phase, phases)
    assert last["user_lines"], last


@pytest.mark.frameworks
def test_a_paddle_step_reads_as_data_compute_and_the_loop_s_own_code(
    private_probe_dir: Path
) -> None:
    """A real PaddlePaddle loop (`probe_jobs/paddle_job.py`: a dataset that sleeps, a real
    forward, backward and optimizer step on a tiny model, then the loop's own busy-wait): data
    from Paddle's timed iterator, compute (forward, backward, optimizer: ``paddle.nn``,
    ``Tensor.backward``, ``paddle.optimizer``; a tiny share here), the busy-wait as other."""
    pytest.importorskip("paddle")
    proc = start_job(private_probe_dir, argv=run_argv(
        sys.executable, str(JOBS / "paddle_job.py"), "--sleep-ms", "30", "--compute-ms", "30"),
        extra={"GPUSAT_PROBE_STACK_HZ": "100"})
    try:
        pid = wait_ready(proc, timeout=240)
        _, last = window(private_probe_dir, pid, 1000)
    finally:
        rc, _, err = stop_job(proc, timeout=120)
    assert rc == 0, err[-2000:]
    phases = last["phase_samples"]  # since the probe started
    compute = sum(phases.get(k, 0) for k in ("forward", "backward", "optimizer"))
    assert compute > 0 and phases.get("other", 0) > 0, phases
    # The sleep (30 ms a batch, in the loop's own process) is a large share of the step.
    assert phases["data"] / sum(phases.values()) > 0.2, phases
