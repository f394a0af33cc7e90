"""A real hung job with no probe, and the real py-spy to read it from outside, for the tests
of stack dumps (`sources.polling.outside_stacks`, ``check --json``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HUNG_JOB = REPO / "tests" / "jobs" / "hung_job.py"


def py_spy_path() -> str | None:
    """py-spy on PATH or beside this interpreter (``pip install '.[pyspy]'`` puts it there)."""
    here = os.path.dirname(sys.executable)
    return shutil.which("py-spy", path=os.pathsep.join([os.environ.get("PATH", ""), here]))


@contextlib.contextmanager
def hung_job(max_s: float = 120.0, heartbeat_file: Path | None = None,
             extra: tuple[str, ...] = ()) -> Iterator[subprocess.Popen[str]]:
    """`tests/jobs/hung_job.py` running, its threads started (with ``heartbeat_file``, the
    second thread appends to it each second; ``extra``: more of its options, ``--workers``);
    killed on the way out (its workers end with it)."""
    if heartbeat_file is not None:
        extra = ("--heartbeat-file", str(heartbeat_file), *extra)
    proc = subprocess.Popen([sys.executable, str(HUNG_JOB), "--max-s", str(max_s), *extra],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the job's session: its workers too
        proc.wait()


def require_py_spy(pid: int) -> str:
    """py-spy's path, skipping the test (saying why) where it is absent or where the kernel
    refuses it ptrace on ``pid``."""
    exe = py_spy_path()
    if exe is None:
        pytest.skip("py-spy is not installed (pip install '.[pyspy]')")
    res = subprocess.run([exe, "dump", "--pid", str(pid)], capture_output=True, text=True,
                         timeout=30)
    if res.returncode != 0:
        words = (res.stderr or res.stdout).strip().splitlines()[:1]
        pytest.skip(f"py-spy cannot read a process here (ptrace refused?): {words}")
    return exe
