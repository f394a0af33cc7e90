"""Whether a live process can be the trainer that wrote a probe file.

A probe file names a PID; anyone who can write into the probe folder can name any PID. The
monitor accepts the file only when that process could have written it: a Python interpreter
(the probe runs inside one), of the user who owns the file, started before the file was last
written. Otherwise an interactive shell named in a file would be listed as a trainer with
made-up figures, and its CPU watched as a trainer's.

Cost on Linux: a ``stat`` of ``/proc/<pid>``, a read of its ``stat`` and a ``readlink`` of its
``exe`` per file per poll, a few microseconds; elsewhere psutil's equivalents. A process that
cannot be inspected is refused, with the reason.

What this cannot catch: a Python process of the same user that is not a trainer. The folder is
the user's own (0700), so that writer is the user.
"""

from __future__ import annotations

import functools
import os
import re

import psutil

from gpusat_tui.text import clean

__all__ = ["START_SLACK_S", "is_python", "writer_refusal"]

#: Process start times are known to about a second (boot time in whole seconds, clock ticks):
#: a file may look written up to this long before its writer started.
START_SLACK_S = 2.0

#: Executable names of a Python interpreter: python, python3.12, python3.13t, python3.12d,
#: pypy3.10... (a virtual environment's ``python`` is a link the kernel already resolved).
_PYTHON_NAME = re.compile(r"(?:python|pypy)[0-9.]*[a-z]{0,2}(?:-dbg)?")


def is_python(path: str) -> bool:
    """True when ``path`` (an executable or ``argv[0]``) names a Python interpreter."""
    name = os.path.basename(path.strip().removesuffix(" (deleted)"))
    return bool(name) and _PYTHON_NAME.fullmatch(name) is not None


def writer_refusal(pid: int, file_uid: int | None, written_at: float) -> str | None:
    """Why process ``pid`` cannot have written a probe file owned by ``file_uid`` and last
    written at ``written_at`` (Unix time); None when it can."""
    try:
        name, uid, started, exe = (
            _proc_facts(pid) if os.path.isdir("/proc/self") else _psutil_facts(pid)
        )
    except (FileNotFoundError, ProcessLookupError, psutil.NoSuchProcess):
        return f"PID {pid} has exited"  # psutil's ZombieProcess too
    except (PermissionError, psutil.AccessDenied):
        return f"PID {pid} cannot be inspected (permission denied)"
    except (psutil.Error, OSError, ValueError, IndexError) as exc:
        return f"PID {pid} cannot be inspected ({type(exc).__name__})"
    shown = clean(name, 32)
    if file_uid is not None and uid != file_uid:
        return f"PID {pid} ({shown}) belongs to another user (uid {uid})"
    if started > written_at + START_SLACK_S:
        return f"PID {pid} ({shown}) started after the file was written (a reused PID)"
    if not is_python(exe):
        return f"PID {pid} ({shown}) is not a Python interpreter, so it runs no probe"
    return None


@functools.cache
def _boot_time() -> float:
    return float(psutil.boot_time())


@functools.cache
def _clock_ticks() -> int:
    return int(os.sysconf("SC_CLK_TCK"))


def _proc_facts(pid: int) -> tuple[str, int, float, str]:
    """(name, uid, start time, executable or argv[0]) from ``/proc``; raises OSError."""
    folder = f"/proc/{pid}"
    uid = os.stat(folder).st_uid
    with open(f"{folder}/stat", "rb") as f:
        text = f.read(4096).decode(errors="replace")
    name = text[text.find("(") + 1:text.rfind(")")]
    ticks = int(text[text.rindex(")") + 2:].split()[19])
    started = _boot_time() + ticks / _clock_ticks()
    try:
        exe = os.readlink(f"{folder}/exe")
    except PermissionError:  # a process that is not dumpable: argv[0] is all there is
        with open(f"{folder}/cmdline", "rb") as f:
            exe = f.read(4096).split(b"\0", 1)[0].decode(errors="replace")
    return name, uid, started, exe


def _psutil_facts(pid: int) -> tuple[str, int, float, str]:
    proc = psutil.Process(pid)
    with proc.oneshot():
        name, uid, started = proc.name(), proc.uids().real, proc.create_time()
        try:
            exe = proc.exe()
        except psutil.AccessDenied:
            exe = ""
        if not exe:
            argv = proc.cmdline()
            exe = argv[0] if argv else ""
    return name, uid, started, exe
