"""Follow the training process(es) and their DataLoader workers, and measure their CPU live.

The question "is my accelerator starving?" needs the input pipeline's figures beside the
device's: the trainer's CPU %, each DataLoader worker's CPU % and state (``disk-sleep`` means
waiting on I/O), the pin-memory thread, and the host's CPU and iowait. `ProcessMonitor` runs
the tick; who is a trainer and who its workers is `trainer_census`, the rates of one process
kept between ticks `watched_process`, the host's `host_cpu`, what a tick hands on
`process_report`.

Cost (figures from benchmarks/bench_processes.py on the 2-core reference machine): a tick
re-reads one ``/proc/<pid>/stat`` per watched process through a descriptor kept open between
ticks (~3 µs; psutil's ``oneshot()`` + ``cpu_percent()`` + ``status()`` costs ~34 µs per process,
the difference between meeting and missing the 2 ms/tick budget with 72 processes), plus one
read per pin-memory thread and one of ``/proc/stat`` for the host (kept open too). Finding new
workers needs the whole process table (~400 processes, ~4-5 ms to read in full), so it runs
only every ``rescan_s`` seconds, and then reads only new and young processes; every tenth
rescan reads them all. A tick that reads them all is the one the live source runs in a
worker thread (`ProcessMonitor.sample_if_cheap`); the others run on its event loop, sparing
a thread hop. The reading itself is `procfs.ProcfsReader` on Linux and, elsewhere,
`proc_readers.PsutilReader` (reused ``psutil.Process`` objects under ``oneshot()``).

Process states are psutil's words (``running``, ``sleeping``, ``disk-sleep``, ``zombie``...),
plus ``denied`` for a process this account may not read.

Nothing here raises out of `ProcessMonitor.sample`: a process that vanishes is dropped, one we
may not read is marked, zombies are shown as such with no CPU figure, a reused PID is a new
process, and each of these is explained once in ``notes``/``errors``, never every tick.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence

import psutil

from gpusat_tui.host.monitor.cpu_quota import CgroupQuotaReader
from gpusat_tui.host.monitor.host_cpu import HostCpuMeter
from gpusat_tui.host.monitor.proc_readers import Denied, Failed, Gone, PsutilReader
from gpusat_tui.host.monitor.process_report import ProcessReport, SaidOnce
from gpusat_tui.host.monitor.procfs import PROC_ROOT, ProcfsReader
from gpusat_tui.host.monitor.trainer_census import TrainerCensus
from gpusat_tui.host.monitor.watched_process import WatchedProcess
from gpusat_tui.host.scheduler.job_reader import read_job_context
from gpusat_tui.host.scheduler.jobs import merge_jobs
from gpusat_tui.host.scheduler.launch_env import world_of
from gpusat_tui.model import CardProcess, HostSample, JobContext, ProcessRole, ProcessSample

__all__ = ["ProcessMonitor", "ProcessReport"]

#: The most processes on the machine for which a partial rescan is cheap enough for the
#: caller's thread (`ProcessMonitor.sample_if_cheap`).
INLINE_SCAN_MAX = 1000


class ProcessMonitor:
    """Follows the training process(es) and their DataLoader workers; one `sample()` per poll.

    Not thread-safe: one poller owns it (the live source calls `sample_if_cheap` on its
    event loop and, when that declines a full scan, `sample` from a worker thread; never both
    at once).
    """

    def __init__(
        self,
        pids: Sequence[int] = (),
        rescan_s: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        use_procfs: bool | None = None,
        job_reader: Callable[[int], JobContext] | None = None,
    ) -> None:
        self._rescan_s = rescan_s
        self._clock = clock
        if use_procfs is None:  # other systems' /proc (BSD) has another format
            use_procfs = sys.platform.startswith("linux") and os.path.isdir(f"{PROC_ROOT}/self")
        self._reader: ProcfsReader | PsutilReader = (
            ProcfsReader() if use_procfs else PsutilReader()
        )
        self._watched: dict[int, WatchedProcess] = {}
        self._job_reader = job_reader or (lambda pid: read_job_context(pid, PROC_ROOT))
        self._last_scan: float | None = None
        self._dirty = True
        self._last_listing: dict[int, list[str]] = {}
        self._said = SaidOnce()
        self._census = TrainerCensus(
            list(dict.fromkeys(int(p) for p in pids)), self._reader, self._said
        )
        self._host_cpu = HostCpuMeter(psutil.cpu_count())
        #: Each watched process's CPU quota (Linux cgroups; None elsewhere).
        self._quota = CgroupQuotaReader(PROC_ROOT) if use_procfs else None
        #: The clock reading of a tick `sample_if_cheap` left to `sample`.
        self._deferred_now: float | None = None

    # --- public -------------------------------------------------------------------------

    def sample(self, card_processes: Sequence[CardProcess] = ()) -> ProcessReport:
        """One tick: figures of every trainer and worker, the host, and what went wrong."""
        report = ProcessReport()
        now, self._deferred_now = self._deferred_now, None
        self._guarded_tick(card_processes, report, now, cheap_only=False)
        return report

    def sample_if_cheap(
        self, card_processes: Sequence[CardProcess] = ()
    ) -> ProcessReport | None:
        """The tick `sample` would do, unless it reads the whole process table; then None,
        having done nothing.

        A steady tick re-reads the watched processes (µs each), a rescan of new and young
        processes on a table of at most `INLINE_SCAN_MAX` adds a listing of ``/proc`` (~0.5
        ms for 400 processes): both may run on an event loop's thread. A full scan (the first,
        every `ProcfsReader.FULL_EVERY`-th, any through psutil, a bigger table: ms) is left
        to `sample` in a worker thread, which costs a thread hop and two wake-ups (~0.4 ms of
        CPU at 1 Hz on the reference machine). The clock reading of a deferred tick is kept
        for that `sample`.
        """
        report = ProcessReport()
        if not self._guarded_tick(card_processes, report, None, cheap_only=True):
            return None
        return report

    def _guarded_tick(
        self, card_processes: Sequence[CardProcess], report: ProcessReport,
        now: float | None, cheap_only: bool,
    ) -> bool:
        """`_tick` and the host figures, never raising; False when the tick was deferred."""
        try:
            if not self._tick(card_processes, report, now, cheap_only):
                return False
        except Exception as exc:  # a monitor must never take the dashboard down
            self._said.error(report, f"bug:{type(exc).__name__}", "process",
                             f"process monitor failed this tick: {type(exc).__name__}: {exc}")
            self._dirty = True
        try:
            report.host = self._host_cpu.sample(self._reader.host_cpu())
        except Exception:
            report.host = HostSample(cpu_count=self._host_cpu.cpu_count)
        return True

    def close(self) -> None:
        """Close the files kept open between ticks (also done when the monitor is collected)."""
        for w in self._watched.values():
            self._reader.release(w.handle)
        self._reader.close()
        self._watched = {}
        self._dirty = True

    # --- the tick -----------------------------------------------------------------------

    def _tick(
        self, card_processes: Sequence[CardProcess], report: ProcessReport,
        now: float | None = None, cheap_only: bool = False,
    ) -> bool:
        """One tick at ``now`` (None: the clock's); with ``cheap_only``, a tick that would
        scan the whole table is not done (False), its clock reading kept for `sample`."""
        now = self._clock() if now is None else now
        cards_by_pid: dict[int, list[str]] = {}
        for proc in card_processes:
            if proc.pid <= 0:  # some tools print 0 for "no process"
                continue
            ids = cards_by_pid.setdefault(proc.pid, [])
            # An empty card id: a trainer to follow that drives no known card (a probed
            # trainer with no accelerator tool).
            if proc.card_id and proc.card_id not in ids:
                ids.append(proc.card_id)
        # A new job on a card (or one gone) is looked at now, not at the next rescan; the
        # order a tool lists processes in does not matter.
        listing = {pid: sorted(ids) for pid, ids in cards_by_pid.items()}
        if (
            self._dirty
            or self._last_scan is None
            or now - self._last_scan >= self._rescan_s
            or listing != self._last_listing
        ):
            if cheap_only and not self._reader.cheap_scan(INLINE_SCAN_MAX):
                self._deferred_now = now
                return False
            self._rescan(cards_by_pid, now, report)
            self._last_listing = listing
            self._last_scan = now
            self._dirty = False
        report.processes = self._measure(now, report)
        report.jobs = merge_jobs(
            (w.job, w.card_ids) for w in self._watched.values()
            if w.role == "trainer" and w.job is not None
        )
        return True

    def _measure(self, now: float, report: ProcessReport) -> list[ProcessSample]:
        samples: list[ProcessSample] = []
        reader = self._reader
        for pid in list(self._watched):
            w = self._watched[pid]
            try:
                st = reader.stat(pid, w.handle)
            except Gone:
                self._drop(pid, report, "exited")
                continue
            except Denied:
                self._denied(pid, report)
                samples.append(w.blank("denied"))
                continue
            except Failed as exc:
                self._said.error(report, f"failed:{pid}", "process", f"PID {pid}: {exc}")
                samples.append(w.blank(None))
                continue
            if w.start < 0:  # was unreadable when found: this is its identity from now on
                w.start = st.start
            if st.start != w.start:
                # Same number, another process: the one we watched is gone.
                self._drop(pid, report, "exited (its PID now belongs to another process)")
                continue
            if st.state == psutil.STATUS_ZOMBIE:
                self._said.note(report, f"zombie:{pid}:{w.start}",
                                f"PID {pid} ({'trainer' if w.role == 'trainer' else 'worker'}) "
                                "is a zombie: it has exited and its parent has not reaped it; "
                                "no CPU figure.")
            quota = self._quota.figures(pid, w.start, now) if self._quota is not None else None
            samples.append(w.measure(st, reader, now, quota))
        return samples

    def _drop(self, pid: int, report: ProcessReport, why: str) -> None:
        w = self._watched.pop(pid, None)
        self._dirty = True  # the tree changed: look again next tick
        self._reader.forget(pid)
        if w is not None and self._quota is not None:
            self._quota.forget(pid, w.start)
        if w is not None:
            self._reader.release(w.handle)
        if w is not None and w.role == "trainer":
            self._said.note(report, f"gone:{pid}:{w.start}",
                            f"Training process PID {pid} {why}.")

    def _denied(self, pid: int, report: ProcessReport) -> None:
        self._said.error(report, f"denied:{pid}", "denied",
                         f"PID {pid}: access denied (owned by another user?); no CPU figures")
        self._said.note(report, f"denied:{pid}",
                        f"PID {pid} belongs to another user or is protected: its figures are "
                        "hidden from this account (run as that user, or as root, to see them).")

    # --- the rescan ---------------------------------------------------------------------

    def _rescan(
        self, cards_by_pid: dict[int, list[str]], now: float, report: ProcessReport
    ) -> None:
        """Read the process table, take the census of trainers and workers, and follow
        them: a process still watched keeps its record (its baselines and open files)."""
        table, denied = self._reader.scan()
        trainers, workers = self._census.take(table, denied, cards_by_pid, report)
        fresh: dict[int, WatchedProcess] = {}
        for pid, card_ids in trainers.items():
            # A trainer we may not read keeps an unknown identity (-1) and shows as denied.
            start = table[pid].start if pid in table else -1.0
            known = self._watched.get(pid)
            was_trainer = known is not None and known.role == "trainer"
            w = self._keep(pid, start, "trainer", None, card_ids)
            if pid in table:
                w.find_pin_threads(self._reader)
            else:
                w.pin_tids = []
            if w.job is None:
                w.job = self._read_job(pid)
            if (known is not w or not was_trainer) and pid in table:
                # Once per trainer: a launcher sets these before the process starts.
                w.world = world_of(self._reader.environ(pid))
            fresh[pid] = w
        for pid, trainer in sorted(workers.items()):
            if trainer in trainers:
                fresh[pid] = self._keep(
                    pid, table[pid].start, "dataloader_worker", trainer, trainers[trainer]
                )
        # Order: each trainer followed by its workers (by PID), trainers in discovery order.
        ordered: dict[int, WatchedProcess] = {}
        for pid in trainers:
            ordered[pid] = fresh[pid]
            for wpid, w in fresh.items():
                if w.trainer_pid == pid:
                    ordered[wpid] = w
        for pid, old in self._watched.items():
            if ordered.get(pid) is not old:
                self._reader.release(old.handle)
        self._watched = ordered

    def _keep(
        self, pid: int, start: float, role: ProcessRole, trainer: int | None, cards: list[str]
    ) -> WatchedProcess:
        """The existing record when it is the same process (keeps its CPU baseline)."""
        old = self._watched.get(pid)
        if old is not None and old.start == start:
            old.role, old.trainer_pid, old.card_ids = role, trainer, list(cards)
            return old
        return WatchedProcess(
            pid, start, role, trainer, list(cards), handle=self._reader.handle(pid)
        )

    def _read_job(self, pid: int) -> JobContext | None:
        """The trainer's scheduler context (once per trainer); None if reading it failed."""
        try:
            return self._job_reader(pid)
        except Exception:  # a reader bug must not cost the process figures
            return None
