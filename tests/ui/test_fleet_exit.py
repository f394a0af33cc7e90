"""The real dashboard's fleet view in tmux, against a Prometheus that trickles its answers
(`tests.prom.hostile`): ``q`` ends it at once, although a request is still being trickled."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.prom.hostile import HostileServer

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.tmux


def test_q_ends_the_fleet_view_while_the_server_trickles(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    sock = str(tmp_path / "tmux.sock")
    tmux = ["tmux", "-S", sock]
    rc = tmp_path / "rc"
    # Every request trickles for two minutes: an exit that waits on one fails the bound below.
    server = HostileServer("trickle", gap_s=0.2, run_s=120)
    with server as url:
        inner = shlex.join([sys.executable, "-m", "gpusat_tui", "--prometheus", url,
                            "--interval", "1"])
        command = f"{inner}; echo $? > {shlex.quote(str(rc))}"  # the screen is on stderr
        subprocess.run([*tmux, "new-session", "-d", "-s", "gpusat", "-x", "100", "-y", "30",
                        "-c", str(REPO), command], check=True, timeout=10)
        try:
            deadline = time.monotonic() + 60
            while True:  # the screen is up, and says the server trickled a request out
                screen = subprocess.run([*tmux, "capture-pane", "-p", "-t", "gpusat"],
                                        capture_output=True, text=True, timeout=10).stdout
                if "server timeout" in screen and server.connections >= 2:
                    break  # the next request is in its trickle now
                assert time.monotonic() < deadline, f"the fleet view never came up:\n{screen}"
                time.sleep(0.1)
            subprocess.run([*tmux, "send-keys", "-t", "gpusat", "q"], check=True, timeout=10)
            asked = time.monotonic()
            while not (rc.exists() and rc.read_text().strip()):
                assert time.monotonic() - asked < 30, "the dashboard did not exit on q"
                time.sleep(0.05)
            took = time.monotonic() - asked
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True)
    assert rc.read_text().strip() == "0"
    assert took < 30

