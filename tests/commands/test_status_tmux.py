"""The badge in a real tmux status bar: a monitor in a pane of this tmux server is the one
shown, beside another live job's monitor started elsewhere. A client is attached through
``script`` (a pty) so that tmux draws its status line and runs the ``#()`` command."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.prom.hosts import REPO

pytestmark = pytest.mark.tmux

WRITER = """
import time
from gpusat_tui.notify.status_file import JobStatus, StatusFileWriter
w = StatusFileWriter("dashboard", 1.0, fresh_s=600.0)
w.write(JobStatus("saturated", util_pct=100.0, t=time.time(), job="plain:11",
                  job_name="mine.py"))
time.sleep(120)
"""


def test_the_bar_of_a_tmux_server_shows_the_job_of_its_own_pane(
    tmp_path: Path, private_probe_dir: Path,
) -> None:
    if shutil.which("tmux") is None or shutil.which("script") is None:
        pytest.skip("needs tmux and script (util-linux) for an attached client")
    now = time.time()
    theirs = private_probe_dir / "status-1.json"  # another job's live monitor, not in tmux
    theirs.write_text(json.dumps(dict(
        layout=1, writer="export", pid=os.getpid(), t=now, interval_s=1.0, fresh_s=600.0,
        kind="stalled", since=now - 240, util_pct=0.0, job="plain:22", job_name="theirs.py")))
    theirs.chmod(0o600)
    sock = str(tmp_path / "tmux.sock")
    out = tmp_path / "bar.txt"
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    env.update({"PYTHONPATH": str(REPO), "TERM": "xterm-256color"})
    status = (f"cd {shlex.quote(str(REPO))} && {shlex.quote(sys.executable)} -m gpusat_tui "
              f"status --format plain --exporter none --poll 0 > {shlex.quote(str(out))}")

    def tmux(*args: str) -> None:
        subprocess.run(["tmux", "-S", sock, "-f", "/dev/null", *args], env=env, check=True,
                       capture_output=True, timeout=10)

    tmux("new-session", "-d", "-s", "job", "-x", "100", "-y", "20",
         shlex.join([sys.executable, "-c", WRITER]))
    client = None
    try:
        tmux("set", "-g", "status-interval", "1")
        tmux("set", "-g", "status-right", f"#({status})")
        # Wait for the pane's monitor to leave its file before the bar is drawn.
        deadline = time.monotonic() + 60
        while len(list(private_probe_dir.glob("status-*.json"))) < 2:
            assert time.monotonic() < deadline, "the pane's monitor wrote no status file"
            time.sleep(0.1)
        client = subprocess.Popen(
            ["script", "-qc", shlex.join(["tmux", "-S", sock, "attach", "-t", "job"]),
             "/dev/null"], env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        line = ""
        while line != "GPU ▮▮▮▮ SATURATED":
            assert time.monotonic() < deadline, f"the bar showed {line!r}"
            time.sleep(0.2)
            line = out.read_text().strip() if out.exists() else ""
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], env=env, capture_output=True,
                       timeout=10)
        if client is not None:
            client.kill()
            client.wait()
