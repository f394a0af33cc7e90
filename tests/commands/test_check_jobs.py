"""``check --json`` and ``check``'s text with job attribution and energy: the real CLI against a
fake vendor tool that lists real trainer processes started with a Slurm-like environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from gpusat_tui.commands.check_schema import CheckReport
from tests.commands.test_check import SCENARIO, check_json, run_check, spec_named
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.tool import FakeBin, Step

SLURM = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "train\x1b[2Jllm", "SLURM_JOB_USER": "alice",
         "SLURM_STEP_ID": "0"}


JOB_FIELDS = ["key", "scheduler", "job_id", "step", "name", "user", "partition", "namespace",
              "pod_uid", "command", "source", "host", "pids", "card_ids", "energy", "verdict"]
ENERGY_FIELDS = ["joules", "kwh", "covered_s", "uncovered_s", "window_joules", "window_s",
                 "samples", "joules_per_sample", "samples_per_kwh", "note"]


@pytest.fixture
def trainers() -> Iterator[list[subprocess.Popen[bytes]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    started = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                         env={**env, **SLURM, "SLURM_PROCID": str(rank)})
        for rank in (0, 1)
    ]
    yield started
    for p in started:
        p.kill()
        p.wait()


def test_jobs_and_energy_in_check_json(
    fake_bin: FakeBin, trainers: list[subprocess.Popen[bytes]]
) -> None:
    listed = tuple(FakeProcess(p.pid, "python", i) for i, p in enumerate(trainers))
    fake_bin.add_for_spec(spec_named("hy-smi"),
                          [Step(cards=tuple(SCENARIO[0]), processes=listed)])
    report = check_json(fake_bin, "--duration", "2", "--interval", "0.5")
    [job] = report["jobs"]
    assert list(job) == JOB_FIELDS  # pinned: a rename must fail here
    assert (job["key"], job["scheduler"], job["job_id"], job["user"], job["step"]) == (
        "slurm:4242", "slurm", "4242", "alice", "0")
    assert job["name"] == "train\x1b[2Jllm"  # JSON keeps the exact string
    assert job["pids"] == [p.pid for p in trainers]
    assert job["card_ids"] == ["hygon:0", "hygon:1"]
    assert {p["pid"]: p["job"] for p in report["processes"]} == {
        p.pid: "slurm:4242" for p in trainers}
    # Constant power (100 W and 250 W every poll): energy is power x the integrated time.
    cards = {c["id"]: c["energy"] for c in report["cards"]}
    for card_id, watts in (("hygon:0", 100.0), ("hygon:1", 250.0)):
        energy = cards[card_id]
        assert list(energy) == ENERGY_FIELDS
        assert energy["covered_s"] > 0
        assert energy["joules"] == pytest.approx(watts * energy["covered_s"], abs=0.5)
        assert energy["kwh"] == pytest.approx(energy["joules"] / 3.6e6)
        assert energy["note"] is None
    assert job["energy"]["joules"] == pytest.approx(
        sum(c["joules"] for c in cards.values()), rel=0.35)  # the job starts a poll later
    assert job["energy"]["joules_per_sample"] is None  # no probe
    CheckReport.model_validate(report)


def test_check_text_names_the_job_cleaned_and_cards_without_power(
    fake_bin: FakeBin, trainers: list[subprocess.Popen[bytes]]
) -> None:
    no_power = [FakeCard(index=0, util_pct=50.0, power_w=None, power_cap_w=None)]
    listed = (FakeProcess(trainers[0].pid, "python", 0),)
    fake_bin.add_for_spec(spec_named("hy-smi"), [Step(cards=tuple(no_power), processes=listed)])
    result = run_check(fake_bin, "--duration", "1.5", "--interval", "0.5")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\x1b" not in out
    # The job name's escape sequence is gone, not passed to the terminal.
    assert 'slurm 4242 "trainllm" step 0 · alice on hygon:0: energy no power figures' in out
    assert "energy: no power figures" in out

