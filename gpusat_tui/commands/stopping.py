"""A headless front end's stop on a signal: Ctrl-C, ``kill`` or a closed terminal ends the
polling loop cleanly (the source closed, the report written) instead of with a traceback.

``check`` and ``export`` both poll in one task until told to stop; this is that one mechanism.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Sequence

#: Signals that stop a run cleanly: Ctrl-C, ``kill``, and a closed terminal or tmux pane (the
#: tool in flight runs in its own session, so dying on the spot would leave it behind). The
#: dashboard handles its own, in the app.
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.asynccontextmanager
async def stopped_by_signals(
    signals: Sequence[signal.Signals] = STOP_SIGNALS,
) -> AsyncIterator[list[int]]:
    """Run the block until it ends or the first of ``signals`` arrives.

    A signal cancels the current task; the cancellation ends the block, and the block's own
    ``finally`` clauses run (closing the source), then the block is left normally. The list
    yielded holds the signal received, if any. A cancellation not caused by a signal goes on.
    """
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    received: list[int] = []

    def on_signal(signum: int) -> None:
        if not received:
            received.append(signum)
            task.cancel()

    for sig in signals:
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        yield received
    except asyncio.CancelledError:
        if not received:
            raise
        task.uncancel()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
