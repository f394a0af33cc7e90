"""A cause stands on the job's own evidence: real processes beside the real CLI.

* A probed job that waits on its data and reads nothing, beside another process that keeps
  the disk busy (``dd oflag=direct`` in a loop): never ``io-bound``; the host's iowait is
  context in ``why``, not the cause. (Where the host's cores are all busy, the kernel counts
  no iowait at all and this case cannot be told from a quiet host: the pure tests in
  ``tests/analysis/test_verdict.py`` hold the figure fixed.)
* A card of a fake tool that lists no process, beside a card that lists a real trainer: its
  cause is ``unknown`` and ``why`` says which evidence is missing and how to get it.
"""

from __future__ import annotations

import json
import shutil
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

#: Another process's disk traffic: direct writes (no page cache), one after another.
_HOG = 'while :; do dd if=/dev/zero of="$1" bs=1M count=64 oflag=direct 2>/dev/null; done'


@pytest.fixture
def disk_hog(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    if shutil.which("dd") is None:
        pytest.skip("dd is not installed")
    folder = tmp_path / "hog"
    folder.mkdir()
    hog = subprocess.Popen(["sh", "-c", _HOG, "hog", str(folder / "blob")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    yield hog
    hog.kill()
    hog.wait()


@pytest.fixture
def waiting_job(private_probe_dir: Path) -> Iterator[int]:
    proc = start_job(private_probe_dir, "--sleep-ms", "60", "--compute-ms", "20")
    try:
        pid = wait_ready(proc)
        wait_for_doc(private_probe_dir, pid)
        yield pid
    finally:
        rc, _, err = stop_job(proc)
    assert rc == 0, err


def test_a_job_that_reads_nothing_beside_a_disk_hog_is_not_io_bound(
    fake_bin: FakeBin, private_probe_dir: Path, disk_hog: subprocess.Popen[bytes],
    waiting_job: int,
) -> None:
    env = fake_bin.env({"GPUSAT_PROBE_DIR": str(private_probe_dir)})
    done = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", "3",
         "--interval", "0.5"], env=env, capture_output=True, text=True, timeout=90, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert disk_hog.poll() is None  # the hog ran all along
    report: dict[str, Any] = json.loads(done.stdout)
    job = report["job"]
    assert job["kind"] == "starving", job
    assert job["cause"] == "input-bound", job  # the measured wait, on the job's own figures
    assert not any("NVMe" in a or "/dev/shm" in a for a in job["advice"]), job["advice"]
    iowait = [w for w in job["why"] if "iowait" in w]
    assert all("context only" in w for w in iowait if "host iowait" in w), job["why"]


def test_a_card_with_no_process_has_cause_unknown_and_says_what_is_missing(
    fake_bin: FakeBin, tmp_path: Path,
) -> None:
    trainer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        # nvidia:0 runs the real (quiet) trainer; nvidia:1 lists no process, reads 100 % at
        # a tenth of its power cap: the card alone looks like light kernels.
        cards = (fc(0, 30, 50000, 60, 40), fc(1, 100, 50000, 30, 40))
        listed = (FakeProcess(trainer.pid, "python", 0),)
        fake_bin.add_for_spec(spec_named("hy-smi"), [Step(cards=cards, processes=listed)])
        report = check_json(fake_bin, "--duration", "2.5", "--interval", "0.5")
    finally:
        trainer.kill()
        trainer.wait()
    verdicts = {c["id"]: c["verdict"] for c in report["cards"]}
    lone = verdicts["hygon:1"]
    assert (lone["kind"], lone["cause"]) == ("starving", "unknown"), lone
    why = " ".join(lone["why"])
    assert "cause unknown: processes were seen, but none is tied to this card" in why
    assert "--pid" in lone["advice"][0]
