"""Reading a trainer's scheduler context from ``/proc`` (the I/O beside `host.jobs`' parsers).

Done once per trainer, when the process monitor first sees it (three small reads, ~0.1 ms),
never per poll: a process's environment and cgroup do not change under it in ways that
matter here. Nothing raises: what cannot be read is left out, and the parser falls back (an
unreadable environment to the cgroup path, that to a plain job).
"""

from __future__ import annotations

import os
import pwd

from gpusat_tui.host.scheduler.jobs import job_context
from gpusat_tui.model import JobContext

__all__ = ["read_job_context", "user_name"]

#: Most bytes read from ``environ`` or ``cmdline`` (a pathological environment is not read in
#: full; the scheduler's variables come early in practice, and a cut entry is just dropped).
MAX_READ_BYTES = 256 * 1024


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_READ_BYTES)
    except OSError:  # gone, denied (another user's environ), no such file
        return None


def user_name(uid: int) -> str:
    """The account name of ``uid``, as a job's ``user`` is given; the number where the uid has
    no name here (a container's user)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _owner(root: str, pid: int) -> str | None:
    try:
        return user_name(os.stat(f"{root}/{pid}").st_uid)
    except OSError:
        return None


def read_job_context(pid: int, root: str = "/proc") -> JobContext:
    """The `JobContext` of process ``pid`` as far as this account can read it."""
    environ = _read(f"{root}/{pid}/environ")
    cgroup = _read(f"{root}/{pid}/cgroup")
    cmdline = _read(f"{root}/{pid}/cmdline")
    command = None
    if cmdline:
        command = " ".join(
            part for part in cmdline.decode("utf-8", "replace").split("\0") if part
        )
    return job_context(
        environ,
        cgroup.decode("utf-8", "replace") if cgroup is not None else None,
        pid=pid,
        owner=_owner(root, pid),
        command=command,
    )
