"""The dashboard leaves no stream child behind: closing the pane, SIGTERM, or ``q``.

A stream child (tegrastats here) runs for the whole session, unlike a call; the real binary
runs in tmux against a fake that prints a record every 0.2 s forever.
"""

from __future__ import annotations

import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import leftover_processes
from tests.fakes.stream import Run, write_fake_stream
from tests.fakes.tool import FakeBin
from tests.ui.test_hangup import REPO, _app_pid

pytestmark = pytest.mark.tmux

LINE = ("RAM 2000/30697MB (lfb 1x2MB) CPU [5%@729] GR3D_FREQ 40%@[1300,1300] gpu@45.0C/45.0C "
        "VDD_GPU 9000mW/9000mW/9000mW")


@pytest.mark.parametrize("how", ["kill-session", "sigterm", "quit-key"])
def test_closing_the_dashboard_stops_the_stream_child(tmp_path: Path, how: str) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    fake = FakeBin(tmp_path / "bin")
    fake.dir.mkdir(parents=True)
    stream = write_fake_stream(fake.dir / "tegrastats", [Run(records=[LINE], period=0.2)])
    sock = str(tmp_path / "tmux.sock")
    tmux = ["tmux", "-S", sock]
    env = fake.env({"TERM": "xterm-256color"})
    command = shlex.join([sys.executable, "-m", "gpusat_tui", "--interval", "0.5"])
    subprocess.run([*tmux, "new-session", "-d", "-s", "gpusat", "-x", "100", "-y", "30",
                    "-c", str(REPO), command], env=env, check=True, timeout=10)
    try:
        app = psutil.Process(_app_pid(tmux, env))
        deadline = time.monotonic() + 30
        while stream.starts() == 0 or not leftover_processes(fake.dir):
            assert time.monotonic() < deadline, "the stream was never started"
            time.sleep(0.05)
        time.sleep(1.0)  # a few polls with the stream running
        if how == "kill-session":
            subprocess.run([*tmux, "kill-session", "-t", "gpusat"], env=env, timeout=10)
        elif how == "sigterm":
            app.send_signal(signal.SIGTERM)
        else:
            subprocess.run([*tmux, "send-keys", "-t", "gpusat", "q"], env=env, timeout=10)
        app.wait(timeout=15)
        assert leftover_processes(fake.dir, grace=3.0) == []
        assert stream.starts() == 1  # never restarted on the way out
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, capture_output=True)
