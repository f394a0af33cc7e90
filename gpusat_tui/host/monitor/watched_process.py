"""One process followed from tick to tick: who it is (PID and start time), the handle its
reader keeps open between ticks, and the counters of its last tick that turn this tick's
readings into rates: CPU %, run delay %, I/O and syscalls per second, and, for a trainer, its
pin-memory thread's CPU % and its other threads' (`task_threads`).

A rate needs two readings of the same process: the first tick, a counter that went back (not
the same process or thread) or a changed set of pin-memory threads gives no figure, never a
wrong one. This runs for every watched process at every tick (beside reads of ~3 µs each:
benchmarks/bench_processes.py), so the arithmetic is inline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psutil

from gpusat_tui.host.monitor.cpu_quota import QuotaFigures
from gpusat_tui.host.monitor.proc_readers import (
    Denied,
    Failed,
    Gone,
    ProcIO,
    ProcStat,
    PsutilReader,
)
from gpusat_tui.host.monitor.procfs import ProcfsReader
from gpusat_tui.host.monitor.task_threads import CENSUS_MIN_PCT, ThreadCensus, other_threads_cpu_s
from gpusat_tui.model import JobContext, ProcessRole, ProcessSample

__all__ = ["PIN_THREAD_NAME", "WatchedProcess"]

#: Thread name of the trainer's pin-memory thread.
PIN_THREAD_NAME = "pt_data_pin"


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


@dataclass
class WatchedProcess:
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

    def measure(
        self, st: ProcStat, reader: ProcfsReader | PsutilReader, now: float,
        quota: QuotaFigures | None = None,
    ) -> ProcessSample:
        """This tick's figures of the process ``st`` was just read of (the same one: its
        identity is checked by the caller); this tick's counters become the baselines. A
        zombie has no figures and its baselines are dropped. ``quota``: its cgroup's CPU
        quota this tick (`cpu_quota`)."""
        pid = self.pid
        delay: float | None = None
        progress: tuple[float | None, ...] = (None, None, None, None)
        zombie = st.state == psutil.STATUS_ZOMBIE
        if zombie:
            cpu = None
            self.last_cpu_s = self.last_delay_s = None
            self.last_io, self.last_switches = None, None
        else:
            delay_s, switches = reader.sched_counts(pid, self.handle)
            io = reader.io_counters(pid, self.handle)
            cpu = _pct(st.cpu_s, self.last_cpu_s, now, self.last_t)
            if delay_s is not None:
                delay = _pct(delay_s, self.last_delay_s, now, self.last_t)
                delay = None if delay is None else min(delay, 100.0)
            progress = self._progress(io, switches, now)
            self.last_cpu_s, self.last_t, self.last_delay_s = st.cpu_s, now, delay_s
            self.last_io, self.last_switches = io, switches
        trainer = self.role == "trainer"
        pin = self._pin_pct(reader, now) if trainer else None
        others, busy = (
            self.other_threads(st, reader, now) if trainer and not zombie else (None, None)
        )
        return ProcessSample(
            pid=pid,
            role=self.role,
            name=st.name,
            cpu_pct=cpu,
            state=st.state,
            trainer_pid=self.trainer_pid,
            card_ids=list(self.card_ids),
            pin_cpu_pct=pin,
            num_threads=st.num_threads,
            run_delay_pct=delay,
            rchar_per_s=progress[0],
            wchar_per_s=progress[1],
            syscalls_per_s=progress[2],
            ctx_switches_per_s=progress[3],
            world_size=self.world[0],
            rank=self.world[1],
            other_threads_cpu_pct=others,
            busy_threads=busy,
            cpu_quota_cores=quota.cores if quota is not None else None,
            cpu_throttled_pct=quota.throttled_pct if quota is not None else None,
        )

    def blank(self, state: str | None) -> ProcessSample:
        """The process with no figures (unreadable this tick); ``state`` as shown."""
        return ProcessSample(
            pid=self.pid, role=self.role, name="?", state=state,
            trainer_pid=self.trainer_pid, card_ids=list(self.card_ids),
        )

    def find_pin_threads(self, reader: ProcfsReader | PsutilReader) -> None:
        """Look up the trainer's pin-memory threads (at a rescan); a different set starts a
        new baseline."""
        tids = reader.threads_named(self.pid, PIN_THREAD_NAME)
        if tids != self.pin_tids:
            self.pin_last_cpu_s = None
        self.pin_tids = tids

    def _progress(
        self, io: ProcIO | None, switches: int | None, now: float
    ) -> tuple[float | None, float | None, float | None, float | None]:
        """(rchar/s, wchar/s, syscalls/s, context switches/s) since the last tick (None where
        there is no earlier reading, or a counter went back: not the same process)."""
        then = self.last_t
        if then is None or now <= then:
            return None, None, None, None
        span = now - then
        rchar = wchar = calls = wakes = None
        last = self.last_io
        if io is not None and last is not None:
            d_r, d_w = io.rchar - last.rchar, io.wchar - last.wchar
            d_c = io.syscr + io.syscw - last.syscr - last.syscw
            if d_r >= 0 and d_w >= 0 and d_c >= 0:
                rchar, wchar, calls = d_r / span, d_w / span, d_c / span
        last_switches = self.last_switches
        if switches is not None and last_switches is not None and switches >= last_switches:
            wakes = (switches - last_switches) / span
        return rchar, wchar, calls, wakes

    def other_threads(
        self, st: ProcStat, reader: ProcfsReader | PsutilReader, now: float
    ) -> tuple[float | None, int | None]:
        """(CPU %, busy threads) of the trainer's threads other than its main and pin-memory
        threads (`task_threads`): O(1) for the CPU, a bounded census for the count."""
        main_s = reader.main_thread_cpu_s(self.pid, self.handle)
        if main_s is None:
            self.others_last_s = self.others_last_t = None
            return None, None
        total = other_threads_cpu_s(st.cpu_s, main_s, self.pin_now_s)
        pins = tuple(self.pin_tids)
        if pins != self.others_pins:  # a pin thread came or went: its CPU moved sides
            self.others_pins, self.others_last_s = pins, None
        pct = _pct(total, self.others_last_s, now, self.others_last_t)
        self.others_last_s, self.others_last_t = total, now
        if pct is None:
            return None, None
        census = self.census
        if pct < CENSUS_MIN_PCT:
            if census is not None:
                census.reset()
            return pct, 0
        if census is None:
            census = self.census = ThreadCensus()
        pid = self.pid

        def read(tid: int) -> float | None:
            try:
                return reader.thread_cpu_s(pid, tid)
            except (Gone, Denied, Failed):
                return None

        busy = census.step(lambda: reader.thread_ids(pid), read, now,
                           skip=[pid, *self.pin_tids])
        return pct, busy

    def _pin_pct(self, reader: ProcfsReader | PsutilReader, now: float) -> float | None:
        self.pin_now_s = 0.0
        if not self.pin_tids:
            return None
        total = 0.0
        alive: list[int] = []
        for tid in self.pin_tids:
            try:
                total += reader.thread_cpu_s(self.pid, tid)
                alive.append(tid)
            except (Gone, Denied, Failed):
                continue
        self.pin_now_s = total
        if alive != self.pin_tids:  # a pin thread ended: the baseline no longer adds up
            self.pin_tids = alive
            self.pin_last_cpu_s = None
            if not alive:
                return None
        pct = _pct(total, self.pin_last_cpu_s, now, self.pin_last_t)
        self.pin_last_cpu_s, self.pin_last_t = total, now
        return pct
