"""CPU cost per tick of the process side (gpusat_tui.host.monitor.processes), run by hand.

    python benchmarks/bench_processes.py [--ticks 300] [--machine 400]

Starts fake trainers (tests/jobs/fake_tree.py: a python process forking sleeper children that
rename themselves ``pt_data_worker`` with prctl, as torch does), pads the machine with ``sleep``
processes up to ``--machine`` processes in all, then times ``ProcessMonitor.sample()`` with
``time.process_time`` (this process's CPU, not wall time). The clock given to the monitor
advances 1 s per tick, so with ``rescan_s=3`` every third tick rescans the whole process table
as it would at a 1 s poll interval; steady ticks and rescan ticks are reported apart and
averaged. Everything it starts is killed before it exits.

``--threads-case``: one trainer of 200 threads, two of them burning CPU (as tf.data's or
MindSpore's pipeline threads do), polled every 0.1 s of real time: the cost per poll of
reading its other threads (`host.task_threads`: the CPU from one more ``pread``, the census of
busy threads at most 48 thread reads a poll), against the same monitor with that reading off.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from statistics import mean, median
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

from gpusat_tui.host.monitor.processes import ProcessMonitor  # noqa: E402
from gpusat_tui.host.monitor.procfs import ProcfsReader  # noqa: E402
from gpusat_tui.host.monitor.watched_process import WatchedProcess  # noqa: E402
from gpusat_tui.model import CardProcess  # noqa: E402

FAKE_TREE = ROOT / "tests" / "jobs" / "fake_tree.py"


def start_trainers(count: int, workers: int) -> list[subprocess.Popen[str]]:
    trainers = []
    for _ in range(count):
        proc = subprocess.Popen(
            [sys.executable, str(FAKE_TREE), "--workers", str(workers), "--threads", "16",
             "--max-s", "600"],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True, text=True,
        )
        assert proc.stdout is not None
        proc.stdout.readline()  # the workers' PIDs: they exist
        trainers.append(proc)
    time.sleep(0.5)  # let every child rename itself
    return trainers


def pad_machine(total: int) -> list[subprocess.Popen[bytes]]:
    missing = max(0, total - len(psutil.pids()))
    return [
        subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL, start_new_session=True)
        for _ in range(missing)
    ]


def stop(procs: list[subprocess.Popen[str]] | list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    for proc in procs:
        proc.wait()
        if proc.stdout:
            proc.stdout.close()


def measure(monitor: ProcessMonitor, clock: list[float], ticks: int,
            listed: list[CardProcess]) -> tuple[list[float], list[float], int]:
    """Per-tick CPU ms, split into steady ticks and rescan ticks; processes seen."""
    steady: list[float] = []
    rescans: list[float] = []
    seen = 0
    for i in range(ticks + 3):
        rescan = monitor._last_scan is None or clock[0] - monitor._last_scan >= 3.0
        t0 = time.process_time()
        report = monitor.sample(listed)
        spent = (time.process_time() - t0) * 1000.0
        clock[0] += 1.0
        if i < 3:
            continue  # warm-up: first scans, first baselines
        (rescans if rescan else steady).append(spent)
        seen = len(report.processes)
    return steady, rescans, seen


def run_case(label: str, n_trainers: int, n_workers: int, machine: int, ticks: int) -> None:
    trainers = start_trainers(n_trainers, n_workers)
    padding = pad_machine(machine)
    started = time.monotonic()
    try:
        on_machine = len(psutil.pids())
        pids = [t.pid for t in trainers]
        modes = {
            "--pid": ([], pids),
            "tool-listed": ([CardProcess(pid=p, card_id=f"nvidia:{i}") for i, p in
                             enumerate(pids)], []),
            "auto": ([], []),
        }
        # Processes younger than YOUNG_S are re-read at every rescan (they may still rename
        # themselves): measure once right after start, and once when all are older.
        phases = [("just started", [True]),
                  (f"older than {ProcfsReader.YOUNG_S:.0f} s", [True, False])]
        for phase, readers in phases:
            if phase != "just started":
                time.sleep(max(0.0, ProcfsReader.YOUNG_S + 1.0 - (time.monotonic() - started)))
            for reader in readers:
                for mode, (listed, explicit) in modes.items():
                    if not reader and mode != "--pid":
                        continue
                    clock = [0.0]
                    monitor = ProcessMonitor(pids=explicit, rescan_s=3.0,
                                             clock=lambda c=clock: c[0], use_procfs=reader)
                    steady, rescans, seen = measure(monitor, clock, ticks, listed)
                    monitor.close()
                    every = steady + rescans
                    print(
                        f"{label:<15} {phase:<17} {'procfs' if reader else 'psutil':<6} "
                        f"{mode:<11} procs={on_machine:<4} watched={seen:<3} "
                        f"steady median {median(steady):5.2f} ms, "
                        f"rescan median {median(rescans):5.2f} ms, "
                        f"mean {mean(every):5.2f} ms/tick"
                    )
    finally:
        stop(trainers)
        stop(padding)


THREADED = """
import hashlib, threading, time
data = b"x" * (1 << 20)
def spin():
    while True:
        hashlib.sha256(data).digest()
for _ in range(2):
    threading.Thread(target=spin, daemon=True).start()
for _ in range(197):
    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
print("ready", flush=True)
time.sleep(600)
"""


def run_threads_case(ticks: int) -> None:
    """Per-poll CPU of one trainer of 200 threads, with and without its thread reading."""
    proc = subprocess.Popen([sys.executable, "-c", THREADED], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True, text=True)
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        for label, reading in (("threads off", False), ("threads on", True),
                               ("threads off", False), ("threads on", True)):
            monitor = ProcessMonitor(pids=[proc.pid], rescan_s=1e9)
            switch = (contextlib.nullcontext() if reading else
                      mock.patch.object(WatchedProcess, "other_threads",
                                        lambda *a: (None, None)))
            costs: list[float] = []
            busy = None
            with switch:
                for i in range(ticks + 3):
                    t0 = time.process_time()
                    report = monitor.sample()
                    spent = (time.process_time() - t0) * 1000.0
                    if i >= 3:
                        costs.append(spent)
                    busy = report.processes[0].busy_threads if report.processes else None
                    time.sleep(0.1)
            monitor.close()
            print(f"1 trainer x 200 threads (2 busy), {label:<11}: median {median(costs):5.3f} "
                  f"ms/poll, mean {mean(costs):5.3f}, max {max(costs):5.3f}; busy read {busy}")
    finally:
        stop([proc])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--machine", type=int, default=400, help="processes on the machine")
    parser.add_argument("--threads-case", action="store_true",
                        help="only the 200-thread trainer case")
    args = parser.parse_args()
    if args.threads_case:
        run_threads_case(min(args.ticks, 100))
        return 0
    print(f"python {sys.version.split()[0]}, psutil {psutil.__version__}, "
          f"{psutil.cpu_count()} CPUs, {args.ticks} ticks per case; a tick every (fake) 1 s, "
          "rescan every 3 s; 'mean' includes the rescans")
    run_case("1 trainer x 8", 1, 8, args.machine, args.ticks)
    run_case("8 trainers x 8", 8, 8, args.machine, args.ticks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
