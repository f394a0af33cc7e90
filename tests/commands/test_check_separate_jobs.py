"""Cards are compared only inside one job: real DataLoader jobs beside ``check --json`` and a
fake tool that lists each job's trainer on its card.

Two separate jobs on two cards, one card busy and the other not: two job lines and no
``imbalanced``/straggler (comparing them would call one job the other's straggler, with
advice about collectives neither runs). A card that both jobs' trainers use says it is shared
and names both jobs.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.commands.test_check import check_json, fc, spec_named
from tests.fakes import FakeProcess
from tests.fakes.tool import FakeBin, Step

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
