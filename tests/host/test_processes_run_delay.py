"""Run delay (``/proc/<pid>/schedstat``): the time a process is runnable but waits for a CPU.

Measured for real: more spinning processes than cores must show most of their wall time
queued, and CPU % + run delay % near a whole core; a sleeping process shows none."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from gpusat_tui.host.monitor.processes import ProcessMonitor
from gpusat_tui.host.monitor.procfs import parse_schedstat

SPIN = "import time\nend = time.monotonic() + 20\nwhile time.monotonic() < end: pass"
SLEEP = "import time; time.sleep(20)"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b"178985483 7285142 417\n", 0.007285142),
        (b"0 0 0", 0.0),
        (b"1 2", None),
        (b"", None),
        (b"a b c", None),
        (b"1 -5 3", None),
    ],
)
def test_parse_schedstat(line: bytes, expected: float | None) -> None:
    assert parse_schedstat(line) == expected


@pytest.fixture
def spawn() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait(timeout=10)


def _samples(monitor: ProcessMonitor, polls: int) -> list[list[tuple[float, float]]]:
    """Per poll after the first: (CPU %, run delay %) of every process with both."""
    monitor.sample()
    out = []
    for _ in range(polls):
        time.sleep(0.5)
        out.append([
            (p.cpu_pct, p.run_delay_pct) for p in monitor.sample().processes
            if p.cpu_pct is not None and p.run_delay_pct is not None
        ])
    return out


@pytest.mark.skipif(not os.path.exists("/proc/self/schedstat"), reason="no schedstat here")
def test_more_spinners_than_cores_wait_for_a_cpu(
    spawn: list[subprocess.Popen[bytes]],
) -> None:
    cores = len(os.sched_getaffinity(0))
    for _ in range(min(3 * cores, 24)):
        spawn.append(subprocess.Popen([sys.executable, "-c", SPIN]))
    sleeper = subprocess.Popen([sys.executable, "-c", SLEEP])
    spawn.append(sleeper)
    monitor = ProcessMonitor(pids=[p.pid for p in spawn])
    try:
        polls = _samples(monitor, 3)
        report = monitor.sample()
    finally:
        monitor.close()
    figures = [f for poll in polls for f in poll]
    spinners = [f for f in figures if f[0] + f[1] > 20]
    assert len(spinners) >= 2 * (len(spawn) - 1), figures  # two polls of every spinner
    # At least two thirds of a spinner's time is spent queued, and what it asked for (run +
    # queued) is about one core.
    assert statistics.median(d for _, d in spinners) >= 40, spinners
    assert statistics.median(c + d for c, d in spinners) >= 80, spinners
    by_pid = {p.pid: p for p in report.processes}
    quiet = by_pid[sleeper.pid]
    assert quiet.run_delay_pct is not None and quiet.run_delay_pct < 5


def test_no_run_delay_off_procfs(spawn: list[subprocess.Popen[bytes]]) -> None:
    spawn.append(subprocess.Popen([sys.executable, "-c", SLEEP]))
    monitor = ProcessMonitor(pids=[spawn[0].pid], use_procfs=False)
    try:
        monitor.sample()
        time.sleep(0.2)
        [sample] = monitor.sample().processes
    finally:
        monitor.close()
    assert sample.cpu_pct is not None
    assert sample.run_delay_pct is None
