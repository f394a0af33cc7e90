"""Await a blocking call that runs in a daemon thread: a call the caller gave up on never holds
the program's exit.

``asyncio.to_thread`` runs calls in the loop's default executor, whose worker threads
``asyncio.run`` waits for when it ends and the interpreter joins at exit: a request to a server
that trickles its answer kept ``check --prometheus`` and the dashboard alive for as long as it
trickled. A daemon thread is dropped at exit instead. Costs one thread start per call (tens of
microseconds), fine for one request per poll; what the call returns after its caller left is
dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["in_daemon_thread"]

T = TypeVar("T")


async def in_daemon_thread(fn: Callable[..., T], *args: Any, name: str = "gpusat-call") -> T:
    """``fn(*args)`` in a new daemon thread; its result or its exception, here."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not future.done():  # cancelled: nobody waits any more
            outcome()

    def deliver(outcome: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: the program is ending
            loop.call_soon_threadsafe(settle, outcome)

    def work() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:  # handed to the awaiting side, as to_thread does
            deliver(functools.partial(future.set_exception, exc))
        else:
            deliver(functools.partial(future.set_result, result))

    threading.Thread(target=work, name=name, daemon=True).start()
    return await future
