"""A hung training stand-in with no probe: its main thread blocks for good in
``threading.Event().wait()`` (as a rank waits on a peer that never answers) while a second
thread wakes once a second (a watchdog or monitoring thread). No read or write: its counters
stay flat, so a monitor sees a stall. With ``--heartbeat-file PATH`` the second thread appends
a record to that file each second in `RECORD_WRITES` unbuffered writes (a logger's or a
watchdog's heartbeat): its read/write counters move while the main thread stays blocked.
With ``--workers N`` it first forks N children named ``pt_data_worker`` (as DataLoader workers
are: the process census finds the job by them), which sleep, or spin with ``--workers-burn``
(a slow input pipeline the blocked main thread waits on: not a stall).

Prints ``ready`` once both threads run; exits after ``--max-s`` (default 120 s), so a crashed
test leaves nothing behind for long. `WAIT_LINE` is the line the main thread waits on.
"""

from __future__ import annotations

import argparse
import os
import threading
import time

#: Writes per heartbeat record: over `progress_syscalls_per_s` a second, as a real one was seen.
RECORD_WRITES = 12


def heartbeat(deadline: float, path: str | None) -> None:
    beat = 0
    while time.monotonic() < deadline:
        time.sleep(1.0)
        if path is not None:
            beat += 1
            with open(path, "ab", buffering=0) as log:
                for field in range(RECORD_WRITES):
                    log.write(f"beat {beat} field {field}\n".encode())
    os._exit(0)


def wait_for_peer(event: threading.Event) -> None:
    event.wait()  # the line a stack dump must name (WAIT_LINE)


WAIT_LINE = 39


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-s", type=float, default=120.0)
    parser.add_argument("--heartbeat-file", default=None)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--workers-burn", action="store_true")
    args = parser.parse_args()
    deadline = time.monotonic() + args.max_s
    if args.workers:
        from fake_tree import fork_workers, spin_or_sleep  # run as a script: tests/jobs/

        me = os.getpid()
        fork_workers(args.workers, lambda: spin_or_sleep(args.workers_burn, deadline, me))
    threading.Thread(target=heartbeat, args=(deadline, args.heartbeat_file), name="heartbeat",
                     daemon=True).start()
    print("ready", flush=True)
    wait_for_peer(threading.Event())


if __name__ == "__main__":
    main()
