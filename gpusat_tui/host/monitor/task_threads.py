"""The trainer's own threads: how much CPU its threads other than the main one use, and how
many of them are busy, for input pipelines that run in threads inside the trainer.

tf.data's C++ runtime and MindSpore's dataset pipeline (``num_parallel_workers`` without
``python_multiprocessing``) load in threads of the trainer, not in worker processes, and on
the installed packages (TensorFlow 2.21, MindSpore 2.10, Linux) those threads carry no name of
their own: they keep the interpreter's (``python``), like the main thread. So they are told
apart by what they are not: every thread but the main one and torch's pin-memory thread.

Two costs, kept apart:

- the CPU of all other threads together is the process's CPU (``/proc/<pid>/stat``, read each
  tick already) less the main thread's (``/proc/<pid>/task/<pid>/stat``, one more ``pread``
  through a descriptor kept open, ~3 µs) less the pin-memory thread's: O(1) per trainer,
  whatever its thread count, so it is read for every trainer;
- how many threads share that CPU needs one read per thread (7-12 µs each). `ThreadCensus`
  reads at most `CENSUS_BATCH` threads per tick, round robin, listing them once a round, and
  only while the other threads use at least `CENSUS_MIN_PCT` of a core together (below that,
  no thread can be busy): see docs/benchmarks.md for what a trainer of 200 threads costs.

What it cannot tell: any other busy thread of the trainer (an OpenMP pool of a model running
on the CPU, NCCL's proxy threads) counts too; the verdict calls them the input pipeline only
where the trainer's probe names a framework whose pipeline runs in threads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from gpusat_tui.errors import ParseError
from gpusat_tui.host.monitor.procfs import parse_proc_stat

__all__ = [
    "BUSY_THREAD_PCT",
    "CENSUS_BATCH",
    "CENSUS_MIN_PCT",
    "ThreadCensus",
    "ThreadReading",
    "other_threads_cpu_s",
    "parse_task_stat",
]

#: A thread using at least this share of one core (percent) over its last interval is busy.
BUSY_THREAD_PCT = 10.0
#: Threads read per trainer per tick by the census (bounds a poll's cost: 7-12 µs a thread).
CENSUS_BATCH = 16
#: Below this CPU of the other threads together (percent of a core) no census runs.
CENSUS_MIN_PCT = BUSY_THREAD_PCT


class ThreadReading(NamedTuple):
    """One ``/proc/<pid>/task/<tid>/stat`` read: the thread, its name and CPU seconds."""

    tid: int
    name: str
    cpu_s: float


def parse_task_stat(data: bytes, clock_ticks: int = 100) -> ThreadReading:
    """A thread's stat line (the same layout as a process's: `procfs.parse_proc_stat`, whose
    name field is the thread's ``comm``); ParseError on anything else."""
    stat = parse_proc_stat(data, clock_ticks)
    head = data[: data.find(b"(")].strip()
    try:
        tid = int(head)
    except ValueError:
        raise ParseError(f"no thread id in a /proc stat line: {data[:40]!r}") from None
    return ThreadReading(tid, stat.name, stat.cpu_s)


def other_threads_cpu_s(
    process_cpu_s: float, main_cpu_s: float, pin_cpu_s: float = 0.0
) -> float:
    """CPU seconds of every thread but the main one and the pin-memory thread(s): the
    process's total (the kernel keeps exited threads' time in it) less theirs."""
    return max(0.0, process_cpu_s - main_cpu_s - pin_cpu_s)


class ThreadCensus:
    """How many of a trainer's other threads are busy, read a batch of threads per tick.

    The thread list (a directory listing: ~150 µs for 200 threads) is read once per round, when
    every thread of the last one was read; each thread's rate is over its own interval between
    two of its reads (one round: a tick for a trainer of up to `CENSUS_BATCH` threads, a dozen
    for one of 200). ``skip``: thread ids never counted (the main thread, pin-memory threads).
    """

    __slots__ = ("_cursor", "_last", "_round")

    def __init__(self) -> None:
        #: tid -> (cpu seconds, time read, rate % at the last read or None).
        self._last: dict[int, tuple[float, float, float | None]] = {}
        #: The threads of this round, in order, and how many of them were read.
        self._round: list[int] = []
        self._cursor = 0

    def reset(self) -> None:
        """Forget every thread (the other threads went quiet: none can be busy)."""
        self._last.clear()
        self._round = []
        self._cursor = 0

    def step(
        self,
        list_tids: Callable[[], Iterable[int]],
        read: Callable[[int], float | None],
        now: float,
        skip: Iterable[int] = (),
        batch: int = CENSUS_BATCH,
    ) -> int | None:
        """Read the next ``batch`` threads (CPU seconds through ``read``; None: gone), listing
        them through ``list_tids`` at a round's start, and return how many are busy; None
        until one has two readings."""
        last = self._last
        if self._cursor >= len(self._round):
            skipped = set(skip)
            self._round = sorted(t for t in list_tids() if t not in skipped)
            self._cursor = 0
            listed = set(self._round)
            for gone in [t for t in last if t not in listed]:
                del last[gone]
            if not self._round:
                return 0
        chosen = self._round[self._cursor:self._cursor + batch]
        self._cursor += len(chosen)
        for tid in chosen:
            cpu = read(tid)
            if cpu is None:
                last.pop(tid, None)
                continue
            before = last.get(tid)
            rate: float | None = None
            if before is not None and now > before[1] and cpu >= before[0]:
                rate = 100.0 * (cpu - before[0]) / (now - before[1])
            last[tid] = (cpu, now, rate)
        rates = [r for _, _, r in last.values() if r is not None]
        if not rates:
            return None
        return sum(r >= BUSY_THREAD_PCT for r in rates)
