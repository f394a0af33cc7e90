"""Closing the tmux pane (SIGHUP) or ``kill`` (SIGTERM) ends the dashboard like ``q`` does.

The live source runs each tool in its own session; dying on the spot would leave a hung tool
running for good. These run the real binary in tmux against a fake tool that hangs.
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
from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin, Step

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.tmux


def _app_pid(tmux: list[str], env: dict[str, str]) -> int:
    out = subprocess.run([*tmux, "list-panes", "-t", "gpusat", "-F", "#{pane_pid}"], env=env,
                         capture_output=True, text=True, timeout=10, check=True).stdout
    return int(out.split()[0])


@pytest.mark.parametrize("how", ["kill-session", "sigterm"])
def test_hangup_or_kill_leaves_no_hung_tool_behind(tmp_path: Path, how: str) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    from gpusat_tui.collectors.hy_smi import SPECS

    fake = FakeBin(tmp_path / "bin")
    fake.add_for_spec(SPECS[0], [Step(cards=(FakeCard(0),), mode="hang")])
    sock = str(tmp_path / "tmux.sock")
    tmux = ["tmux", "-S", sock]
    env = fake.env({"TERM": "xterm-256color"})
    # Every call hangs; a hung call is killed after its timeout (the interval): make that
    # long, so the signal surely lands while the tool hangs.
    command = shlex.join([sys.executable, "-m", "gpusat_tui", "--interval", "30"])
    subprocess.run([*tmux, "new-session", "-d", "-s", "gpusat", "-x", "100", "-y", "30",
                    "-c", str(REPO), command], env=env, check=True, timeout=10)
    try:
        app = psutil.Process(_app_pid(tmux, env))
        deadline = time.monotonic() + 30
        while not leftover_processes(fake.dir):  # the first poll's call is now hanging
            assert time.monotonic() < deadline, "the fake tool was never called"
            time.sleep(0.05)
        if how == "kill-session":
            subprocess.run([*tmux, "kill-session", "-t", "gpusat"], env=env, timeout=10)
        else:
            app.send_signal(signal.SIGTERM)
        app.wait(timeout=15)
        assert leftover_processes(fake.dir, grace=3.0) == []
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, capture_output=True)
