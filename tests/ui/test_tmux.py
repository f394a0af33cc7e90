"""The real ``gpusat-tui`` process in a detached tmux session, against fake vendor tools."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.tmux


def _wait_for(read: Callable[[], str], check: Callable[[str], bool], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    screen = read()
    while not check(screen):
        if time.monotonic() > deadline:
            raise AssertionError(f"screen never matched; last screen:\n{screen}")
        time.sleep(0.1)
        screen = read()
    return screen


def test_real_binary_switches_cards_in_tmux(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    from gpusat_tui.collectors.nvidia_smi import SPECS

    fake = FakeBin(tmp_path / "bin")
    fake.add_for_spec(SPECS[0], [[
        FakeCard(0, name="Fake A", util_pct=11.0, power_w=100.0),
        FakeCard(1, name="Fake B", util_pct=77.0, power_w=250.0),
        FakeCard(2, name="Fake C", util_pct=33.0, power_w=150.0),
    ]])
    # A private socket: its own tmux server, whose environment is this one (fakes on PATH).
    sock = str(tmp_path / "tmux.sock")
    env = fake.env({"TERM": "xterm-256color", "NO_COLOR": "1"})
    command = shlex.join([sys.executable, "-m", "gpusat_tui", "--interval", "0.5"])

    def tmux(*args: str) -> str:
        result = subprocess.run(["tmux", "-S", sock, *args], env=env, capture_output=True,
                                text=True, timeout=10, check=True)
        return result.stdout

    tmux("new-session", "-d", "-s", "gpusat", "-x", "100", "-y", "30", "-c", str(REPO),
         command)
    try:
        def screen() -> str:
            return tmux("capture-pane", "-p", "-t", "gpusat")

        # Three cards in 100x30: every card's block at once (the overview).
        first = _wait_for(screen, lambda s: "▸ 0  40°C" in s, timeout=30)
        assert "GPU-Util 11%" in first and "GPU-Util 77%" in first and "GPU-Util 33%" in first
        assert "Fake A" in first and "Fake C" in first
        assert "live" in first
        tmux("send-keys", "-t", "gpusat", "Right")
        _wait_for(screen, lambda s: "▸ 1  40°C" in s, timeout=10)
        # Enter opens the selected card in full, beside the list of cards.
        tmux("send-keys", "-t", "gpusat", "Enter")
        after = _wait_for(screen, lambda s: "▸ 1  77%" in s, timeout=10)
        assert "GPU-Util 77%" in after and "Fake B" in after and "now" in after
        assert " 0  11%" in after and " 2  33%" in after
        tmux("send-keys", "-t", "gpusat", "Left")
        _wait_for(screen, lambda s: "▸ 0  11%" in s, timeout=10)
        tmux("send-keys", "-t", "gpusat", "o")
        _wait_for(screen, lambda s: "▸ 0  40°C" in s, timeout=10)
        tmux("send-keys", "-t", "gpusat", "q")
        # The pane closes when the process exits; the session (and server) go with it.
        def session_state() -> str:
            probe = subprocess.run(["tmux", "-S", sock, "has-session", "-t", "gpusat"],
                                   env=env, capture_output=True)
            return "running" if probe.returncode == 0 else "gone"

        _wait_for(session_state, lambda s: s == "gone", timeout=10)
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], env=env, capture_output=True)
