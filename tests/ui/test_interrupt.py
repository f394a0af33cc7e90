"""A real SIGINT (``kill -INT``; in the dashboard the terminal's Ctrl-C is a key) to the real
dashboard in tmux: it exits with 130, no traceback, and leaves no hung tool behind."""

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


def test_sigint_to_the_dashboard_is_130_without_traceback(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    from gpusat_tui.collectors.hy_smi import SPECS

    fake = FakeBin(tmp_path / "bin")
    fake.add_for_spec(SPECS[0], [Step(cards=(FakeCard(0),), mode="hang")])
    sock = str(tmp_path / "tmux.sock")
    tmux = ["tmux", "-S", sock]
    env = fake.env({"TERM": "xterm-256color"})
    err, rc = tmp_path / "err", tmp_path / "rc"
    inner = shlex.join([sys.executable, "-m", "gpusat_tui", "--interval", "30"])
    command = f"{inner} 2>{shlex.quote(str(err))}; echo $? > {shlex.quote(str(rc))}"
    subprocess.run([*tmux, "new-session", "-d", "-s", "gpusat", "-x", "100", "-y", "30",
                    "-c", str(REPO), command], env=env, check=True, timeout=10)
    try:
        pane = subprocess.run([*tmux, "list-panes", "-t", "gpusat", "-F", "#{pane_pid}"],
                              env=env, capture_output=True, text=True, timeout=10,
                              check=True).stdout
        deadline = time.monotonic() + 30
        while not leftover_processes(fake.dir):  # the first poll's call is now hanging
            assert time.monotonic() < deadline, "the fake tool was never called"
            time.sleep(0.05)
        shell = psutil.Process(int(pane.split()[0]))
        # The dashboard: the pane's process that runs the hung tool call (on a loaded machine
        # the pane's shell was once seen with a second process naming gpusat_tui beside it).
        callers = {t.ppid() for t in leftover_processes(fake.dir)}
        apps = [p for p in shell.children(recursive=True)
                if "gpusat_tui" in p.cmdline() and p.pid in callers]
        assert len(apps) == 1, (callers, shell.children(recursive=True))
        apps[0].send_signal(signal.SIGINT)
        deadline = time.monotonic() + 15
        while not (rc.exists() and rc.read_text().strip()):
            assert time.monotonic() < deadline, "the dashboard did not exit on SIGINT"
            time.sleep(0.05)
        assert rc.read_text().strip() == "130"
        assert b"Traceback" not in err.read_bytes()
        assert b"KeyboardInterrupt" not in err.read_bytes()
        assert leftover_processes(fake.dir, grace=3.0) == []
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, capture_output=True)
