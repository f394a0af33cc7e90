"""Reading processes, the portable part: what a read gives (`ProcStat`), how it fails, and
psutil's reader for systems without Linux's ``/proc`` (`procfs.ProcfsReader` is the fast one).

`trainer_census` decides who is a trainer, `watched_process` what their CPU % is; the readers
only read. Both answer the same calls (`stat`, `scan`, `threads_named`, `run_delay_s`,
`sched_counts`, `io_counters`, `environ`, `thread_cpu_s`, `main_thread_cpu_s`,
`thread_ids`, `cmdline`, `host_cpu`) with the
same `ProcStat` and the same three failures (`Gone`, `Denied`, `Failed`), so the monitor never
knows which one it has. psutil's ``oneshot()`` + ``cpu_percent()`` + ``status()`` costs ~34 µs
per process, ten times a procfs re-read (benchmarks/bench_processes.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import psutil

__all__ = [
    "Denied",
    "Failed",
    "Gone",
    "ProcIO",
    "ProcStat",
    "PsutilReader",
    "hidepid_from_mounts",
    "host_totals",
]


class ProcStat(NamedTuple):
    """What one read of a process gives: enough for identity, tree, CPU and state."""

    name: str
    state: str
    ppid: int
    #: user + system CPU seconds so far.
    cpu_s: float
    #: Creation time in the reader's own unit (clock ticks since boot on Linux): only ever
    #: compared for equality, to tell a reused PID from the process we watched.
    start: float
    num_threads: int | None


class ProcIO(NamedTuple):
    """A process's cumulative I/O counters (``/proc/<pid>/io``): bytes through read and write
    system calls (files, sockets and pipes alike, page cache or not) and how many calls."""

    rchar: int
    wchar: int
    syscr: int
    syscw: int


class Gone(Exception):
    """The process no longer exists (or its PID now belongs to another process)."""


class Denied(Exception):
    """We may not read this process."""


class Failed(Exception):
    """Reading the process failed some other way (message says how)."""


def hidepid_from_mounts(text: str, proc_root: str = "/proc") -> str | None:
    """The ``hidepid`` setting of the procfs mounted at ``proc_root``, or None when off.

    With ``hidepid=1``/``2`` (``noaccess``/``invisible``) an unprivileged user cannot read, or
    even see, other users' processes: a trainer run by someone else is invisible, and that
    deserves one plain note rather than a puzzle.
    """
    setting: str | None = None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4 or parts[1] != proc_root or parts[2] != "proc":
            continue
        setting = None  # the last mount on the path wins
        for option in parts[3].split(","):
            key, _, value = option.partition("=")
            if key == "hidepid" and value not in ("0", "off"):
                setting = value
    return setting


def host_totals(
    fields: Sequence[float], names: Sequence[str]
) -> tuple[float, float, float | None]:
    """(total, idle + iowait, iowait) from CPU times by field name. Linux counts guest time
    inside user/nice already (psutil does the same), so guest fields are taken out of the
    total once."""
    times = dict(zip(names, fields, strict=False))
    total = sum(fields)
    total -= times.get("guest", 0.0) + times.get("guest_nice", 0.0)
    iowait = times.get("iowait")
    idle = times["idle"] + (iowait or 0.0)
    return total, idle, iowait


class PsutilReader:
    """Anywhere psutil runs: reused ``psutil.Process`` objects read under ``oneshot()``."""

    @staticmethod
    def _stat_of(proc: psutil.Process) -> ProcStat:
        with proc.oneshot():
            times = proc.cpu_times()
            try:
                num_threads: int | None = proc.num_threads()
            except psutil.AccessDenied:
                num_threads = None
            return ProcStat(
                name=proc.name(),
                state=proc.status(),
                ppid=proc.ppid(),
                cpu_s=times.user + times.system,
                start=proc.create_time(),
                num_threads=num_threads,
            )

    def release(self, handle: object) -> None:
        """Nothing to release: a psutil.Process holds no descriptor."""

    def close(self) -> None:
        """Nothing kept open."""

    def cheap_scan(self, limit: int) -> bool:
        """Never: every scan here reads every process through psutil."""
        return False

    def forget(self, pid: int) -> None:
        """Nothing cached between scans here."""

    def handle(self, pid: int) -> psutil.Process | None:
        try:
            return psutil.Process(pid)
        except psutil.NoSuchProcess:
            return None
        except psutil.Error:
            return None

    def stat(self, pid: int, handle: object = None) -> ProcStat:
        proc = handle if isinstance(handle, psutil.Process) else None
        try:
            if proc is None:
                proc = psutil.Process(pid)
            elif not proc.is_running():  # False also when the PID was reused
                raise Gone
            return self._stat_of(proc)
        except psutil.ZombieProcess:
            start = proc.create_time() if proc is not None else 0.0
            return ProcStat("?", psutil.STATUS_ZOMBIE, 0, 0.0, start, None)
        except psutil.NoSuchProcess:
            raise Gone from None
        except psutil.AccessDenied:
            raise Denied from None
        except psutil.Error as exc:
            raise Failed(str(exc)) from None

    def scan(self) -> tuple[dict[int, ProcStat], set[int]]:
        table: dict[int, ProcStat] = {}
        denied: set[int] = set()
        for proc in psutil.process_iter():
            try:
                table[proc.pid] = self.stat(proc.pid, proc)
            except Denied:
                denied.add(proc.pid)
            except (Gone, Failed):
                continue
        return table, denied

    def threads_named(self, pid: int, name: str) -> list[int]:
        return []  # thread names are not portable; pin-memory CPU stays None here

    def run_delay_s(self, pid: int, handle: object = None) -> float | None:
        return None  # no portable run-delay figure (Linux reads /proc/<pid>/schedstat)

    def sched_counts(self, pid: int, handle: object = None) -> tuple[float | None, int | None]:
        """(run delay s, context switches): no run delay here; psutil's switch counts."""
        proc = handle if isinstance(handle, psutil.Process) else None
        try:
            switches = (proc or psutil.Process(pid)).num_ctx_switches()
        except (psutil.Error, AttributeError, NotImplementedError):
            return None, None
        return None, switches.voluntary + switches.involuntary

    def io_counters(self, pid: int, handle: object = None) -> ProcIO | None:
        """Linux's ``read_chars``/``write_chars`` through psutil; None elsewhere (other
        systems count storage bytes only, which misses sockets)."""
        proc = handle if isinstance(handle, psutil.Process) else None
        try:
            io = (proc or psutil.Process(pid)).io_counters()
        except (psutil.Error, AttributeError, NotImplementedError):
            return None
        rchar, wchar = getattr(io, "read_chars", None), getattr(io, "write_chars", None)
        if rchar is None or wchar is None:
            return None
        return ProcIO(rchar, wchar, io.read_count, io.write_count)

    def environ(self, pid: int) -> dict[str, str]:
        """The environment the process started with; empty where it may not be read."""
        try:
            return dict(psutil.Process(pid).environ())
        except (psutil.Error, OSError):
            return {}

    def thread_cpu_s(self, pid: int, tid: int) -> float:
        raise Failed("thread CPU not available")

    def main_thread_cpu_s(self, pid: int, handle: object = None) -> float | None:
        return None  # per-thread CPU is Linux's /proc/<pid>/task; not portable

    def thread_ids(self, pid: int) -> list[int]:
        return []

    def cmdline(self, pid: int) -> str:
        try:
            return " ".join(psutil.Process(pid).cmdline())
        except psutil.Error:
            return ""

    @staticmethod
    def host_cpu() -> tuple[float, float, float | None]:
        """(total, idle + iowait, iowait) CPU seconds of the host, from psutil."""
        times = psutil.cpu_times()
        return host_totals(tuple(times), times._fields)
