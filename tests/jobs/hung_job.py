"""A hung training stand-in with no probe: its main thread blocks for good in
``threading.Event().wait()`` (as a rank waits on a peer that never answers) while a second
thread wakes once a second (a watchdog or monitoring thread). No read or write: its counters
stay flat, so a monitor sees a stall. With ``--heartbeat-file PATH`` the second thread appends
a record to that file each second in `RECORD_WRITES` unbuffered writes (a logger's or a
watchdog's heartbeat): its read/write counters move while the main thread stays blocked.

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


WAIT_LINE = 36


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-s", type=float, default=120.0)
    parser.add_argument("--heartbeat-file", default=None)
    args = parser.parse_args()
    deadline = time.monotonic() + args.max_s
    threading.Thread(target=heartbeat, args=(deadline, args.heartbeat_file), name="heartbeat",
                     daemon=True).start()
    print("ready", flush=True)
    wait_for_peer(threading.Event())


if __name__ == "__main__":
    main()
