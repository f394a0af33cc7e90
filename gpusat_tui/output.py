"""Writing a front end's results: stdout that may be full, closed or a pipe that went away.

Unix tools are expected to behave like this, and scripts rely on it:

* a result that could not be written (``> /dev/full``, a full disk, ``EIO``, stdout closed with
  ``>&-``) is an error: one line on stderr and exit status `EXIT_OUTPUT` (74, ``EX_IOERR`` of
  ``sysexits.h``), never a silent 0 and never a traceback;
* a reader that left early (``| head``) is not an error worth a word: the rest of the output is
  dropped quietly and the status is `EXIT_PIPE` (141, what a shell reports for a tool killed by
  ``SIGPIPE``), with no "Exception ignored ... BrokenPipeError" at exit.

Messages on stderr go through `gpusat_tui.text.clean`: they quote paths, tool output and names.
"""

from __future__ import annotations

import errno
import os
import sys

from gpusat_tui.text import clean

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_OUTPUT",
    "EXIT_PIPE",
    "OutputFailed",
    "emit",
    "guard_standard_fds",
    "say",
    "silence_stdout",
]

#: Stopped by Ctrl-C (128 + SIGINT).
EXIT_INTERRUPTED = 130
#: The result could not be written (sysexits' EX_IOERR).
EXIT_OUTPUT = 74
#: The reader of stdout went away (128 + SIGPIPE).
EXIT_PIPE = 141

#: Standard descriptors that were closed when the program started (see `guard_standard_fds`).
_CLOSED_AT_START: set[int] = set()


class OutputFailed(Exception):
    """Stdout could not take the output; ``status`` is the exit status to use."""

    def __init__(self, status: int, message: str | None = None) -> None:
        super().__init__(message or "")
        self.status = status
        self.message = message


def guard_standard_fds() -> None:
    """Put ``/dev/null`` on any of fds 0-2 that is closed, and remember it.

    Otherwise the next file opened (a recording!) would get fd 1, and any print would land in
    it. Output meant for a closed stdout is then refused by `emit`, not lost silently.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            _CLOSED_AT_START.add(fd)
    if 1 in _CLOSED_AT_START and sys.stdout is None:
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 - the process's own stdout


def silence_stdout() -> None:
    """Point fd 1 at /dev/null, so the interpreter's exit-time flush has nowhere to fail."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass


def emit(text: str) -> None:
    """Write ``text`` and a newline to stdout and flush; raise `OutputFailed` if it did not go.

    A closed pipe: status `EXIT_PIPE` and no message. Anything else: `EXIT_OUTPUT` with one
    line saying why.
    """
    if 1 in _CLOSED_AT_START or sys.stdout is None:
        raise OutputFailed(EXIT_OUTPUT, "cannot write the output: stdout is closed")
    try:
        try:
            sys.stdout.write(text + "\n")
        except UnicodeEncodeError:  # a terminal in Latin-1: "—" and names become "?"
            encoding = sys.stdout.encoding or "ascii"
            sys.stdout.write((text + "\n").encode(encoding, "replace").decode(encoding))
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        raise OutputFailed(EXIT_PIPE) from None
    except OSError as exc:
        silence_stdout()  # what is still buffered would fail again at exit
        if exc.errno == errno.EPIPE:
            raise OutputFailed(EXIT_PIPE) from None
        raise OutputFailed(
            EXIT_OUTPUT, f"cannot write the output: {exc.strerror or exc}"
        ) from None
    except ValueError:  # stdout closed by someone (sys.stdout.close())
        raise OutputFailed(EXIT_OUTPUT, "cannot write the output: stdout is closed") from None


def say(prog: str, message: object, *, lines: bool = False) -> None:
    """One cleaned line on stderr: ``prog: message``. Never raises (stderr may be gone too).

    ``lines=True`` keeps the message's own line breaks (a list of places searched), each line
    cleaned the same way.
    """
    if lines:
        body = "\n".join(clean(line, 2000) for line in str(message).splitlines())
    else:
        body = clean(message, 2000)
    line = f"{prog}: {body}\n"
    try:
        stream = sys.stderr
        if stream is None:
            os.write(2, line.encode("utf-8", "replace"))
            return
        stream.write(line)
        stream.flush()
    except (OSError, ValueError):
        pass
