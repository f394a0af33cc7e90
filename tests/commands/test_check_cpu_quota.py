"""A real DataLoader job in a real cgroup limited to half a core, beside ``check --json`` and a
fake tool that lists its trainer on a card that starves: the quota is named as the cause, with
its figure, and the trainer's quota and throttling are in its process entry.

The cgroup is made here (cgroup v1 ``cpu.cfs_quota_us`` or v2 ``cpu.max``, whichever this
machine lets root create); where neither can be, the test is skipped saying why.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpusat_tui.host.monitor.cpu_quota import cgroup_mounts
from tests.commands.test_check import check_json, fc, spec_named
from tests.fakes import FakeProcess
from tests.fakes.tool import FakeBin, Step

JOB = Path(__file__).resolve().parents[1] / "jobs" / "dataloader_job.py"


def _make_v1(mount: str) -> Path:
    folder = Path(mount) / f"gpusat-test-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / "cpu.cfs_period_us").write_text("100000\n")
    (folder / "cpu.cfs_quota_us").write_text("50000\n")
    return folder


def _make_v2(mount: str) -> Path:
    root = Path(mount)
    if "cpu" not in (root / "cgroup.subtree_control").read_text().split():
        (root / "cgroup.subtree_control").write_text("+cpu\n")
    folder = root / f"gpusat-test-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / "cpu.max").write_text("50000 100000\n")
    return folder


@pytest.fixture
def half_core_cgroup() -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("creating a cgroup needs root")
    v2, v1 = cgroup_mounts(Path("/proc/self/mounts").read_text())
    folder: Path | None = None
    reasons = []
    for make, mount in [(_make_v1, v1), *((_make_v2, m) for m in v2)]:
        if mount is None:
            continue
        try:
            folder = make(mount)
            break
        except OSError as exc:
            reasons.append(f"{mount}: {exc}")
    if folder is None:
        pytest.skip("no cgroup with a CPU quota can be made here: "
                    + ("; ".join(reasons) or "neither cgroup v1 cpu nor v2 is mounted"))
    yield folder
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            folder.rmdir()
            return
        time.sleep(0.1)


def test_a_job_held_back_by_its_quota_is_named_with_the_quota(
    fake_bin: FakeBin, half_core_cgroup: Path
) -> None:
    job = subprocess.Popen(
        [sys.executable, str(JOB), "--work", "burn", "--workers", "2", "--item-ms", "20",
         "--max-s", "90"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        # Moved before it forks its workers (it imports torch first): they inherit the cgroup.
        (half_core_cgroup / "cgroup.procs").write_text(f"{job.pid}\n")
        assert job.stdout is not None
        assert job.stdout.readline().strip() == "ready", "the job died before its first batch"
        listed = (FakeProcess(job.pid, "python", 0),)
        steps = [Step(cards=(fc(0, u, 60000, 70, 40),), processes=listed)
                 for u in (95, 3, 2, 1, 96, 0, 4, 2) * 4]
        fake_bin.add_for_spec(spec_named("hy-smi"), steps)
        report = check_json(fake_bin, "--duration", "5", "--interval", "0.5")
    finally:
        job.kill()
        job.wait()
        if job.stdout is not None:
            job.stdout.close()
    [trainer] = [p for p in report["processes"] if p["pid"] == job.pid]
    assert trainer["cpu_quota_cores"]["last"] == 0.5, trainer
    assert (trainer["cpu_throttled_pct"]["max"] or 0) >= 20, trainer
    verdict = report["cards"][0]["verdict"]
    # The rule reads the window's median of the job's most throttled process. Beside other
    # processes burning the host's cores, the job may get less than its quota and the kernel
    # throttle it in few periods: then the host, not the quota, holds it back, and the
    # verdict may say so. Where the trainer was throttled in >= 20 % of its periods
    # at every poll (the trainer's minimum), the median is too, and the quota must be named.
    held = trainer["cpu_throttled_pct"]["min"] or 0.0  # the rule takes the most throttled
    if held < 20:
        assert (verdict["kind"], verdict["cause"]) in {
            ("starving", "cpu-quota"), ("starving", "input-bound")}, (held, verdict)
        return
    assert (verdict["kind"], verdict["cause"]) == ("starving", "cpu-quota"), (held, verdict)
    line = next(w for w in verdict["why"] if "CPU quota" in w)
    assert "half a core" in line, line
    assert "--cpus-per-task" in " ".join(verdict["advice"])
    assert not any("more workers" in a.lower() for a in verdict["advice"])
