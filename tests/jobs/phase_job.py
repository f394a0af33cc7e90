"""Stand-in jobs for the phases a verdict must not confuse: a hang, and a checkpoint write.

``--mode hang``: the trainer and its workers (children renamed ``pt_data_worker``, as torch
names them) block in ``read(2)`` on pipes nobody writes: no CPU, no I/O, no wake-ups, as a job
hung in a collective or a deadlock. ``--mode checkpoint --device PATH``: the workers block the
same way (their prefetch queues are full) while the trainer writes 1 MiB blocks with
``O_DIRECT`` to ``PATH`` (a throttled block device: it sits in disk wait, ``D``, inside each
write), joining the cgroup whose ``cgroup.procs`` is given first, so the throttle holds from the
first byte. Prints the worker PIDs on one line once they exist; everything ends after
``--max-s`` (SIGALRM) or on SIGTERM, and a worker ends when its trainer does (EOF on its pipe).
"""

from __future__ import annotations

import argparse
import mmap
import os
import signal
import sys

from tests.jobs.fake_tree import fork_workers, kill_workers_on_sigterm, say

BLOCK = 1 << 20


def blocked_worker(read_end: int, write_end: int) -> None:
    """Block in read(2) until the trainer exits (its end of the pipe closes)."""
    os.close(write_end)
    os.read(read_end, 1)


def write_forever(device: str) -> None:
    """O_DIRECT 1 MiB writes, wrapping around the device, until the alarm ends the process."""
    fd = os.open(device, os.O_WRONLY | os.O_DIRECT)
    size = os.lseek(fd, 0, os.SEEK_END)
    buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
    buf.write(b"\xa5" * BLOCK)
    offset = 0
    while True:
        if offset + BLOCK > size:
            offset = 0
        os.pwrite(fd, buf, offset)
        offset += BLOCK


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["hang", "checkpoint"], required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--device", default=None)
    parser.add_argument("--cgroup-procs", default=None)
    parser.add_argument("--max-s", type=int, default=60)
    args = parser.parse_args(argv)
    signal.alarm(args.max_s)  # the default action ends the process
    read_end, write_end = os.pipe()
    children = fork_workers(args.workers, lambda: blocked_worker(read_end, write_end))
    kill_workers_on_sigterm(children)
    if args.cgroup_procs:
        with open(args.cgroup_procs, "w") as f:
            f.write(str(os.getpid()))
    say(" ".join(str(c) for c in children))
    if args.mode == "checkpoint":
        write_forever(args.device)
    else:
        signal.pause()  # blocked, no wake-ups: only a signal ends it
    return 0


if __name__ == "__main__":
    sys.exit(main())
