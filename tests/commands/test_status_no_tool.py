"""``gpusat-tui status`` with no monitor running, no exporter and no vendor tool on PATH: its own
quick poll judges a probed job from the probe files alone (as ``check`` does), and caches the
answer for the next calls."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gpusat_tui.notify.status_file import CACHE_NAME
from tests.fakes.tool import FakeBin
from tests.probe_helpers import REPO, start_job, stop_job, wait_ready

STARVING_JOB = ("--sleep-ms", "60", "--compute-ms", "20")


def status(fakes: FakeBin, probe_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = fakes.env({"GPUSAT_PROBE_DIR": str(probe_dir)})
    env.pop("TMUX", None)
    return subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "status", "--format", "plain",
         "--exporter", "none", "--timeout", "30", *args],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=90)


def test_status_judges_a_probed_job_without_any_tool(
    fake_bin: FakeBin, private_probe_dir: Path,
) -> None:
    assert status(fake_bin, private_probe_dir).stdout.strip() == "GPU –"  # nothing to judge
    job = start_job(private_probe_dir, *STARVING_JOB)
    try:
        wait_ready(job)
        done = status(fake_bin, private_probe_dir)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("GPU STARVING"), done.stdout
        assert "% wait" in done.stdout, done.stdout
        # The answer is kept for the next calls (no second poll within the cache's life).
        assert (private_probe_dir / CACHE_NAME).is_file()
    finally:
        stop_job(job)
