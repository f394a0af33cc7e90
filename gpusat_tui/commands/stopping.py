"""A headless front end's stop on a signal: Ctrl-C, ``kill`` or a closed terminal ends the
polling loop cleanly (the source closed, the report written) instead of with a traceback.

``check`` and ``export`` both poll in one task until told to stop; this is that one mechanism.

A second signal while stopping (Ctrl-C pressed twice) must not kill the stop half way: it would
end the process by the signal, skip the report and the recording's last flush. Once a stop has
begun, further stop signals are ignored for `STOP_GRACE_S`, to the end of the process (the
loop's handlers while the source closes, then Python-level ones while the report is printed and
the interpreter exits); one that comes later ends the process at once with 128 + the signal.
Either way every line already written to a recording stays: each was one ``write``.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Sequence
from types import FrameType

#: Signals that stop a run cleanly: Ctrl-C, ``kill``, and a closed terminal or tmux pane (the
#: tool in flight runs in its own session, so dying on the spot would leave it behind). The
#: dashboard handles its own, in the app.
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: How long a stop may take before another signal ends the process at once (closing the
#: source kills the tool in flight within ~2 s; the flush and the report take milliseconds).
STOP_GRACE_S = 10.0


class _WhileStopping:
    """What a stop signal does once a stop has begun: nothing, unless the stop overran."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.told = False
        self.hooked = False

    def overran(self) -> bool:
        return time.monotonic() - self.started >= STOP_GRACE_S

    def on_loop_signal(self, signum: int) -> None:
        if self.overran():
            os._exit(128 + signum)
        if not self.told:
            self.told = True
            from gpusat_tui.output import say

            say("gpusat-tui", "already stopping: closing the recording and writing the report")

    def on_python_signal(self, signum: int, frame: FrameType | None) -> None:
        del frame
        if self.overran():
            os._exit(128 + signum)


def _ignore_until_exit(signals: Sequence[signal.Signals], stopping: _WhileStopping) -> None:
    """Keep later stop signals from killing the rest of the stop (report, interpreter exit).

    Python-level handlers, so that a stop blocked in a system call (a slow fsync) still sees
    a signal past the bound. The interpreter's last steps reset every handler Python installed
    to the default (die by the signal), except an ignored one: the exit hook sets them to
    ignored for those steps.
    """
    for sig in signals:
        try:
            signal.signal(sig, stopping.on_python_signal)
        except (ValueError, OSError):  # not the main thread: nothing to keep
            return
    if not stopping.hooked:
        stopping.hooked = True

        def ignore_while_exiting() -> None:
            for sig in signals:
                with contextlib.suppress(ValueError, OSError):
                    signal.signal(sig, signal.SIG_IGN)

        atexit.register(ignore_while_exiting)


@contextlib.asynccontextmanager
async def stopped_by_signals(
    signals: Sequence[signal.Signals] = STOP_SIGNALS,
) -> AsyncIterator[list[int]]:
    """Run the block until it ends or the first of ``signals`` arrives.

    A signal cancels the current task; the cancellation ends the block, and the block's own
    ``finally`` clauses run (closing the source), then the block is left normally. The list
    yielded holds the signal received, if any. A cancellation not caused by a signal goes on.
    After a signal, later ones are ignored for `STOP_GRACE_S` (see the module docstring).
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []
    stopping: _WhileStopping | None = None

    def on_signal(signum: int) -> None:
        nonlocal stopping
        if not received:
            received.append(signum)
            stopping = _WhileStopping()
            _ignore_until_exit(signals, stopping)
            task.cancel()
        elif stopping is not None:
            stopping.on_loop_signal(signum)

    for sig in signals:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        yield received
    except asyncio.CancelledError:
        if not received:
            raise
        task.uncancel()
    finally:
        # Removing the loop's handlers puts the defaults back: while stopping, hold the signals
        # until ours are back in place (a pending one is then delivered to ours).
        held = signal.pthread_sigmask(signal.SIG_BLOCK, signals) if stopping else None
        try:
            for sig in signals:
                loop.remove_signal_handler(sig)
            if stopping is not None:
                _ignore_until_exit(signals, stopping)
        finally:
            if held is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
