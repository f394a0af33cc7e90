"""End to end with no vendor tool at all: a real probed job beside ``check`` and the dashboard.

PATH holds no tool (the `fake_bin` folder is empty); the job runs under ``gpusat-tui run`` and
waits on its DataLoader most of the time. ``check --json`` and the dashboard still show the
trainer and a verdict from the probe and the host; with no probe file either, ``check --json``
prints its object with the error in it and exits 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.analysis.verdicts.probe_only import NO_TOOL_LINE
from gpusat_tui.cli import parse as parse_command
from gpusat_tui.commands.dashboard import build_app
from gpusat_tui.commands.options import DashboardOptions
from tests.fakes.tool import FakeBin
from tests.probe_helpers import REPO, start_job, stop_job, wait_for_doc, wait_ready
from tests.ui.conftest import screen_text, settle


def check_json(fakes: FakeBin, probe_dir: Path) -> subprocess.CompletedProcess[str]:
    env = fakes.env({"GPUSAT_PROBE_DIR": str(probe_dir)})
    return subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", "3",
         "--interval", "0.5"], env=env, capture_output=True, text=True, timeout=90, cwd=REPO)


def test_no_tool_and_no_probe_still_prints_the_json_object(
    fake_bin: FakeBin, private_probe_dir: Path
) -> None:
    done = check_json(fake_bin, private_probe_dir)
    assert done.returncode == 1, done.stderr
    assert "No accelerator tool found" in done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    [error] = report["errors"]
    assert error["kind"] == "no-tool" and "No accelerator tool found" in error["message"]
    assert any(note.startswith("nvidia-smi:") for note in report["notes"]), report["notes"]
    assert report["cards"] == [] and report["samples"] == 0
    assert report["no_tool"] is True  # what errors[0] says, not its opposite


@pytest.fixture
def waiting_job(fake_bin: FakeBin, private_probe_dir: Path) -> Any:
    proc = start_job(private_probe_dir, "--sleep-ms", "60", "--compute-ms", "20")
    try:
        pid = wait_ready(proc)
        wait_for_doc(private_probe_dir, pid)
        yield pid
    finally:
        rc, _, err = stop_job(proc)
    assert rc == 0, err


def test_check_json_judges_the_probed_job_with_no_tool(
    fake_bin: FakeBin, private_probe_dir: Path, waiting_job: int
) -> None:
    done = check_json(fake_bin, private_probe_dir)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["no_tool"] is True and report["cards"] == []
    assert NO_TOOL_LINE in report["notes"]
    job = report["job"]
    assert (job["kind"], job["cause"]) == ("starving", "input-bound"), job
    assert job["why"][0] == NO_TOOL_LINE
    assert "measured in the trainer" in job["why"][1], job["why"]
    assert report["verdict"] == "starving"
    [trainer] = [p for p in report["processes"] if p["pid"] == waiting_job]
    assert trainer["role"] == "trainer" and trainer["probe"]["data_wait_pct"]["mean"] > 50
    assert trainer["probe"]["step_ms"]["mean"] is not None
    # Followed by the process monitor although it drives no known card (num_workers=0 here,
    # so no worker would have led to it).
    assert trainer["name"] != "(probe only)" and trainer["cpu_pct"]["mean"] is not None


async def test_dashboard_shows_the_probed_job_with_no_tool(
    fake_bin: FakeBin, private_probe_dir: Path, waiting_job: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", fake_bin.env()["PATH"])
    options = parse_command([])
    assert isinstance(options, DashboardOptions)
    app = build_app(options)
    assert app.no_tool is None and app.banner is not None
    assert NO_TOOL_LINE in app.banner.lower()
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: "STARVING (input-bound)" in screen_text(app), timeout=60.0)
        text = screen_text(app)
    assert "no accelerator tool: figures from the job and the host only" in text
    assert f"trainer pid {waiting_job} (torch) · wait" in text, text
    assert "measured in the trainer" in text
