"""Which processes on this machine are trainers and which are their DataLoader workers,
decided at each rescan from the whole process table.

Who is a trainer, in order:

1. the PIDs given with ``--pid``;
2. else the PIDs the vendor tools list as using a card (each tied to its card ids);
3. else (the tools list none we can see: containers often show host PIDs) every process that
   has ``pt_data_worker`` descendants, i.e. the nearest ancestor of each worker that is
   neither a worker nor a ``multiprocessing`` forkserver. Once found, such a trainer stays one
   while it lives, even between epochs when its workers are gone.

Workers are the descendants (recursively: under ``forkserver`` they are grandchildren) whose
process name is ``pt_data_worker`` (PyTorch names them so) and, under a trainer known by the
steps above, the children ``multiprocessing`` made for it whatever their name (forks, spawn and
forkserver children: `host.worker_kinds`), which is how torchdata's, Paddle's, MindSpore's and
Grain's workers are found. A worker belongs to its nearest trainer ancestor, so DDP (one
trainer per card, each with its workers) and launchers (torchrun above the ranks) both come
out right.

What it costs: the table is the reader's (`ProcfsReader.scan`); here a ``cmdline`` read per
new child of a trainer (read again at the next rescan before it is trusted: a child caught
between fork and exec still shows its parent's) and one per ancestor of an auto-found worker,
cached by PID and start time (a few thousand entries at most). What cannot be seen is said
once: a ``--pid`` that is not running or was reused, a tool-listed PID from another PID
namespace, processes this account may not read (with the ``hidepid`` mount option that hides
them, when it is set).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from gpusat_tui.host.monitor.proc_readers import ProcStat, PsutilReader, hidepid_from_mounts
from gpusat_tui.host.monitor.process_report import ProcessReport, SaidOnce
from gpusat_tui.host.monitor.procfs import PROC_ROOT, ProcfsReader
from gpusat_tui.host.monitor.worker_kinds import child_kind

__all__ = ["MOUNTS_PATH", "WORKER_NAME", "TrainerCensus"]

#: Process name torch gives its DataLoader worker processes (``_set_thread_name``).
WORKER_NAME = "pt_data_worker"

#: Where the proc mounts are listed (a module constant so a test can point it elsewhere).
MOUNTS_PATH = "/proc/self/mounts"

#: How far up the parent chain a worker's trainer is looked for (launchers nest a few deep).
_MAX_DEPTH = 64


def _read_hidepid() -> str | None:
    try:
        with open(MOUNTS_PATH, encoding="utf-8", errors="replace") as fh:
            return hidepid_from_mounts(fh.read(), PROC_ROOT)
    except OSError:
        return None


class TrainerCensus:
    """Tells trainers and workers apart in a process table; keeps, between rescans, the
    command lines it read, the forkservers it found and the trainers it auto-found."""

    def __init__(
        self, explicit: Sequence[int], reader: ProcfsReader | PsutilReader, said: SaidOnce
    ) -> None:
        self._explicit = list(explicit)
        self._reader = reader
        self._said = said
        #: First identity seen for each explicit --pid: a later process on that PID is not it.
        self._explicit_start: dict[int, float] = {}
        self._forkservers: dict[tuple[int, float], bool] = {}
        self._cmdlines: dict[tuple[int, float], str] = {}
        self._cmdline_once: dict[tuple[int, float], str] = {}
        #: Trainers found by auto-discovery, with their start time: see `take`.
        self._auto_found: dict[int, float] = {}
        self._hidepid = _read_hidepid()
        self._is_root = hasattr(os, "geteuid") and os.geteuid() == 0

    def take(
        self, table: dict[int, ProcStat], denied: set[int],
        cards_by_pid: dict[int, list[str]], report: ProcessReport,
    ) -> tuple[dict[int, list[str]], dict[int, int]]:
        """(trainer PID -> its card ids, in discovery order; worker PID -> its trainer) from
        ``table`` (the readable processes) and ``denied`` (those this account may not read);
        what could not be seen goes, once, on ``report``."""
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
            self._said.note(report, "scan-denied",
                            f"{hidden} processes on this machine cannot be read from this "
                            "account" + self._hidepid_hint()
                            + "; workers among them would be missed.")
        return trainers, workers

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
                    self._said.error(
                        report, f"missing:{pid}", "process",
                        f"PID {pid} given with --pid is not running or not visible here"
                        + self._hidepid_hint())
                    continue
                first = self._explicit_start.setdefault(pid, st.start)
                if first != st.start:
                    self._said.note(
                        report, f"reused:{pid}",
                        f"PID {pid} given with --pid has exited; that number now belongs "
                        "to another process, which is not watched.")
                    continue
                trainers[pid] = list(cards_by_pid.get(pid, []))
            return trainers
        for pid, card_ids in cards_by_pid.items():
            if pid in table or pid in denied:
                trainers[pid] = list(card_ids)
            else:
                self._said.note(
                    report, f"invisible:{pid}",
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

    def _hidepid_hint(self, inner: bool = False) -> str:
        if self._hidepid is None or self._is_root:
            return ""
        text = (f"/proc is mounted with hidepid={self._hidepid}, which hides other users' "
                "processes")
        return f"; {text}" if inner else f" ({text})"
