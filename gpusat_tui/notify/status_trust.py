"""Whose status files ``gpusat-tui status`` believes: the one place its trust model is enforced.

A status bar shows what it reads to its user, every few seconds, so a file planted by someone
else must never reach it. A file is read only when all of these hold (docs/watching.md):

1. its folder is the caller's own (owned by the caller's uid, no write bit for group or
   others), opened once and then used through its descriptor, so it cannot be swapped;
2. the file is a regular file owned by the caller, opened without following a link;
3. its writer still runs: its PID is a real one (2 to `MAX_PID`), the process is the caller's,
   and it started before the file was last written (``/proc/<pid>/stat``'s start time against
   the file's mtime), so a PID reused by a later process does not keep a dead monitor's
   figures alive.

An exporter on this machine (a loopback URL) is asked only when a socket of the caller's
listens on its port (`local_listener_is_mine`): another user's exporter is another user's job.

Freshness (how old the figures may be) and the figures' bounds are the reader's
(`status_file.read_all`). Standard library only and no ``psutil``: this runs on every refresh of
a status bar, and reading two small files of ``/proc`` costs less than importing it. Where
``/proc`` is missing (not Linux) the start time cannot be read and a live PID of the caller's
is taken as the writer.
"""

from __future__ import annotations

import os
import stat

__all__ = [
    "MAX_PID",
    "local_listener_is_mine",
    "open_own_folder",
    "process_start",
    "read_own_file",
    "writer_alive",
]

#: Linux's ceiling on PIDs (``pid_max`` cannot be set above 2**22).
MAX_PID = 1 << 22

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_boot_time: list[float] = []


def _uid() -> int | None:
    return os.getuid() if hasattr(os, "getuid") else None


def _mine(info: os.stat_result) -> bool:
    uid = _uid()
    return uid is None or info.st_uid == uid


def open_own_folder(folder: str) -> int | None:
    """A descriptor of ``folder`` if it is the caller's and nobody else can write to it."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        info = None
    if info is None or not stat.S_ISDIR(info.st_mode) or not _mine(info) \
            or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        os.close(fd)
        return None
    return fd


def read_own_file(folder_fd: int, name: str, max_bytes: int) -> tuple[bytes, float] | None:
    """(at most ``max_bytes`` + 1 bytes, the mtime) of a regular file of the caller's in the
    folder, or None. A link, a FIFO or another user's file is never read."""
    try:
        fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0),
                     dir_fd=folder_fd)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not _mine(info) \
                or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        return os.read(fd, max_bytes + 1), info.st_mtime
    except OSError:
        return None
    finally:
        os.close(fd)


def _boot() -> float | None:
    if not _boot_time:
        try:
            with open("/proc/stat", "rb") as f:
                for line in f:
                    if line.startswith(b"btime "):
                        _boot_time.append(float(line.split()[1]))
                        break
        except (OSError, ValueError, IndexError):
            return None
    return _boot_time[0] if _boot_time else None


def process_start(pid: int) -> float | None:
    """Unix time at which process ``pid`` started (to the second at worst: the boot time is
    whole seconds and rounded down, so this is never later than the true start), or None
    when there is no such process of the caller's or ``/proc`` cannot say."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | _CLOEXEC)
    except OSError:
        return None
    try:
        if not _mine(os.fstat(fd)):
            return None
        data = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    boot = _boot()
    try:
        # Field 22, counted after the command name's closing parenthesis (it may hold spaces).
        ticks = int(data.rpartition(b")")[2].split()[19])
        hertz = os.sysconf("SC_CLK_TCK")
    except (ValueError, IndexError, OSError):
        return None
    return None if boot is None or hertz <= 0 else boot + ticks / hertz


def writer_alive(pid: object, written_at: float) -> bool:
    """Whether ``pid`` names a running process of the caller's that started no later than
    ``written_at`` (the file's mtime): the writer itself, not a later process given its PID."""
    if not isinstance(pid, int) or isinstance(pid, bool) or not 1 < pid <= MAX_PID:
        return False
    if pid == os.getpid():
        return True
    if os.path.isdir("/proc/self"):
        started = process_start(pid)
        return started is not None and started <= written_at
    try:
        os.kill(pid, 0)
    except OSError:  # gone, or not the caller's (PermissionError): not its writer either way
        return False
    return True


def local_listener_is_mine(port: int) -> bool | None:
    """Whether a TCP socket of the caller's listens on ``port`` here (``/proc/net/tcp`` and
    ``tcp6``: state 0A, the owner's uid); None where ``/proc`` cannot say."""
    uid = _uid()
    seen = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, "rb") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        seen = True
        for row in rows:
            fields = row.split()
            try:
                listening = fields[3] == b"0A" and int(fields[1].rpartition(b":")[2], 16) == port
                if listening and (uid is None or int(fields[7]) == uid):
                    return True
            except (IndexError, ValueError):
                continue
    return False if seen else None
