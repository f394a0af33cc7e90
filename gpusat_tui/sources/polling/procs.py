"""Running vendor tools as child processes: the one place that spawns, reads, kills and reaps.

Used by `sources.tool_queries` for the calls of every poll. Every child runs in its own
session (``start_new_session=True``), so on a timeout, on close or on cancellation its *whole
process group* is killed with SIGKILL (a shell wrapper's ``sleep`` child dies with it) and then
reaped: no zombie, no orphan holding a pipe. Output is capped (`MAX_OUTPUT_BYTES`): a tool
spewing garbage is killed, not buffered. Never a shell: argv lists only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_OUTPUT_BYTES",
    "RUNNING",
    "CallTimedOut",
    "OutputTooLarge",
    "RunResult",
    "ToolFailed",
    "ToolRefused",
    "kill_running_tools",
    "read_ready",
    "run_tool",
]

def read_ready(fd: int) -> bytes | None:
    """What a non-blocking pipe or pty holds now: None when nothing yet, ``b""`` at its end
    (EOF, or EIO once a pty's other end is closed: the child exited)."""
    try:
        return os.read(fd, 65536)
    except BlockingIOError:
        return None
    except OSError:
        return b""


#: Output beyond this is garbage by definition (a 16-chip npu-smi table is ~10 KiB).
MAX_OUTPUT_BYTES = 1 << 20


@dataclass
class RunResult:
    """What one finished call printed."""

    returncode: int
    stdout: str
    stderr: str


class ToolRefused(Exception):
    """The tool answered but not with anything we understand (non-zero exit or ParseError)."""

    def __init__(self, message: str, kind: str, raw: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.raw = raw


class ToolFailed(Exception):
    """The tool did not answer (timeout, overflow, cannot start, a stream gone quiet)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


class CallTimedOut(Exception):
    """The call ran past its timeout and was killed."""


class OutputTooLarge(Exception):
    """The call printed more than MAX_OUTPUT_BYTES and was killed."""


#: How long a SIGKILLed call may take to exit before a thread is left to reap it.
_REAP_S = 0.2
#: Poll step while waiting for a tool that closed its output to exit.
_EXIT_POLL_S = 0.005



#: Tool calls running right now, so that a dying front end can kill them (see
#: `kill_running_tools`). Only touched from the event loop's thread.
RUNNING: set[subprocess.Popen[bytes]] = set()


#: Called first by `kill_running_tools`, each returning how many children it ended: the
#: long-lived streams register here (`sources.streams`), so that they are stopped for good
#: (no restart follows) rather than killed from under their runner.
KILL_HOOKS: list[Callable[[], int]] = []


def kill_running_tools() -> int:
    """SIGKILL and reap every tool call in flight and every stream child; returns how many.

    For a front end about to exit on a signal (a closed tmux pane): each tool leads its own
    session, so nothing else would stop a hung one. Synchronous, so it is done before any
    shutdown step that could block.
    """
    stopped = sum(hook() for hook in KILL_HOOKS)
    running = list(RUNNING)
    for proc in running:
        _kill_and_reap(proc)
    return stopped + len(running)


def _kill_and_reap(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the call's whole process group (it leads its own session), then reap it.

    Synchronous on purpose: no await, so no cancellation can interrupt it half-way. A killed
    process exits at once unless it sits in an uninterruptible driver call (a wedged GPU
    driver does that): then a daemon thread waits for it, so it still never stays a zombie.
    """
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        try:
            proc.wait(timeout=_REAP_S)
        except subprocess.TimeoutExpired:
            threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()


async def _read_both(proc: subprocess.Popen[bytes], cap: int) -> tuple[bytes, bytes]:
    """Read stdout and stderr to EOF without threads; `OutputTooLarge` past ``cap`` bytes on one."""
    assert proc.stdout is not None and proc.stderr is not None
    loop = asyncio.get_running_loop()
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    bufs: dict[int, bytearray] = {out_fd: bytearray(), err_fd: bytearray()}
    open_fds = set(bufs)
    done: asyncio.Future[None] = loop.create_future()

    def stop(fd: int) -> None:
        loop.remove_reader(fd)
        open_fds.discard(fd)

    def on_readable(fd: int) -> None:
        chunk = read_ready(fd)
        if chunk is None:
            return
        if not chunk:
            stop(fd)
            if not open_fds and not done.done():
                done.set_result(None)
            return
        bufs[fd] += chunk
        if len(bufs[fd]) > cap:
            for other in list(open_fds):
                stop(other)
            if not done.done():
                done.set_exception(OutputTooLarge())

    for fd in bufs:
        os.set_blocking(fd, False)
        loop.add_reader(fd, on_readable, fd)
    try:
        await done
    finally:
        for fd in list(open_fds):
            stop(fd)
    return bytes(bufs[out_fd]), bytes(bufs[err_fd])


async def run_tool(argv: Sequence[str], timeout: float, cap: int | None = None) -> RunResult:
    """Run ``argv`` without a shell; kill its process group on timeout, overflow or cancel.

    Raises `CallTimedOut`, `OutputTooLarge`, or OSError when it cannot be started. Every way
    out of here kills and reaps the call (no zombie, no orphan holding a pipe).

    Plain ``subprocess.Popen`` + event-loop readers rather than asyncio's subprocess API: its
    transports can be cancelled half-way through creation, and then close() kills only the
    leader and waits for pipes that a surviving grandchild (a wrapper's ``sleep``) keeps open,
    which hangs shutdown. Here the process exists, or not, before the first await.
    """
    cap = MAX_OUTPUT_BYTES if cap is None else cap
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
    )
    RUNNING.add(proc)
    try:
        async with asyncio.timeout(timeout):
            out, err = await _read_both(proc, cap)
            # Output closed; the exit status follows within microseconds (normally).
            while (returncode := proc.poll()) is None:
                await asyncio.sleep(_EXIT_POLL_S)
    except BaseException as exc:
        # Timeout, OutputTooLarge, cancellation (source closed mid-poll): never leave it running.
        _kill_and_reap(proc)
        if isinstance(exc, TimeoutError):
            raise CallTimedOut from None
        raise
    finally:
        RUNNING.discard(proc)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    # No group kill after a normal exit: the PID may already be reused, and a child the tool
    # left behind on purpose is not ours to kill (one holding our pipes hits the timeout).
    return RunResult(
        returncode,
        out.decode("utf-8", errors="replace"),
        err.decode("utf-8", errors="replace"),
    )
