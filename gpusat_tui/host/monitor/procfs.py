"""Reading processes on Linux: ``/proc`` directly, one small file per process per tick.

A tick re-reads one ``/proc/<pid>/stat`` per watched process through a descriptor kept open
between ticks (~3 µs, against ~34 µs for psutil's reads; benchmarks/bench_processes.py), its
``schedstat`` and ``io`` (the progress counters) the same way, one
``/proc/<pid>/task/<tid>/stat`` per pin-memory thread, the trainer's main thread's (the rest
of its threads' CPU is the process's less that: `task_threads`) and ``/proc/stat`` for the
host. Answers
the calls of `proc_readers.PsutilReader` with the same `ProcStat` and failures.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import psutil

from gpusat_tui.errors import ParseError
from gpusat_tui.host.monitor.proc_readers import (
    Denied,
    Failed,
    Gone,
    ProcIO,
    ProcStat,
    PsutilReader,
    host_totals,
)
from gpusat_tui.host.scheduler.launch_env import MAX_ENVIRON_BYTES, parse_environ

__all__ = [
    "PROC_ROOT",
    "ProcfsReader",
    "main_thread_cpu_s",
    "parse_proc_io",
    "parse_proc_stat",
    "parse_schedstat",
    "parse_schedstat_counts",
]

PROC_ROOT = "/proc"

# /proc/<pid>/stat state letters -> psutil's status strings (psutil.STATUS_*), so both readers
# report the same words.
_STATES: dict[str, str] = {
    "R": psutil.STATUS_RUNNING,
    "S": psutil.STATUS_SLEEPING,
    "D": psutil.STATUS_DISK_SLEEP,
    "T": psutil.STATUS_STOPPED,
    "t": psutil.STATUS_TRACING_STOP,
    "Z": psutil.STATUS_ZOMBIE,
    "X": psutil.STATUS_DEAD,
    "x": psutil.STATUS_DEAD,
    "K": "wake-kill",
    "W": psutil.STATUS_WAKING,
    "I": psutil.STATUS_IDLE,
    "P": psutil.STATUS_PARKED,
}


def parse_proc_stat(data: bytes, clock_ticks: int = 100) -> ProcStat:
    """Parse a ``/proc/<pid>/stat`` (or ``/proc/<pid>/task/<tid>/stat``) line.

    The name sits between the first ``(`` and the LAST ``)``: it may itself contain spaces and
    parentheses. Raises ParseError on anything else (truncated reads, garbage).
    """
    lpar = data.find(b"(")
    rpar = data.rfind(b")")
    if lpar < 0 or rpar < lpar:
        raise ParseError(f"not a /proc stat line: {data[:80]!r}")
    fields = data[rpar + 2 :].split(None, 20)  # the fields we use are among the first 20
    if len(fields) < 20:
        raise ParseError(f"/proc stat line too short ({len(fields)} fields after the name)")
    try:
        state_letter = fields[0].decode("ascii", "replace")
        ppid = int(fields[1])
        cpu_ticks = int(fields[11]) + int(fields[12])
        num_threads = int(fields[17])
        start = float(int(fields[19]))
    except ValueError as exc:
        raise ParseError(f"bad number in /proc stat line: {exc}") from None
    name = data[lpar + 1 : rpar].decode("utf-8", "replace")
    return ProcStat(
        name=name,
        state=_STATES.get(state_letter, state_letter),
        ppid=ppid,
        cpu_s=cpu_ticks / clock_ticks,
        start=start,
        num_threads=num_threads,
    )


def main_thread_cpu_s(pid: int, root: str = PROC_ROOT) -> float | None:
    """CPU seconds (user + system) the main thread of ``pid`` has used, from
    ``/proc/<pid>/task/<pid>/stat``; None where it cannot be read."""
    try:
        with open(f"{root}/{pid}/task/{pid}/stat", "rb") as f:
            data = f.read(4096)
        return parse_proc_stat(data, os.sysconf("SC_CLK_TCK")).cpu_s
    except (OSError, ValueError, ParseError):
        return None


def parse_schedstat(data: bytes) -> float | None:
    """Run delay in seconds from a ``/proc/<pid>/schedstat`` line (``exec_ns delay_ns
    timeslices``); None on anything else."""
    return parse_schedstat_counts(data)[0]


def parse_schedstat_counts(data: bytes) -> tuple[float | None, int | None]:
    """(run delay in seconds, timeslices) from a ``/proc/<pid>/schedstat`` line; the
    timeslices count every time the thread was put on a CPU: its context switches. None for
    each one that is not a number."""
    fields = data.split()
    if len(fields) != 3:
        return None, None
    try:
        delay_ns = int(fields[1])
    except ValueError:
        delay_ns = -1
    try:
        slices = int(fields[2])
    except ValueError:
        slices = -1
    return (delay_ns / 1e9 if delay_ns >= 0 else None), (slices if slices >= 0 else None)


def parse_proc_io(data: bytes) -> ProcIO | None:
    """``rchar``/``wchar``/``syscr``/``syscw`` from a ``/proc/<pid>/io`` text; None when any is
    missing or not a number (a kernel without task I/O accounting has no such file).

    The kernel writes the four first, in this order: split once and check the names (a
    third of the line-by-line parse, read for every watched process at every tick); any
    other layout is parsed line by line."""
    fields = data.split(None, 8)
    if len(fields) >= 8 and (fields[0], fields[2], fields[4], fields[6]) == (
        b"rchar:", b"wchar:", b"syscr:", b"syscw:"
    ):
        try:
            io = ProcIO(int(fields[1]), int(fields[3]), int(fields[5]), int(fields[7]))
        except ValueError:
            return None
        return io if io.rchar >= 0 and io.wchar >= 0 and io.syscr >= 0 and io.syscw >= 0 else None
    found: dict[bytes, int] = {}
    for line in data.splitlines():
        name, sep, value = line.partition(b":")
        if sep and name in (b"rchar", b"wchar", b"syscr", b"syscw"):
            try:
                found[name] = int(value)
            except ValueError:
                return None
    if len(found) != 4 or min(found.values()) < 0:
        return None
    return ProcIO(found[b"rchar"], found[b"wchar"], found[b"syscr"], found[b"syscw"])


#: The fields of the /proc/stat cpu line, in order (psutil's ``scputimes`` on Linux).
_CPU_FIELDS = (
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice",
)


def _close(fd: int) -> int:
    """Close a kept descriptor (-1: none), quietly; returns -1 to store in its place."""
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.close(fd)
    return -1


class _StatFile:
    """An open ``/proc/<pid>/stat`` kept between ticks.

    Re-reading an open file with ``pread`` costs about half of open+read+close (3.3 µs vs 7 µs
    on the reference machine), and the descriptor stays bound to the process it was opened
    for: once that process is reaped, reads fail with ESRCH even if its PID is reused, so a
    new process can never be mistaken for the old one through it.
    """

    __slots__ = ("fd", "io_fd", "main_fd", "sched_fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        #: ``/proc/<pid>/task/<pid>/stat`` (the main thread), opened on its first read.
        self.main_fd = -1
        #: ``/proc/<pid>/schedstat``, opened on the first read of the run delay (-1: not).
        self.sched_fd = -1
        #: ``/proc/<pid>/io``, opened on the first read of the I/O counters (-1: not).
        self.io_fd = -1

    def close(self) -> None:
        self.fd = _close(self.fd)
        self.sched_fd = _close(self.sched_fd)
        self.io_fd = _close(self.io_fd)
        self.main_fd = _close(self.main_fd)

    @property
    def count(self) -> int:
        """Descriptors held open."""
        return (self.fd >= 0) + (self.sched_fd >= 0) + (self.io_fd >= 0) + (self.main_fd >= 0)

    def __del__(self) -> None:
        self.close()


@contextlib.contextmanager
def _proc_errors() -> Iterator[None]:
    """Say what an OSError on ``/proc/<pid>/...`` means for the process being read.

    ENOENT/ESRCH: it is gone; EACCES: not ours to read; anything else: a failure to report.
    """
    try:
        yield
    except (FileNotFoundError, ProcessLookupError):
        raise Gone from None
    except PermissionError:
        raise Denied from None
    except OSError as exc:
        raise Failed(str(exc)) from None


class ProcfsReader:
    """Linux: read /proc directly, one small file per process per tick."""

    #: Processes younger than this are re-read at every rescan even when already known: a
    #: ``spawn`` worker is called "python" until it has imported torch, seconds after birth.
    YOUNG_S = 30.0
    #: Every this many rescans, re-read every process (names and parents of old processes can
    #: change too, rarely: a late rename, a reparent, a PID reused between two rescans).
    FULL_EVERY = 10
    #: ``/proc/stat``, kept open for `host_cpu` (-1: not open yet).
    _stat_fd: int = -1

    def __init__(self, root: str = PROC_ROOT) -> None:
        self.root = root
        self.clock_ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._cache: dict[int, ProcStat] = {}
        #: pid -> {tid: (thread name, times read)}: see `threads_named`.
        self._threads: dict[int, dict[str, tuple[bytes, int]]] = {}
        self._scans = 0
        try:
            import resource  # Unix only, like procfs

            soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            soft = 1024 if soft == resource.RLIM_INFINITY else soft
        except (ImportError, OSError, ValueError):
            soft = 1024
        #: Kept descriptors, capped well below the fd limit (the live source needs fds too).
        self.max_kept = max(0, min(512, soft // 4))
        self.kept = 0

    def _read(self, path: str) -> bytes:
        with _proc_errors():
            fd = os.open(path, os.O_RDONLY)
        try:
            with _proc_errors():
                return os.read(fd, 4096)
        finally:
            os.close(fd)

    def stat(self, pid: int, handle: object = None) -> ProcStat:
        if isinstance(handle, _StatFile) and handle.fd >= 0:
            with _proc_errors():
                data = os.pread(handle.fd, 4096, 0)
        else:
            data = self._read(f"{self.root}/{pid}/stat")
        if not data:
            raise Gone
        try:
            return parse_proc_stat(data, self.clock_ticks)
        except ParseError as exc:
            raise Failed(str(exc)) from None

    def _boot_s(self) -> float | None:
        """Seconds since boot, the clock of ``/proc/<pid>/stat`` start times."""
        try:
            return time.clock_gettime(time.CLOCK_BOOTTIME)
        except (AttributeError, OSError):
            return None

    def scan(self) -> tuple[dict[int, ProcStat], set[int]]:
        """Every visible process; also the PIDs we could list but not read.

        Listing /proc is cheap (~0.2 ms for 400 processes); reading each one's stat is not
        (~9 µs each). So only new PIDs and young processes are read, except on every
        `FULL_EVERY`-th scan, which reads them all.
        """
        table: dict[int, ProcStat] = {}
        denied: set[int] = set()
        try:
            entries = os.listdir(self.root)
        except OSError:
            return table, denied
        full = self._scans % self.FULL_EVERY == 0
        self._scans += 1
        if full:
            self._threads.clear()
        boot_s = self._boot_s()
        young_after = (boot_s - self.YOUNG_S) * self.clock_ticks if boot_s is not None else None
        cache = self._cache
        for entry in entries:
            if not entry.isdigit():
                continue
            pid = int(entry)
            known = cache.get(pid)
            if (
                known is not None
                and not full
                and young_after is not None
                and known.start < young_after
            ):
                table[pid] = known
                continue
            try:
                table[pid] = self.stat(pid)
            except Denied:
                denied.add(pid)
            except (Gone, Failed):
                continue  # exited between listing and reading, or unreadable garbage
        self._cache = table
        return table, denied

    def cheap_scan(self, limit: int) -> bool:
        """Whether the next `scan` reads only new and young processes (not the first scan,
        not a `FULL_EVERY`-th one) of a table that last had at most ``limit`` processes."""
        return self._scans % self.FULL_EVERY != 0 and len(self._cache) <= limit

    def handle(self, pid: int) -> object:
        """Keep the process's stat file open (within the cap) for cheap re-reads."""
        if self.kept >= self.max_kept:
            return None
        try:
            fd = os.open(f"{self.root}/{pid}/stat", os.O_RDONLY)
        except OSError:
            return None
        self.kept += 1
        return _StatFile(fd)

    def forget(self, pid: int) -> None:
        """This PID's cached figures are wrong (it exited or was reused): read it afresh."""
        self._cache.pop(pid, None)
        self._threads.pop(pid, None)

    def release(self, handle: object) -> None:
        if isinstance(handle, _StatFile) and handle.count:
            self.kept -= handle.count
            handle.close()

    def _kept_read(self, pid: int, handle: object, slot: str, name: str, size: int) -> bytes | None:
        """``/proc/<pid>/<name>`` through the descriptor kept in ``handle.<slot>`` (opened on
        the first read, within the cap), else opened for this read; None when unreadable."""
        if isinstance(handle, _StatFile):
            fd = getattr(handle, slot)
            if fd < 0 and handle.fd >= 0 and self.kept < self.max_kept:
                try:
                    fd = os.open(f"{self.root}/{pid}/{name}", os.O_RDONLY)
                    self.kept += 1
                except OSError:
                    fd = -1
                setattr(handle, slot, fd)
            if fd >= 0:
                try:
                    return os.pread(fd, size, 0)
                except OSError:
                    return None
        try:
            return self._read(f"{self.root}/{pid}/{name}")
        except (Gone, Denied, Failed):
            return None

    def run_delay_s(self, pid: int, handle: object = None) -> float | None:
        """Seconds the process's main thread has spent runnable but waiting for a CPU
        (``/proc/<pid>/schedstat``, second field, in ns); None where the kernel has no
        schedstat (CONFIG_SCHED_INFO off) or the line is not three numbers."""
        return self.sched_counts(pid, handle)[0]

    def sched_counts(self, pid: int, handle: object = None) -> tuple[float | None, int | None]:
        """(run delay s, context switches) of the process's main thread, one read of
        ``/proc/<pid>/schedstat`` (see `parse_schedstat_counts`).

        The main thread's figures: a worker is one thread that matters, and so is the
        trainer's Python loop; summing every thread would need a read per thread.
        """
        data = self._kept_read(pid, handle, "sched_fd", "schedstat", 128)
        return (None, None) if data is None else parse_schedstat_counts(data)

    def io_counters(self, pid: int, handle: object = None) -> ProcIO | None:
        """The process's I/O counters (``/proc/<pid>/io``, every thread's summed by the
        kernel); None where unreadable (another user's process, no task I/O accounting)."""
        data = self._kept_read(pid, handle, "io_fd", "io", 512)
        return None if data is None else parse_proc_io(data)

    def environ(self, pid: int) -> dict[str, str]:
        """The environment the process started with (``/proc/<pid>/environ``); empty where
        it may not be read."""
        path = f"{self.root}/{pid}/environ"
        try:
            with _proc_errors():
                fd = os.open(path, os.O_RDONLY)
            try:
                with _proc_errors():
                    data = os.read(fd, MAX_ENVIRON_BYTES)
            finally:
                os.close(fd)
        except (Gone, Denied, Failed):
            return {}
        return parse_environ(data)

    def threads_named(self, pid: int, name: str) -> list[int]:
        """Thread ids of ``pid`` whose thread name (``comm``) is ``name``.

        A trainer has tens of threads and reading each name costs a file read, so a thread's
        name is read when it first appears and once more at the next rescan (torch names its
        pin-memory thread as the thread starts), then remembered until the next full scan.
        """
        try:
            tids = os.listdir(f"{self.root}/{pid}/task")
        except OSError:
            return []
        known = self._threads.get(pid, {})
        seen: dict[str, tuple[bytes, int]] = {}
        found: list[int] = []
        wanted = name.encode()
        for tid in tids:
            comm, looks = known.get(tid, (b"", 0))
            if looks < 2:
                try:
                    comm = self._read(f"{self.root}/{pid}/task/{tid}/comm").rstrip(b"\n")
                except (Gone, Denied, Failed):
                    continue
                looks += 1
            seen[tid] = (comm, looks)
            if comm == wanted:
                found.append(int(tid))
        self._threads[pid] = seen
        return sorted(found)

    def main_thread_cpu_s(self, pid: int, handle: object = None) -> float | None:
        """CPU seconds of the process's main thread alone (``/proc/<pid>/task/<pid>/stat``,
        through a descriptor kept like ``stat``'s); None where unreadable."""
        data = self._kept_read(pid, handle, "main_fd", f"task/{pid}/stat", 4096)
        if not data:
            return None
        try:
            return parse_proc_stat(data, self.clock_ticks).cpu_s
        except ParseError:
            return None

    def thread_ids(self, pid: int) -> list[int]:
        """The process's thread ids (``/proc/<pid>/task``); empty where unreadable."""
        try:
            return [int(t) for t in os.listdir(f"{self.root}/{pid}/task") if t.isdigit()]
        except OSError:
            return []

    def thread_cpu_s(self, pid: int, tid: int) -> float:
        data = self._read(f"{self.root}/{pid}/task/{tid}/stat")
        try:
            return parse_proc_stat(data, self.clock_ticks).cpu_s
        except ParseError as exc:
            raise Failed(str(exc)) from None

    def cmdline(self, pid: int) -> str:
        try:
            data = self._read(f"{self.root}/{pid}/cmdline")
        except (Gone, Denied, Failed):
            return ""
        return data.replace(b"\0", b" ").decode("utf-8", "replace")

    def host_cpu(self) -> tuple[float, float, float | None]:
        """(total, idle + iowait, iowait) CPU seconds of the host (`_host_totals`).

        The first line of ``/proc/stat``, re-read through a descriptor kept open: the figures
        psutil.cpu_times() gives (the same fields over the same clock ticks), for one
        ``pread`` instead of an open, a buffered read and a close, and no named tuple. Off
        the usual layout, psutil reads it.
        """
        try:
            if self._stat_fd < 0:
                self._stat_fd = os.open(f"{self.root}/stat", os.O_RDONLY)
            line = os.pread(self._stat_fd, 1024, 0).split(b"\n", 1)[0]
            values = line.split()
            if len(values) < 5 or values[0] != b"cpu":
                raise ValueError("not a /proc/stat cpu line")
            ticks = self.clock_ticks
            fields = [float(x) / ticks for x in values[1:len(_CPU_FIELDS) + 1]]
        except (OSError, ValueError):
            return PsutilReader.host_cpu()
        return host_totals(fields, _CPU_FIELDS)

    def close(self) -> None:
        """Close ``/proc/stat`` (reopened by the next `host_cpu`)."""
        self._stat_fd = _close(self._stat_fd)

    def __del__(self) -> None:
        self.close()
