"""What one tick of the process side hands on (`ProcessReport`), and the notes and errors it
carries, each said once a session (`SaidOnce`): a denied PID, a zombie or a trainer that exited
is news once, not at every tick. The price: a key per thing said, kept for the session.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpusat_tui.model import HostSample, JobContext, ProcessSample, ToolError

__all__ = ["ProcessReport", "SaidOnce"]


@dataclass
class ProcessReport:
    """One tick of the process side, ready to go into a Frame."""

    processes: list[ProcessSample] = field(default_factory=list)
    host: HostSample = field(default_factory=HostSample)
    #: New plain-language notes this tick (each said once per session, not every tick).
    notes: list[str] = field(default_factory=list)
    #: New errors this tick (tool="psutil"; kind "process" or "denied"), each once.
    errors: list[ToolError] = field(default_factory=list)
    #: Whose jobs the watched trainers are (one per job; read when a trainer is first seen).
    jobs: list[JobContext] = field(default_factory=list)


class SaidOnce:
    """Puts a note or an error on a report the first time its key is seen, never again."""

    def __init__(self) -> None:
        self._said: set[str] = set()

    def note(self, report: ProcessReport, key: str, text: str) -> None:
        if key not in self._said:
            self._said.add(key)
            report.notes.append(text)

    def error(self, report: ProcessReport, key: str, kind: str, message: str) -> None:
        key = "error:" + key
        if key not in self._said:
            self._said.add(key)
            report.errors.append(ToolError(tool="psutil", message=message, kind=kind))
