"""``py-spy dump`` output -> the threads of a process and their frames; its failures -> why.

py-spy reads another process's Python stacks through ptrace (``process_vm_readv``), with no
code in the target: the one way to see where a trainer with no probe stands. Its ``--json``
output (0.3.x and later) is read where it parses, else the text format (the same facts: per
thread a ``Thread <tid> (<state>): "<name>"`` line, then one ``function (file:line)`` line per
frame, innermost first). Samples: ``samples/pyspy``.

A frame's module is worked out from its file's path (py-spy gives no module): the dotted path
under ``site-packages``/``dist-packages`` (an installed package: ``torch.distributed.
distributed_c10d``) or under ``lib/pythonX.Y`` (the standard library: ``threading``), and
empty for the user's own code. What that costs: a package run from a source checkout (not
installed) reads as the user's code, and its frames decide no phase; in the text format, whose
file names are short (relative to the target's ``sys.path``), a standard library module is
told by name (`sys.stdlib_module_names`) and a user file in a folder of its own reads as a
package's. Pure: text in, models out.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any

from gpusat_tui.model import CodeLine, StackDump

__all__ = [
    "DumpedThread",
    "dump_failure",
    "is_user_frame",
    "module_of",
    "parse_dump",
    "stack_dump",
]

#: Frames kept of a thread (its innermost ones), as the probe publishes at most.
KEPT_FRAMES = 32
#: Characters kept of a file's base name, a function name and a failure message.
_FILE_CHARS, _NAME_CHARS, _MESSAGE_CHARS = 80, 80, 300

_THREAD = re.compile(r'^Thread (0x[0-9A-Fa-f]+|\d+) \(([^)]*)\)(?:: "(.*)")?\s*$')
_FRAME = re.compile(r"^\s+(.+?) \((.+):(\d+)\)\s*$")
_PACKAGES = re.compile(r"[/\\](?:site|dist)-packages[/\\](.+)$")
_STDLIB = re.compile(r"[/\\]lib[/\\]python\d+(?:\.\d+)?t?[/\\](.+)$")


@dataclass(frozen=True, slots=True)
class DumpedThread:
    """One thread of a dump: its OS thread id (None where the dump gave another id), name,
    whether py-spy saw it idle, and its frames innermost first."""

    os_tid: int | None
    name: str | None
    idle: bool | None
    frames: tuple[CodeLine, ...]


def module_of(path: str) -> str:
    """The dotted module of a file path: an installed package's or the standard library's;
    empty for the user's own code and for ``<frozen ...>`` pseudo-files."""
    if not path or path.startswith("<"):
        return ""
    found = _PACKAGES.search(path) or _STDLIB.search(path)
    if found is not None:
        tail = found.group(1)
    elif not path.startswith(("/", "\\")) and ":" not in path:
        # The text format's short names: a path relative to the target's sys.path entry.
        # The standard library's are known; another with a folder is a package's.
        first = path.replace("\\", "/").split("/", 1)[0].removesuffix(".py")
        if first not in sys.stdlib_module_names and "/" not in path.replace("\\", "/"):
            return ""
        tail = path
    else:
        return ""
    parts = tail.replace("\\", "/").split("/")
    last = parts[-1]
    parts[-1] = last[:-3] if last.endswith(".py") else last
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(p for p in parts if p)[:_NAME_CHARS]


def is_user_frame(frame: CodeLine) -> bool:
    """A kept frame of the user's own code (its module, worked out from the full path when
    it was read, is empty; `_frame` keeps only the file's base name)."""
    return not frame.module and bool(frame.file) and not frame.file.startswith("<")


def _base_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _frame(function: Any, file: Any, line: Any) -> CodeLine | None:
    if not isinstance(function, str) or not isinstance(file, str):
        return None
    if isinstance(line, bool) or not isinstance(line, int) or line < 0:
        line = 0
    return CodeLine(module=module_of(file), function=function[:_NAME_CHARS],
                    file=_base_name(file)[-_FILE_CHARS:], line=line)


