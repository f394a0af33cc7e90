"""A hung training stand-in with no probe: its main thread blocks for good in
``threading.Event().wait()`` (as a rank waits on a peer that never answers) while a second
thread wakes once a second (a watchdog or monitoring thread). No read or write: its counters
stay flat, so a monitor sees a stall.

Prints ``ready`` once both threads run; exits after ``--max-s`` (default 120 s), so a crashed
test leaves nothing behind for long. `WAIT_LINE` is the line the main thread waits on.
"""

from __future__ import annotations

import argparse
import os
import threading
import time


def heartbeat(deadline: float) -> None:
    while time.monotonic() < deadline:
        time.sleep(1.0)
    os._exit(0)


def wait_for_peer(event: threading.Event) -> None:
    event.wait()  # the line a stack dump must name (WAIT_LINE)


WAIT_LINE = 25


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-s", type=float, default=120.0)
    args = parser.parse_args()
    deadline = time.monotonic() + args.max_s
    threading.Thread(target=heartbeat, args=(deadline,), name="heartbeat", daemon=True).start()
    print("ready", flush=True)
    wait_for_peer(threading.Event())


if __name__ == "__main__":
    main()
