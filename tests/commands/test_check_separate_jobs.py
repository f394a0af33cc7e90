"""Cards are compared only inside one job: real DataLoader jobs beside ``check --json`` and a
fake tool that lists each job's trainer on its card.

Two separate jobs on two cards, one card busy and the other not: two job lines and no
``imbalanced``/straggler (comparing them would call one job the other's straggler, with
advice about collectives neither runs). A card that both jobs' trainers use says it is shared
and names both jobs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.commands.test_check import check_json, fc, spec_named
from tests.fakes import FakeProcess
from tests.fakes.tool import FakeBin, Step
from tests.probe_helpers import REPO, start_job, stop_job, wait_for_doc, wait_ready

JOB = Path(__file__).resolve().parents[1] / "jobs" / "dataloader_job.py"

pytest.importorskip("torch")


@pytest.fixture
def two_jobs() -> Iterator[list[int]]:
    """Two separate plain jobs (each its own trainer and one DataLoader worker), light on CPU."""
    procs = [
        subprocess.Popen(
            [sys.executable, str(JOB), "--work", "none", "--workers", "1", "--step-s", "0.05",
             "--max-s", "90"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for _ in range(2)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready", "a job died before its first batch"
        yield [p.pid for p in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _run(fake_bin: FakeBin, listed: tuple[FakeProcess, ...]) -> dict[str, Any]:
    # nvidia-like figures on hy-smi: card 0 busy near its cap, card 1 far below it, steadily.
    cards = (fc(0, 92, 60000, 260, 60), fc(1, 25, 60000, 90, 45))
    fake_bin.add_for_spec(spec_named("hy-smi"), [Step(cards=cards, processes=listed)])
    return check_json(fake_bin, "--duration", "4", "--interval", "0.5")


def test_two_jobs_on_two_cards_are_two_jobs_and_never_imbalanced(
    fake_bin: FakeBin, two_jobs: list[int]
) -> None:
    a, b = two_jobs
    report = _run(fake_bin, (FakeProcess(a, "python", 0), FakeProcess(b, "python", 1)))
    jobs = {j["key"]: j["card_ids"] for j in report["jobs"]}
    assert jobs == {f"plain:{a}": ["hygon:0"], f"plain:{b}": ["hygon:1"]}
    kinds = {c["id"]: c["verdict"]["kind"] for c in report["cards"]}
    assert "imbalanced" not in kinds.values(), kinds
    assert report["job"]["kind"] != "imbalanced", report["job"]
    text = " ".join(w for c in report["cards"] for w in c["verdict"]["why"])
    text += " ".join(report["job"]["why"])
    assert "straggler" not in text and "collective" not in text, text


def test_a_card_two_jobs_share_names_both(fake_bin: FakeBin, two_jobs: list[int]) -> None:
    a, b = two_jobs
    report = _run(fake_bin, (FakeProcess(a, "python", 0), FakeProcess(b, "python", 0),
                             FakeProcess(b, "python", 1)))
    verdicts = {c["id"]: c["verdict"] for c in report["cards"]}
    assert verdicts["hygon:0"]["why"][0].startswith(
        f"shared by 2 jobs: plain:{a}, plain:{b}"), verdicts["hygon:0"]["why"]
    assert not any(w.startswith("shared by") for w in verdicts["hygon:1"]["why"])
    # The shared card's figures are no one job's level: job b's cards are not compared.
    assert "imbalanced" not in {v["kind"] for v in verdicts.values()}


def test_each_job_has_its_own_verdict_line(fake_bin: FakeBin, two_jobs: list[int]) -> None:
    a, b = two_jobs
    report = _run(fake_bin, (FakeProcess(a, "python", 0), FakeProcess(b, "python", 1)))
    cards = {c["id"]: c["verdict"] for c in report["cards"]}
    own = {j["key"]: j["verdict"] for j in report["jobs"]}
    assert own[f"plain:{a}"] == cards["hygon:0"]  # one card: the job's verdict is its card's
    assert own[f"plain:{b}"] == cards["hygon:1"]
    assert own[f"plain:{a}"]["kind"] != own[f"plain:{b}"]["kind"]


def test_a_shared_card_quotes_each_jobs_own_measured_wait(
    fake_bin: FakeBin, private_probe_dir: Path
) -> None:
    """Two probed jobs on one card, one waiting on its data most of the time and one not: the
    card names both, each with its own wait, and neither job's wait is the other's."""
    waiting = start_job(private_probe_dir, "--sleep-ms", "60", "--compute-ms", "20")
    busy = start_job(private_probe_dir, "--sleep-ms", "0", "--compute-ms", "40")
    try:
        pids = [wait_ready(waiting), wait_ready(busy)]
        for pid in pids:
            wait_for_doc(private_probe_dir, pid)
        listed = tuple(FakeProcess(pid, "python", 0) for pid in pids)
        fake_bin.add_for_spec(spec_named("hy-smi"), [Step(cards=(fc(0, 40, 60000, 90, 45),),
                                                          processes=listed)])
        env = fake_bin.env({"GPUSAT_PROBE_DIR": str(private_probe_dir)})
        done = subprocess.run(
            [sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", "4",
             "--interval", "0.5"], env=env, capture_output=True, text=True, timeout=120,
            cwd=REPO)
    finally:
        for proc in (waiting, busy):
            stop_job(proc)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    first = report["cards"][0]["verdict"]["why"][0]
    found = dict(re.findall(r"plain:(\d+) \(its data wait (\d+) %, measured\)", first))
    assert set(found) == {str(pid) for pid in pids}, first
    assert int(found[str(pids[0])]) >= 50 > int(found[str(pids[1])]), first
