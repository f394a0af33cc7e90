"""``gpusat-tui check --watch``: poll until stopped; say (and POST) when the job's verdict turns.

The same source and verdicts as ``check``; every poll's job status goes to the notifier
(`gpusat_tui.notify`), which decides when a turn has held long enough and is not rate-limited.
Each notice is one line on stdout (with ``--json``, one JSON object per line: the generic
webhook body), and is POSTed to every ``--webhook`` from a thread of its own: a hung or
refusing server never holds the polling up. The job's status is also left for
``gpusat-tui status``. Stopped by SIGINT, SIGTERM or SIGHUP, it exits 0 once the webhooks had a
few seconds to send what is queued. Never imports Textual.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from typing import Any

from gpusat_tui.commands.options import CheckOptions
from gpusat_tui.commands.stopping import stopped_by_signals
from gpusat_tui.notify.notifier import Notifier, notifier_from_options, publish_poll
from gpusat_tui.notify.status_file import StatusFileWriter
from gpusat_tui.output import emit

__all__ = ["run_watch", "watch"]


async def watch(source: Any, tracker: Any, notifier: Notifier,
                status_file: StatusFileWriter) -> int | None:
    """Poll until a stop signal (returned) or the end of the source (None)."""
    async with stopped_by_signals() as received:
        try:
            async with contextlib.aclosing(source.frames()) as frames:
                async for frame in frames:
                    assessment = tracker.push(frame, focus=())
                    publish_poll(frame, assessment, status_file, notifier)
        finally:
            await source.aclose()
    return received[0] if received else None


def run_watch(options: CheckOptions, source: Any, tracker: Any, host: str) -> int:
    """Entry point of ``check --watch`` once ``check`` has built its source."""

    def line(text: str, generic: dict[str, Any]) -> None:
        emit(json.dumps(generic, ensure_ascii=False) if options.json else text)

    notifier = notifier_from_options(options.notify, host=host, source="check",
                                     prog="gpusat-tui check", lines=line)
    assert notifier is not None  # lines are always asked for
    print(f"gpusat-tui check: watching; a turn must hold {options.notify.hold_s:g} s, at most one "
          f"notice per {options.notify.every_s:g} s", file=sys.stderr, flush=True)
    status_file = StatusFileWriter("check", options.source.poll.interval_s)
    try:
        asyncio.run(watch(source, tracker, notifier, status_file))
    finally:
        status_file.close()
        notifier.close()
    return 0
