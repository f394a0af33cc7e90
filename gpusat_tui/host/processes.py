"""Find the training process(es) and their DataLoader workers, and measure their CPU live.

The question "is my accelerator starving?" needs the input pipeline's figures beside the
device's: the trainer's CPU %, each DataLoader worker's CPU % and state (``disk-sleep`` means
waiting on I/O), the pin-memory thread, and the host's CPU and iowait.

Who is a trainer, in order:

1. the PIDs given with ``--pid``;
2. else the PIDs the vendor tools list as using a card (each tied to its card ids);
3. else (the tools list none we can see: containers often show host PIDs) every process that
   has ``pt_data_worker`` descendants, i.e. the nearest ancestor of each worker that is
   neither a worker nor a ``multiprocessing`` forkserver.

Workers are the descendants (recursively: under ``forkserver`` they are grandchildren) whose
process name is ``pt_data_worker`` (PyTorch names them so, and its pin-memory thread
``pt_data_pin``) and, under a trainer known by the steps above, the children
``multiprocessing`` made for it whatever their name (forks, spawn and forkserver children:
`host.worker_kinds`), which is how torchdata's, Paddle's, MindSpore's and Grain's workers are
found. A worker belongs to its nearest trainer ancestor, so DDP (one trainer per card,
each with its workers) and launchers (torchrun above the ranks) both come out right.

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
`proc_readers.PsutilReader` (reused ``psutil.Process`` objects under ``oneshot()``); this
module only decides who is who and turns CPU seconds into percentages.

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
from dataclasses import dataclass, field

import psutil

from gpusat_tui.host.job_reader import read_job_context
from gpusat_tui.host.jobs import merge_jobs
from gpusat_tui.host.launch_env import world_of
from gpusat_tui.host.proc_readers import (
    Denied,
    Failed,
    Gone,
    ProcIO,
    ProcStat,
    PsutilReader,
    hidepid_from_mounts,
)
from gpusat_tui.host.procfs import PROC_ROOT, ProcfsReader
from gpusat_tui.host.task_threads import CENSUS_MIN_PCT, ThreadCensus, other_threads_cpu_s
from gpusat_tui.host.worker_kinds import child_kind
from gpusat_tui.model import (
    CardProcess,
    HostSample,
    JobContext,
    ProcessRole,
    ProcessSample,
    ToolError,
)

__all__ = [
    "PIN_THREAD_NAME",
    "WORKER_NAME",
    "ProcessMonitor",
    "ProcessReport",
]

#: Process name torch gives its DataLoader worker processes (``_set_thread_name``).
WORKER_NAME = "pt_data_worker"
#: Thread name of the trainer's pin-memory thread.
PIN_THREAD_NAME = "pt_data_pin"

#: Where the proc mounts are listed (a module constant so a test can point it elsewhere).
MOUNTS_PATH = "/proc/self/mounts"

#: How far up the parent chain a worker's trainer is looked for (launchers nest a few deep).
_MAX_DEPTH = 64
#: The most processes on the machine for which a partial rescan is cheap enough for the
#: caller's thread (`ProcessMonitor.sample_if_cheap`).
INLINE_SCAN_MAX = 1000


@dataclass
class ProcessReport:
    """One tick of the process side, ready to go into a Frame."""

    processes: list[ProcessSample] = field(default_factory=list)
    host: HostSample = field(default_factory=HostSample)
    #: New plain-language notes this tick (each said once per session, not every tick).
    notes: list[str] = field(default_factory=list)
    #: New errors this tick (tool="psutil"; kind "process" or "denied"), each once.
    errors: list[ToolError] = field(default_factory=list)
    #: Whose jobs the watched trainers are (one per job; read when a trainer is first seen).
    jobs: list[JobContext] = field(default_factory=list)


@dataclass
class _Watched:
    """A process we follow from tick to tick (its identity is ``pid`` + ``start``)."""

    pid: int
    start: float
    role: ProcessRole
    trainer_pid: int | None
    card_ids: list[str]
    handle: object = None
    last_cpu_s: float | None = None
    last_t: float | None = None
    #: Trainer only: pin-memory thread ids and their last CPU seconds.
    pin_tids: list[int] = field(default_factory=list)
    pin_last_cpu_s: float | None = None
    pin_last_t: float | None = None
    #: Trainer only: the pin-memory threads' CPU seconds at this tick (0.0: none).
    pin_now_s: float = 0.0
    #: Trainer only: its other threads' CPU seconds and clock at the last tick, and how many
    #: of them are busy (`task_threads`).
    others_last_s: float | None = None
    others_last_t: float | None = None
    others_pins: tuple[int, ...] = ()
    census: ThreadCensus | None = None
    last_delay_s: float | None = None
    #: Trainer only: its scheduler context, read once when it is first seen.
    job: JobContext | None = None
    #: The progress counters at the last tick (None: not read yet, or unreadable).
    last_io: ProcIO | None = None
    last_switches: int | None = None
    #: Trainer only: (world size, rank) from its environment, read once when first watched.
    world: tuple[int | None, int | None] = (None, None)


def _pct(
    cpu_now: float, cpu_then: float | None, t_now: float, t_then: float | None
) -> float | None:
    """CPU % of one core over the interval; None when there is no earlier reading."""
    if cpu_then is None or t_then is None or t_now <= t_then:
        return None
    delta = cpu_now - cpu_then
    if delta < 0:  # counters never go back: not the same process/thread
        return None
    return 100.0 * delta / (t_now - t_then)


def _progress(
    w: _Watched, io: ProcIO | None, switches: int | None, now: float
) -> tuple[float | None, float | None, float | None, float | None]:
    """(rchar/s, wchar/s, syscalls/s, context switches/s) since the last tick (None where
    there is no earlier reading, or a counter went back: not the same process). Inline
    arithmetic: it runs for every watched process at every tick."""
    then = w.last_t
    if then is None or now <= then:
        return None, None, None, None
    span = now - then
    rchar = wchar = calls = wakes = None
    last = w.last_io
    if io is not None and last is not None:
        d_r, d_w = io.rchar - last.rchar, io.wchar - last.wchar
        d_c = io.syscr + io.syscw - last.syscr - last.syscw
        if d_r >= 0 and d_w >= 0 and d_c >= 0:
            rchar, wchar, calls = d_r / span, d_w / span, d_c / span
    if switches is not None and w.last_switches is not None and switches >= w.last_switches:
        wakes = (switches - w.last_switches) / span
    return rchar, wchar, calls, wakes


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
        self._explicit = list(dict.fromkeys(int(p) for p in pids))
        self._rescan_s = rescan_s
        self._clock = clock
        if use_procfs is None:  # other systems' /proc (BSD) has another format
            use_procfs = sys.platform.startswith("linux") and os.path.isdir(f"{PROC_ROOT}/self")
        self._reader: ProcfsReader | PsutilReader = (
            ProcfsReader() if use_procfs else PsutilReader()
        )
        self._watched: dict[int, _Watched] = {}
        self._job_reader = job_reader or (lambda pid: read_job_context(pid, PROC_ROOT))
        self._last_scan: float | None = None
        self._dirty = True
        self._last_listing: dict[int, list[str]] = {}
        #: First identity seen for each explicit --pid: a later process on that PID is not it.
        self._explicit_start: dict[int, float] = {}
        self._forkservers: dict[tuple[int, float], bool] = {}
        self._cmdlines: dict[tuple[int, float], str] = {}
        self._cmdline_once: dict[tuple[int, float], str] = {}
        #: Trainers found by auto-discovery, with their start time: see `_rescan`.
        self._auto_found: dict[int, float] = {}
        self._said: set[str] = set()
        self._host_last: tuple[float, float, float | None] | None = None
        #: The clock reading of a tick `sample_if_cheap` left to `sample`.
        self._deferred_now: float | None = None
        self._cpu_count = psutil.cpu_count()
        self._hidepid = self._read_hidepid()
        self._is_root = hasattr(os, "geteuid") and os.geteuid() == 0

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
            self._error(report, f"bug:{type(exc).__name__}", "process",
                        f"process monitor failed this tick: {type(exc).__name__}: {exc}")
            self._dirty = True
        try:
            report.host = self._host()
        except Exception:
            report.host = HostSample(cpu_count=self._cpu_count)
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
        for pid in list(self._watched):
            w = self._watched[pid]
            try:
                st = self._reader.stat(pid, w.handle)
            except Gone:
                self._drop(pid, report, "exited")
                continue
            except Denied:
                self._denied(pid, report)
                samples.append(self._blank(w, "denied"))
                continue
            except Failed as exc:
                self._error(report, f"failed:{pid}", "process", f"PID {pid}: {exc}")
                samples.append(self._blank(w, None))
                continue
            if w.start < 0:  # was unreadable when found: this is its identity from now on
                w.start = st.start
            if st.start != w.start:
                # Same number, another process: the one we watched is gone.
                self._drop(pid, report, "exited (its PID now belongs to another process)")
                continue
            delay: float | None = None
            progress: tuple[float | None, ...] = (None, None, None, None)
            if st.state == psutil.STATUS_ZOMBIE:
                cpu = None
                w.last_cpu_s = w.last_delay_s = None
                w.last_io, w.last_switches = None, None
                self._note(report, f"zombie:{pid}:{w.start}",
                           f"PID {pid} ({'trainer' if w.role == 'trainer' else 'worker'}) is a "
                           "zombie: it has exited and its parent has not reaped it; no CPU "
                           "figure.")
            else:
                delay_s, switches = self._reader.sched_counts(pid, w.handle)
                io = self._reader.io_counters(pid, w.handle)
                cpu = _pct(st.cpu_s, w.last_cpu_s, now, w.last_t)
                if delay_s is not None:
                    delay = _pct(delay_s, w.last_delay_s, now, w.last_t)
                    delay = None if delay is None else min(delay, 100.0)
                progress = _progress(w, io, switches, now)
                w.last_cpu_s, w.last_t, w.last_delay_s = st.cpu_s, now, delay_s
                w.last_io, w.last_switches = io, switches
            pin = self._pin_pct(w, now) if w.role == "trainer" else None
            others, busy = (
                self._other_threads(w, st, now)
                if w.role == "trainer" and st.state != psutil.STATUS_ZOMBIE else (None, None)
            )
            samples.append(
                ProcessSample(
                    pid=pid,
                    role=w.role,
                    name=st.name,
                    cpu_pct=cpu,
                    state=st.state,
                    trainer_pid=w.trainer_pid,
                    card_ids=list(w.card_ids),
                    pin_cpu_pct=pin,
                    num_threads=st.num_threads,
                    run_delay_pct=delay,
                    rchar_per_s=progress[0],
                    wchar_per_s=progress[1],
                    syscalls_per_s=progress[2],
                    ctx_switches_per_s=progress[3],
                    world_size=w.world[0],
                    rank=w.world[1],
                    other_threads_cpu_pct=others,
                    busy_threads=busy,
                )
            )
        return samples

    def _other_threads(
        self, w: _Watched, st: ProcStat, now: float
    ) -> tuple[float | None, int | None]:
        """(CPU %, busy threads) of the trainer's threads other than its main and pin-memory
        threads (`task_threads`): O(1) for the CPU, a bounded census for the count."""
        main_s = self._reader.main_thread_cpu_s(w.pid, w.handle)
        if main_s is None:
            w.others_last_s = w.others_last_t = None
            return None, None
        total = other_threads_cpu_s(st.cpu_s, main_s, w.pin_now_s)
        pins = tuple(w.pin_tids)
        if pins != w.others_pins:  # a pin thread came or went: its CPU moved sides
            w.others_pins, w.others_last_s = pins, None
        pct = _pct(total, w.others_last_s, now, w.others_last_t)
        w.others_last_s, w.others_last_t = total, now
        if pct is None:
            return None, None
        census = w.census
        if pct < CENSUS_MIN_PCT:
            if census is not None:
                census.reset()
            return pct, 0
        if census is None:
            census = w.census = ThreadCensus()
        reader = self._reader

        def read(tid: int) -> float | None:
            try:
                return reader.thread_cpu_s(w.pid, tid)
            except (Gone, Denied, Failed):
                return None

        busy = census.step(lambda: reader.thread_ids(w.pid), read, now,
                           skip=[w.pid, *w.pin_tids])
        return pct, busy

    def _pin_pct(self, w: _Watched, now: float) -> float | None:
        w.pin_now_s = 0.0
        if not w.pin_tids:
            return None
        total = 0.0
        alive: list[int] = []
        for tid in w.pin_tids:
            try:
                total += self._reader.thread_cpu_s(w.pid, tid)
                alive.append(tid)
            except (Gone, Denied, Failed):
                continue
        w.pin_now_s = total
        if alive != w.pin_tids:  # a pin thread ended: the baseline no longer adds up
            w.pin_tids = alive
            w.pin_last_cpu_s = None
            if not alive:
                return None
        pct = _pct(total, w.pin_last_cpu_s, now, w.pin_last_t)
        w.pin_last_cpu_s, w.pin_last_t = total, now
        return pct

    @staticmethod
    def _blank(w: _Watched, state: str | None) -> ProcessSample:
        return ProcessSample(
            pid=w.pid, role=w.role, name="?", state=state,
            trainer_pid=w.trainer_pid, card_ids=list(w.card_ids),
        )

    def _drop(self, pid: int, report: ProcessReport, why: str) -> None:
        w = self._watched.pop(pid, None)
        self._dirty = True  # the tree changed: look again next tick
        self._reader.forget(pid)
        if w is not None:
            self._reader.release(w.handle)
        if w is not None and w.role == "trainer":
            self._note(report, f"gone:{pid}:{w.start}", f"Training process PID {pid} {why}.")

    def _denied(self, pid: int, report: ProcessReport) -> None:
        self._error(report, f"denied:{pid}", "denied",
                    f"PID {pid}: access denied (owned by another user?); no CPU figures")
        self._note(report, f"denied:{pid}",
                   f"PID {pid} belongs to another user or is protected: its figures are hidden "
                   "from this account (run as that user, or as root, to see them).")

    # --- discovery ----------------------------------------------------------------------

    def _rescan(
        self, cards_by_pid: dict[int, list[str]], now: float, report: ProcessReport
    ) -> None:
        table, denied = self._reader.scan()
        trainers = self._find_trainers(table, denied, cards_by_pid, report)
        if trainers:
            workers = self._workers_of(table, trainers)
        elif not self._explicit:
            trainers, workers = self._auto(table)
            # Once found, a trainer stays watched while it lives, even between epochs when
            # its workers are gone (persistent_workers=False) or during validation.
            for pid, start in list(self._auto_found.items()):
                st = table.get(pid)
                if st is None or st.start != start:
                    del self._auto_found[pid]
                elif pid not in trainers:
                    trainers[pid] = []
            for pid in trainers:
                self._auto_found.setdefault(pid, table[pid].start)
            trainers = {pid: list(cards_by_pid.get(pid, [])) for pid in sorted(trainers)}
            # Beside its pt_data_workers, a trainer's unnamed multiprocessing workers.
            for pid, trainer in self._workers_of(table, trainers).items():
                workers.setdefault(pid, trainer)
        else:
            workers = {}
        # A tool-listed "trainer" that is itself somebody's worker is a worker.
        for pid in workers:
            trainers.pop(pid, None)
        hidden = len(denied - set(trainers))
        if hidden:
            self._note(report, "scan-denied",
                       f"{hidden} processes on this machine cannot be read from this account"
                       + self._hidepid_hint() + "; workers among them would be missed.")

        fresh: dict[int, _Watched] = {}
        for pid, card_ids in trainers.items():
            # A trainer we may not read keeps an unknown identity (-1) and shows as denied.
            start = table[pid].start if pid in table else -1.0
            known = self._watched.get(pid)
            was_trainer = known is not None and known.role == "trainer"
            w = self._keep(pid, start, "trainer", None, card_ids)
            w.pin_tids = self._pin_threads(w) if pid in table else []
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
        ordered: dict[int, _Watched] = {}
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
    ) -> _Watched:
        """The existing record when it is the same process (keeps its CPU baseline)."""
        old = self._watched.get(pid)
        if old is not None and old.start == start:
            old.role, old.trainer_pid, old.card_ids = role, trainer, list(cards)
            return old
        return _Watched(pid, start, role, trainer, list(cards), handle=self._reader.handle(pid))

    def _read_job(self, pid: int) -> JobContext | None:
        """The trainer's scheduler context (once per trainer); None if reading it failed."""
        try:
            return self._job_reader(pid)
        except Exception:  # a reader bug must not cost the process figures
            return None

    def _pin_threads(self, w: _Watched) -> list[int]:
        tids = self._reader.threads_named(w.pid, PIN_THREAD_NAME)
        if tids != w.pin_tids:
            w.pin_last_cpu_s = None  # a different thread set: start a new baseline
        return tids

    def _find_trainers(
        self, table: dict[int, ProcStat], denied: set[int],
        cards_by_pid: dict[int, list[str]], report: ProcessReport,
    ) -> dict[int, list[str]]:
        """Explicit --pid first, else the tool-listed PIDs we can see (empty: go auto)."""
        trainers: dict[int, list[str]] = {}
        if self._explicit:
            for pid in self._explicit:
                st = table.get(pid)
                if pid in denied:
                    trainers[pid] = list(cards_by_pid.get(pid, []))
                    continue
                if st is None:
                    self._error(report, f"missing:{pid}", "process",
                                f"PID {pid} given with --pid is not running or not visible here"
                                + self._hidepid_hint())
                    continue
                first = self._explicit_start.setdefault(pid, st.start)
                if first != st.start:
                    self._note(report, f"reused:{pid}",
                               f"PID {pid} given with --pid has exited; that number now belongs "
                               "to another process, which is not watched.")
                    continue
                trainers[pid] = list(cards_by_pid.get(pid, []))
            return trainers
        for pid, card_ids in cards_by_pid.items():
            if pid in table or pid in denied:
                trainers[pid] = list(card_ids)
            else:
                self._note(report, f"invisible:{pid}",
                           f"PID {pid} listed by the accelerator tool on {', '.join(card_ids)} "
                           "is not visible here (other PID namespace?"
                           + self._hidepid_hint(inner=True) + ")")
        return trainers

    def _workers_of(
        self, table: dict[int, ProcStat], trainers: dict[int, list[str]]
    ) -> dict[int, int]:
        """Worker PID -> its nearest trainer ancestor: the ``pt_data_worker``s anywhere below
        it, and the children ``multiprocessing`` made for it whatever their name
        (`worker_kinds.child_kind`: torchdata's, Paddle's, MindSpore's, Grain's workers)."""
        workers: dict[int, int] = {}
        children: dict[int, list[int]] = {}
        for pid, st in table.items():
            children.setdefault(st.ppid, []).append(pid)
            if st.name != WORKER_NAME:
                continue
            parent = st.ppid
            for _ in range(_MAX_DEPTH):
                if parent in trainers:
                    workers[pid] = parent
                    break
                above = table.get(parent)
                if above is None or parent <= 1:
                    break
                parent = above.ppid
        for trainer in trainers:
            if trainer not in table:
                continue
            trainer_cmd = self._cmdline(trainer, table[trainer])
            below = [(pid, True) for pid in children.get(trainer, ())]
            while below:
                pid, direct = below.pop()
                if pid in trainers or pid in workers:
                    continue
                st = table[pid]
                kind = child_kind(st.name, self._cmdline(pid, st), trainer_cmd, direct)
                if kind == "worker":
                    workers[pid] = trainer
                elif kind == "forkserver" and direct:
                    below.extend((child, False) for child in children.get(pid, ()))
        return workers

    def _cmdline(self, pid: int, st: ProcStat) -> str:
        """A process's command line, read once per process (PID and start time)."""
        key = (pid, st.start)
        known = self._cmdlines.get(key)
        if known is not None:
            return known
        text = self._reader.cmdline(pid)
        # Kept from the second read on: a child caught between fork and exec still shows its
        # parent's command line (or none), and would pass for a fork of the trainer forever.
        if self._cmdline_once.pop(key, None) == text and text:
            if len(self._cmdlines) > 4096:
                self._cmdlines.clear()
            self._cmdlines[key] = text
        else:
            if len(self._cmdline_once) > 4096:
                self._cmdline_once.clear()
            self._cmdline_once[key] = text
        return text

    def _auto(self, table: dict[int, ProcStat]) -> tuple[dict[int, list[str]], dict[int, int]]:
        """No trainer given or listed: the nearest real ancestor of every worker."""
        trainers: dict[int, list[str]] = {}
        workers: dict[int, int] = {}
        for pid, st in table.items():
            if st.name != WORKER_NAME:
                continue
            parent = st.ppid
            for _ in range(_MAX_DEPTH):
                above = table.get(parent)
                if above is None or parent <= 1:
                    break
                if above.name == WORKER_NAME or self._is_forkserver(parent, above):
                    parent = above.ppid
                    continue
                trainers.setdefault(parent, [])
                workers[pid] = parent
                break
        return dict(sorted(trainers.items())), workers

    def _is_forkserver(self, pid: int, st: ProcStat) -> bool:
        """A ``multiprocessing`` forkserver stands between a trainer and its workers."""
        key = (pid, st.start)
        known = self._forkservers.get(key)
        if known is None:
            known = "multiprocessing.forkserver" in self._reader.cmdline(pid)
            if len(self._forkservers) > 1024:
                self._forkservers.clear()
            self._forkservers[key] = known
        return known

    # --- host -------------------------------------------------------------------------

    def _host(self) -> HostSample:
        """Host CPU % and iowait % since the previous tick, from our own baseline.

        psutil.cpu_percent(None) keeps one module-wide baseline that any other caller in the
        process would reset; our own keeps the interval exactly one tick.
        """
        total, idle, iowait = self._reader.host_cpu()
        last = self._host_last
        self._host_last = (total, idle, iowait)
        if last is None:
            return HostSample(cpu_count=self._cpu_count)
        d_total = total - last[0]
        if d_total <= 0:
            return HostSample(cpu_count=self._cpu_count)
        busy = d_total - (idle - last[1])
        io_pct = None
        if iowait is not None and last[2] is not None:
            io_pct = max(0.0, min(100.0, 100.0 * (iowait - last[2]) / d_total))
        return HostSample(
            cpu_pct=max(0.0, min(100.0, 100.0 * busy / d_total)),
            iowait_pct=io_pct,
            cpu_count=self._cpu_count,
        )

    # --- notes ------------------------------------------------------------------------

    @staticmethod
    def _read_hidepid() -> str | None:
        try:
            with open(MOUNTS_PATH, encoding="utf-8", errors="replace") as fh:
                return hidepid_from_mounts(fh.read(), PROC_ROOT)
        except OSError:
            return None

    def _hidepid_hint(self, inner: bool = False) -> str:
        if self._hidepid is None or self._is_root:
            return ""
        text = (f"/proc is mounted with hidepid={self._hidepid}, which hides other users' "
                "processes")
        return f"; {text}" if inner else f" ({text})"

    def _note(self, report: ProcessReport, key: str, text: str) -> None:
        if key not in self._said:
            self._said.add(key)
            report.notes.append(text)

    def _error(self, report: ProcessReport, key: str, kind: str, message: str) -> None:
        key = "error:" + key
        if key not in self._said:
            self._said.add(key)
            report.errors.append(ToolError(tool="psutil", message=message, kind=kind))