def _json_threads(doc: Any) -> list[DumpedThread] | None:
    """``--json`` output (a list of threads); None when it is not that shape."""
    if not isinstance(doc, list):
        return None
    threads = []
    for raw in doc:
        if not isinstance(raw, dict) or not isinstance(raw.get("frames"), list):
            return None
        frames = [f for rf in raw["frames"] if isinstance(rf, dict)
                  and (f := _frame(rf.get("name"), rf.get("filename"), rf.get("line")))]
        tid, name, active = raw.get("os_thread_id"), raw.get("thread_name"), raw.get("active")
        threads.append(DumpedThread(
            os_tid=tid if isinstance(tid, int) and not isinstance(tid, bool) else None,
            name=name[:_NAME_CHARS] if isinstance(name, str) else None,
            idle=(not active) if isinstance(active, bool) else None,
            frames=tuple(frames),
        ))
    return threads


def _text_threads(text: str) -> list[DumpedThread]:
    threads: list[DumpedThread] = []
    head: tuple[int | None, str | None, bool | None] | None = None
    frames: list[CodeLine] = []
    for line in text.splitlines():
        found = _THREAD.match(line)
        if found is not None:
            if head is not None:
                threads.append(DumpedThread(*head, frames=tuple(frames)))
            ident, state, name = found.groups()
            tid = int(ident) if ident.isdigit() else None
            head = (tid, name[:_NAME_CHARS] if name is not None else None,
                    "idle" in state.split())
            frames = []
            continue
        at = _FRAME.match(line)
        if at is not None and head is not None:
            frame = _frame(at.group(1), at.group(2), int(at.group(3)))
            if frame is not None:
                frames.append(frame)
    if head is not None:
        threads.append(DumpedThread(*head, frames=tuple(frames)))
    return threads


def parse_dump(text: str) -> list[DumpedThread]:
    """Every thread of a ``py-spy dump`` (JSON or text); [] when none is in ``text``."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            threads = _json_threads(json.loads(stripped))
        except ValueError:
            threads = None
        if threads is not None:
            return threads
    return _text_threads(text)


def _training_thread(threads: list[DumpedThread], pid: int) -> DumpedThread | None:
    """The main thread (its OS id is the PID; else the one named MainThread; else the first)."""
    for thread in threads:
        if thread.os_tid == pid:
            return thread
    for thread in threads:
        if thread.name == "MainThread":
            return thread
    return threads[0] if threads else None


def stack_dump(text: str, pid: int, t: float, tool: str = "py-spy") -> StackDump:
    """The training thread's stack from a dump's output; a ``failed`` dump when no thread of a
    Python process is in it."""
    thread = _training_thread(parse_dump(text), pid)
    if thread is None or not thread.frames:
        return StackDump(tool=tool, t=t, error="failed",
                         message="no Python thread in its output")
    frames = thread.frames[:KEPT_FRAMES]
    return StackDump(tool=tool, t=t, thread=thread.name, frames=tuple(reversed(frames)))


def dump_failure(returncode: int, stderr: str, stdout: str = "") -> tuple[str, str]:
    """``(error, message)`` of a dump that exited non-zero: ``denied`` where ptrace was refused
    (the kernel's words, or py-spy's "Permission Denied"), else ``failed``; the message is the
    first line of py-spy's error, without its Rust backtrace."""
    text = stderr.strip() or stdout.strip()
    words = text.split("\nStack backtrace:", 1)[0].strip()
    lowered = words.lower()
    denied = ("permission denied" in lowered or "operation not permitted" in lowered
              or "os error 1)" in lowered or "ptrace" in lowered)
    first = next((line.strip() for line in words.splitlines() if line.strip()),
                 f"exit status {returncode}")
    if first.startswith("Error: "):
        first = first[len("Error: "):]
    causes = [line.strip().split(": ", 1)[-1] for line in words.splitlines()
              if re.match(r"^\s+\d+: ", line)]
    if causes and causes[0] not in first:
        first = f"{first} ({causes[0]})"
    return ("denied" if denied else "failed"), first[:_MESSAGE_CHARS]
