"""How a test tells a probe job to stop: it closes the job's stdin.

The job scripts run as `python tests/probe_jobs/<job>.py` (under `gpusat-tui run`), so this
module is imported by its plain name from the scripts' own folder (``sys.path[0]``).
"""

from __future__ import annotations

import os
import threading

__all__ = ["stop_when_stdin_closes"]


def stop_when_stdin_closes() -> threading.Event:
    """An event set once the job's stdin reaches its end (the test closed it, or died).

    ``os.read`` on the raw descriptor, not ``sys.stdin``: a thread blocked in
    ``sys.stdin.read()`` holds the buffer's lock, and a fork-started worker closing its stdin
    would wait on it forever. A descriptor that cannot be read counts as closed.
    """
    stop = threading.Event()

    def watch() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        stop.set()

    threading.Thread(target=watch, name="stop-on-stdin-eof", daemon=True).start()
    return stop
