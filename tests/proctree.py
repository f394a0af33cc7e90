"""Kill a test's process group and reap every process of it before the next test starts.

Why: killing a job's group leaves its grandchildren orphaned. On Linux they go to PID 1, which
reaps them only when it gets to it (about 1.3 s on the reference VM, longer under load). Until
then a zombie ``pt_data_worker`` whose parent is a zombie rank (``sh`` launcher -> ranks ->
workers) or a zombie forkserver (torch ``forkserver`` start method) looks like a job to the
monitor's auto-discovery, and the next test that expects to see no foreign job finds one. As a
child subreaper the test process adopts such orphans itself and reaps them at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Iterator

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37


@contextlib.contextmanager
def subreaper() -> Iterator[bool]:
    """Make this process adopt orphaned descendants while inside; yields whether it could.

    Scoped, not session-wide: elsewhere the tests check that the live source leaves no zombie
    *child*, and adopted grandchildren of killed tools would read as ours.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        was = ctypes.c_int(0)
        libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0)
        ok = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # no libc prctl (not Linux): orphans go to init
        yield False
        return
    try:
        yield ok
    finally:
        if ok and not was.value:
            libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def group_members(pgid: int) -> list[int]:
    """PIDs whose process group is ``pgid``, zombies included (read from /proc)."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data.rpartition(b")")[2].split()  # state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(pgid).encode():
            found.append(int(entry))
    return found


def kill_group(pgid: int, timeout: float = 10.0) -> None:
    """SIGKILL process group ``pgid`` and return once none of it is left, not even a zombie.

    Members that are (or become, under `subreaper`) our children are reaped here; the others
    are waited for. Raises AssertionError if the group outlives ``timeout``.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while members := group_members(pgid):
        for pid in members:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        assert time.monotonic() < deadline, f"process group {pgid} outlived the test: {members}"
        time.sleep(0.005)
