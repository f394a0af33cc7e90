"""Closing the tmux pane (SIGHUP), a plain ``kill`` (SIGTERM) or ``kill -INT`` exits like ``q``.

Python's default for these is to die on the spot, skipping the app's unmount: a tool the live
source is waiting on runs in its own session and would be left behind (a hung tool for good).
Exiting through the app closes the source, which kills it. Cost: a shutdown that cannot
write to a closed terminal is cut short after `SIGNAL_EXIT_GRACE_S` (``os._exit``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading

from textual.app import App

#: Seconds a signal-triggered exit may take to restore the terminal before the process ends
#: anyway.
SIGNAL_EXIT_GRACE_S = 3.0


def exit_on_signals(app: App[int]) -> None:
    """From the app's running loop: SIGHUP, SIGTERM and SIGINT exit ``app`` with 128 + the
    signal (the terminal's Ctrl-C is a key here, not a SIGINT)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, exit_on_signal, app, sig)


def exit_on_signal(app: App[int], sig: int) -> None:
    """Kill the running tools, then exit through the app, with a watchdog on the exit."""
    from gpusat_tui.sources.polling.procs import kill_running_tools

    kill_running_tools()  # first, and synchronously: nothing below may be reached
    # Textual's shutdown writes to the terminal, which a closed pane no longer drains:
    # it can block for good. Give it a moment to restore a live terminal, then go.
    watchdog = threading.Timer(SIGNAL_EXIT_GRACE_S, os._exit, (128 + sig,))
    watchdog.daemon = True
    watchdog.start()
    app.call_later(app.exit, None, 128 + sig)
