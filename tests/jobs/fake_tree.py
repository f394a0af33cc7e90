"""A cheap stand-in for a training process: forks children named ``pt_data_worker``.

No torch: used where the tree shape matters more than real DataLoader behaviour (bad cases,
several trainers at once, the pin-memory thread, the benchmark with hundreds of processes).
Children rename themselves with ``prctl(PR_SET_NAME)`` exactly as torch does, then burn CPU or
sleep. ``--pin burn|idle`` starts a thread named ``pt_data_pin`` in the parent. Everything exits
after ``--max-s`` or when the parent dies, so a crashed test leaves nothing behind for long.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

PR_SET_NAME = 15


def set_name(name: str) -> None:
    """Rename the calling thread (the process, when called from its main thread)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()), 0, 0, 0)


def say(line: str) -> None:
    """Write ``line`` and its newline to stdout in ONE write(2).

    ``print`` makes two writes (the text, then ``end``) when stdout is unbuffered, as it is
    under ``PYTHONUNBUFFERED=1`` (common in CI images). Two trees started by one launcher
    share a pipe, and their PID lines then interleave ("2659 2660" + "2663\n" + "\n"). A
    single write of a line under PIPE_BUF bytes reaches a pipe whole.
    """
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def spin_or_sleep(burn: bool, deadline: float, parent: int) -> None:
    while time.monotonic() < deadline and os.getppid() == parent:
        if burn:
            end = time.perf_counter() + 0.05
            while time.perf_counter() < end:
                pass
        else:
            time.sleep(0.2)


def fork_workers(count: int, body: Callable[[], None]) -> list[int]:
    """Fork ``count`` children named ``pt_data_worker`` (as torch names them), each running
    ``body`` then exiting; returns their PIDs once every child carries that name.

    A child renames itself when it first runs: on a loaded machine that can be long after the
    fork, and a PID list printed before it reads as a trainer with unnamed children (a monitor
    that scanned the tree then saw no worker at all)."""
    children: list[int] = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            set_name("pt_data_worker")
            try:
                body()
            finally:
                os._exit(0)
        children.append(pid)
    wait_named(children, "pt_data_worker")
    return children


def wait_named(pids: list[int], name: str, timeout: float = 60.0) -> None:
    """Return once every process of ``pids`` is named ``name`` (or has ended)."""
    deadline = time.monotonic() + timeout
    waiting = list(pids)
    while waiting and time.monotonic() < deadline:
        still = []
        for pid in waiting:
            try:
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue  # ended already
            if comm != name:
                still.append(pid)
        waiting = still
        if waiting:
            time.sleep(0.005)


def kill_workers(children: list[int]) -> None:
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


def kill_workers_on_sigterm(children: list[int]) -> None:
    """On SIGTERM, SIGKILL the workers, then exit: a test's kill takes the whole tree."""

    def terminate(_signo: int, _frame: object) -> None:
        kill_workers(children)
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, terminate)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--burn", action="store_true", help="workers spin instead of sleeping")
    parser.add_argument("--pin", default="none", choices=["none", "idle", "burn"])
    parser.add_argument("--max-s", type=float, default=30.0)
    parser.add_argument("--threads", type=int, default=0, help="extra idle threads (a real "
                        "trainer has tens: intra-op pool, queue feeders...)")
    args = parser.parse_args(argv)
    deadline = time.monotonic() + args.max_s
    me = os.getpid()
    children = fork_workers(args.workers, lambda: spin_or_sleep(args.burn, deadline, me))
    kill_workers_on_sigterm(children)
    if args.pin != "none":
        def pin() -> None:
            set_name("pt_data_pin")
            spin_or_sleep(args.pin == "burn", deadline, os.getppid())

        threading.Thread(target=pin, daemon=True).start()
    for _ in range(args.threads):
        threading.Thread(target=threading.Event().wait, args=(args.max_s,), daemon=True).start()
    say(" ".join(str(c) for c in children))
    # Reap children as they exit (a killed worker must vanish, not linger as a zombie).
    while children and time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid in children:
            children.remove(pid)
    if time.monotonic() < deadline and not children:
        time.sleep(max(0.0, deadline - time.monotonic()))  # stay a trainer with no workers
    return 0


if __name__ == "__main__":
    sys.exit(main())
