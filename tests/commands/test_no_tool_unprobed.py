"""With no vendor tool on PATH, a real job with no probe (`tests/jobs/hung_job.py`, given with
``--pid``: started as plain ``python``, not under ``gpusat-tui run``) is followed all the same:
``check --json``, the dashboard and ``status`` judge it from the host's figures and the stack
dumps py-spy reads from outside. Hung (its main thread blocked, a heartbeat thread writing a
file each second) it is ``stalled`` with the line it waits on once two dumps a stall time
apart agree; busy (its DataLoader worker computes while the main thread waits) it is not, nor
starving: its data wait is not measured, and the verdict says so. A stall needs the stall
time (20 s) after the first dump (10 s): those runs last ~45 s."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.analysis.outside_stacks.outside_words import PYSPY_EXTRA
from gpusat_tui.cli import parse as parse_command
from gpusat_tui.commands.dashboard import build_app
from gpusat_tui.commands.options import DashboardOptions
from gpusat_tui.notify.status_file import read_fresh
from gpusat_tui.ui.widgets.screens import NoToolScreen
from tests.commands.test_check_verdicts import run_check
from tests.fakes.tool import FakeBin
from tests.jobs.hung_job import WAIT_LINE
from tests.outside_helpers import hung_job, require_py_spy
from tests.probe_helpers import REPO
from tests.ui.conftest import screen_text, settle

#: Two dumps a stall time (20 s) apart, the first after 10 s quiet, and polls after them.
STALL_RUN_S = 45.0


def with_py_spy(fake_bin: FakeBin, pid: int) -> None:
    """py-spy on the check's PATH (its only tool there), or the test skips saying why."""
    os.symlink(require_py_spy(pid), Path(fake_bin.dir) / "py-spy")


def own_process(report: dict[str, Any], pid: int) -> dict[str, Any]:
    [proc] = [p for p in report["processes"] if p["pid"] == pid]
    return proc  # type: ignore[no-any-return]


def test_an_unprobed_hung_job_with_no_tool_is_stalled_where_it_waits(
    fake_bin: FakeBin, tmp_path: Path,
) -> None:
    log = tmp_path / "heartbeat.log"
    with hung_job(heartbeat_file=log) as job:
        with_py_spy(fake_bin, job.pid)
        report = run_check(fake_bin, "--duration", str(STALL_RUN_S), "--pid", str(job.pid))
        assert log.stat().st_size > 0  # the heartbeat wrote all along
    assert report["no_tool"] is True and report["cards"] == [], report
    verdict = report["job"]
    assert verdict["kind"] == "stalled" and report["verdict"] == "stalled", verdict
    line = next((w for w in verdict["why"]
                 if w.startswith(f"the trainer (PID {job.pid}) has waited ")), None)
    assert line is not None, verdict["why"]
    assert f"at hung_job.py:{WAIT_LINE} (sampled from outside by py-spy" in line, line
    dump = own_process(report, job.pid)["stack_dump"]
    assert dump["error"] is None and dump["still_since"] is not None, dump


def test_an_unprobed_job_whose_worker_computes_is_neither_stalled_nor_starving(
    fake_bin: FakeBin,
) -> None:
    """Its main thread waits on the same line for good, its CPU flat (two dumps agree), but
    its DataLoader worker spins: a slow input pipeline, perhaps, not a stall; and with no
    probe its data wait is not measured, so not starving either."""
    with hung_job(extra=("--workers", "1", "--workers-burn")) as job:
        with_py_spy(fake_bin, job.pid)
        report = run_check(fake_bin, "--duration", str(STALL_RUN_S), "--pid", str(job.pid))
    verdict = report["job"]
    assert report["no_tool"] is True, report
    assert verdict["kind"] == "unknown" and report["verdict"] == "unknown", verdict
    why = verdict["why"]
    assert any("data wait is not measured" in w for w in why), why
    assert any(f"was at hung_job.py:{WAIT_LINE} when sampled from outside by py-spy" in w
               for w in why), why
    # The two dumps did agree: the worker's CPU is what kept it from `stalled`.
    assert own_process(report, job.pid)["stack_dump"]["still_since"] is not None
    assert any("used CPU meanwhile" in w for w in why), why
    assert any("gpusat-tui run" in a for a in verdict["advice"]), verdict["advice"]


def test_without_py_spy_an_unprobed_job_names_the_extra(fake_bin: FakeBin) -> None:
    if shutil.which("py-spy", path=fake_bin.path):
        pytest.skip("py-spy is installed system-wide: it cannot be left off PATH here")
    with hung_job() as job:
        # Quiet for 10 s: a dump is wanted, and py-spy is missing.
        report = run_check(fake_bin, "--duration", "16", "--pid", str(job.pid))
    verdict = report["job"]
    assert verdict["kind"] == "unknown", verdict
    assert any(PYSPY_EXTRA in a for a in verdict["advice"]), verdict["advice"]
    assert own_process(report, job.pid)["stack_dump"]["error"] == "missing"


def test_status_judges_an_unprobed_job_without_any_tool(
    fake_bin: FakeBin, private_probe_dir: Path,
) -> None:
    env = fake_bin.env({"GPUSAT_PROBE_DIR": str(private_probe_dir)})
    env.pop("TMUX", None)
    with hung_job() as job:
        done = subprocess.run(
            [sys.executable, "-m", "gpusat_tui", "status", "--format", "plain", "--exporter",
             "none", "--timeout", "30", "--pid", str(job.pid)],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("GPU UNKNOWN"), done.stdout  # not "GPU –": no job


async def test_the_dashboard_follows_an_unprobed_job_to_its_stall(
    fake_bin: FakeBin, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    with hung_job(heartbeat_file=tmp_path / "heartbeat.log") as job:
        with_py_spy(fake_bin, job.pid)
        monkeypatch.setenv("PATH", fake_bin.path)
        options = parse_command(["--pid", str(job.pid), "--interval", "0.5"])
        assert isinstance(options, DashboardOptions)
        app = build_app(options)
        try:
            async with app.run_test(size=(160, 50)) as pilot:
                await settle(pilot, lambda: app.frame is not None, timeout=30.0)
                assert not isinstance(app.screen, NoToolScreen)
                await settle(pilot, lambda: "sampled from outside by py-spy" in screen_text(app),
                             timeout=60.0)
                await settle(pilot, lambda: "STALLED" in screen_text(app),
                             timeout=STALL_RUN_S + 30.0)
                text = screen_text(app)
                assert str(job.pid) in text, text
                status = read_fresh()
                assert status is not None and status.writer == "dashboard", status
                assert status.kind == "stalled", status
        finally:
            for close in app.closers:
                close()
