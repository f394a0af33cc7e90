"""`QuietLinuxDriver` in a real tmux pane: the input thread sleeps while nobody types, and keys,
a lone Escape and quitting (by key, and by the app with no key) still work.

The control runs Textual's own `LinuxDriver` through the same measurement, so the test shows
it can tell the two apart (stock wakes about ten times a second).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from textual.drivers.linux_driver import LinuxDriver

from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.driver import QuietLinuxDriver

REPO = Path(__file__).resolve().parents[2]
APP = Path(__file__).with_name("quiet_input_app.py")

pytestmark = pytest.mark.tmux


class Pane:
    def __init__(self, sock: Path, out: Path) -> None:
        self.sock = sock
        self.out = out

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-S", str(self.sock), *args], capture_output=True,
                              text=True, timeout=10)

    def lines(self) -> list[str]:
        return self.out.read_text().splitlines() if self.out.exists() else []

    def wait_line(self, line: str, timeout: float) -> float:
        """Seconds until ``line`` is in the app's output."""
        start = time.monotonic()
        while line not in self.lines():
            if time.monotonic() - start > timeout:
                raise AssertionError(f"{line!r} never came; got {self.lines()}")
            time.sleep(0.02)
        return time.monotonic() - start

    def input_tid(self) -> int:
        self.wait_line_prefix("tid ", 20)
        return int(next(line for line in self.lines() if line.startswith("tid "))[4:])

    def wait_line_prefix(self, prefix: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(line.startswith(prefix) for line in self.lines()):
            if time.monotonic() > deadline:
                raise AssertionError(f"no {prefix!r} line; got {self.lines()}")
            time.sleep(0.05)

    def running(self) -> bool:
        return self.tmux("has-session", "-t", "q").returncode == 0

    def wait_gone(self, timeout: float) -> float:
        start = time.monotonic()
        while self.running():
            if time.monotonic() - start > timeout:
                raise AssertionError("the app did not exit")
            time.sleep(0.02)
        return time.monotonic() - start


@contextmanager
def pane(tmp_path: Path, mode: str, *extra: str) -> Iterator[Pane]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    out = tmp_path / f"{mode}.out"
    p = Pane(tmp_path / f"{mode}.sock", out)
    command = shlex.join([sys.executable, str(APP), str(out), mode, *extra])
    p.tmux("new-session", "-d", "-s", "q", "-x", "80", "-y", "20", "-c", str(REPO), command)
    try:
        yield p
    finally:
        p.tmux("kill-server")


def wakeups(tid: int, seconds: float) -> int:
    """Voluntary context switches of thread ``tid`` (any process) over ``seconds``."""
    def switches() -> int:
        for status in Path("/proc").glob(f"[0-9]*/task/{tid}/status"):
            for line in status.read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
        raise AssertionError(f"thread {tid} not found")

    before = switches()
    time.sleep(seconds)
    return switches() - before


def test_idle_input_thread_sleeps_and_wakes_for_exit(tmp_path: Path) -> None:
    with pane(tmp_path, "quiet", "6") as p:
        tid = p.input_tid()
        time.sleep(1.5)  # past the ticking window after start-up's own terminal replies
        assert wakeups(tid, 3.0) <= 2
        # The app exits on its timer with nobody typing: the pipe wakes the thread.
        assert p.wait_gone(timeout=8) < 8


def test_stock_driver_wakes_ten_times_a_second(tmp_path: Path) -> None:
    """The control: the same measurement on Textual's own driver."""
    with pane(tmp_path, "stock") as p:
        tid = p.input_tid()
        time.sleep(1.5)
        assert wakeups(tid, 3.0) >= 15
        p.tmux("send-keys", "-t", "q", "q")
        p.wait_gone(timeout=10)


def test_keys_lone_escape_and_quit_after_idle(tmp_path: Path) -> None:
    with pane(tmp_path, "quiet") as p:
        p.input_tid()
        time.sleep(2.0)  # asleep with no timeout
        p.tmux("send-keys", "-t", "q", "a")
        p.wait_line("key a", timeout=5)
        time.sleep(2.0)
        # A lone Escape is only a key once the escape delay passes: the thread must tick.
        p.tmux("send-keys", "-t", "q", "Escape")
        assert p.wait_line("key escape", timeout=5) < 2
        p.tmux("send-keys", "-t", "q", "Up")
        p.wait_line("key up", timeout=5)
        time.sleep(2.0)
        p.tmux("send-keys", "-t", "q", "q")
        p.wait_line("key q", timeout=5)
        assert p.wait_gone(timeout=5) < 5


def test_the_dashboard_runs_on_the_quiet_driver() -> None:
    """What the tests above measure is what the dashboard uses (Textual's choice otherwise)."""
    if os.environ.get("TEXTUAL_DRIVER") or not sys.platform.startswith("linux"):
        pytest.skip("Textual's driver is chosen by TEXTUAL_DRIVER, or this is not Linux")
    assert issubclass(QuietLinuxDriver, LinuxDriver)
    assert GpusatApp(None, no_tool="none").driver_class is QuietLinuxDriver
