"""``--replay`` of a recording whose clock ran backwards, in the real binary in a tmux pane.

The first frame is on screen at once (position 0:00), the replay then advances at the
recorded pace by poll count (not all at once, not stuck at 0:00/0:00), and the verdicts get
their evidence window (time going back would reset it every poll).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.sources.test_replay_clock_back import write_backwards

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


def _position(screen: str) -> tuple[int, int] | None:
    match = re.search(r"replay run\.jsonl (\d+):(\d\d)/(\d+):(\d\d)", screen)
    if match is None:
        return None
    m, s, dm, ds = (int(g) for g in match.groups())
    return m * 60 + s, dm * 60 + ds


def test_replay_of_a_backwards_clock_starts_at_once_and_keeps_pace(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    path = tmp_path / "run.jsonl"
    write_backwards(path, 120, interval=1.0)
    sock = str(tmp_path / "tmux.sock")
    env = {"PATH": "/bin:/usr/bin", "TERM": "xterm-256color", "NO_COLOR": "1",
           "PYTHONPATH": str(REPO), "HOME": str(tmp_path)}
    command = shlex.join([sys.executable, "-m", "gpusat_tui", "--replay", str(path)])

    def tmux(*args: str) -> str:
        result = subprocess.run(["tmux", "-S", sock, *args], env=env, capture_output=True,
                                text=True, timeout=10, check=True)
        return result.stdout

    tmux("new-session", "-d", "-s", "replay", "-x", "110", "-y", "30", "-c", str(REPO), command)
    try:
        def screen() -> str:
            return tmux("capture-pane", "-p", "-t", "replay")

        first = _wait_for(screen, lambda s: "▸ 0" in s and _position(s) is not None, 60)
        position = _position(first)
        assert position is not None
        assert position[1] == 119, "the duration counts polls, as report does"
        # At 1x the replay takes 2 minutes: a card on screen at a small position is the first
        # frames shown as they come, not the whole file played at once.
        assert position[0] < 60, first
        later = _wait_for(
            screen, lambda s: (p := _position(s)) is not None and p[0] >= position[0] + 3, 60
        )
        assert "▸ 0" in later
        # 30 s of evidence is not needed for a first verdict: the window must only not be
        # reset at every poll (it was, when time went back).
        _wait_for(screen, lambda s: "no card has enough data yet" not in s, 60)
        tmux("send-keys", "-t", "replay", "q")
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], env=env, capture_output=True)
