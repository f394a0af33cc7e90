"""Which vendor tools a live source polls: each one found, grouped, or where it was looked for.

An executable is searched for by `collectors.discovery.find_executable` (an override, the
tool's environment variable, PATH, the vendor's usual folders); an in-process reader (NVML) is
"found" when a first reading succeeds, so a broken driver counts as no tool. Tools of one
``group`` (hy-smi / amd-smi / rocm-smi on a DCU box; NVML / nvidia-smi) see the same cards:
they are kept in priority order and the live source uses the first that answers. What was
searched stays for `missing_tool_message`, the plain words shown when nothing is found. The
cost of probing an in-process reader here: one reading at discovery, thrown away apart from
its version and notes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gpusat_tui.collectors.base import ToolReading, ToolSpec
from gpusat_tui.collectors.discovery import find_executable
from gpusat_tui.errors import ToolMissing
from gpusat_tui.sources.polling.stream_poll import StreamPoll, stream_for
from gpusat_tui.sources.polling.tool_queries import ToolState

__all__ = ["IN_PROCESS", "FoundTools", "find_tools", "missing_tool_message"]

#: Where the in-process NVML reader is "found".
IN_PROCESS = "in-process"


@dataclass
class FoundTools:
    """What one discovery found."""

    #: Per group (or lone tool), its found tools in priority order, ready to poll.
    groups: list[list[ToolState]] = field(default_factory=list)
    #: tool -> executable, or `IN_PROCESS`.
    tools: dict[str, str] = field(default_factory=dict)
    #: tool -> places searched (for the no-tool message).
    searched: dict[str, list[str]] = field(default_factory=dict)
    #: tool -> version, for the in-process readers that gave one.
    versions: dict[str, str | None] = field(default_factory=dict)
    #: The in-process readers' notes (no GPM counters here, say), for the first Frame.
    notes: list[str] = field(default_factory=list)


def find_tools(
    specs: Sequence[ToolSpec],
    *,
    overrides: Mapping[str, str],
    path: str | None,
    enrich_every: int,
    streams: bool | None,
    interval: float,
    timeout: float,
) -> FoundTools:
    """Every tool of ``specs`` found on this machine; never raises for a missing one."""
    found = FoundTools()
    states: dict[str, list[ToolState]] = {}
    for spec in sorted(specs, key=lambda s: (s.group or s.tool, s.priority)):
        reader: Callable[[], ToolReading] | None = None
        if spec.new_reader is not None:
            reader = spec.new_reader(enrich_every)
        elif spec.reader is not None:
            reader = spec.reader
        if reader is not None:
            exe = IN_PROCESS if _probe_reader(spec, reader, found) else None
        else:
            exe, searched = find_executable(spec, overrides, path)
            found.searched[spec.tool] = searched
        if exe is None:
            continue
        required = [q for q in spec.queries if not q.optional]
        optional = [q for q in spec.queries if q.optional]
        stream = stream_for(spec, required, streams)
        states.setdefault(spec.group or spec.tool, []).append(
            ToolState(spec=spec, exe=exe, required=required, optional=optional,
                      reader=reader,
                      stream=StreamPoll(spec.tool, exe, stream, interval,
                                        timeout) if stream is not None else None)
        )
        found.tools[spec.tool] = exe
    found.groups = list(states.values())
    return found


def _probe_reader(spec: ToolSpec, reader: Callable[[], ToolReading], found: FoundTools) -> bool:
    """An in-process reader (NVML) is "found" when its library loads."""
    try:
        reading = reader()
    except ToolMissing as exc:
        found.searched[spec.tool] = [f"in-process library ({exc})"]
        return False
    except Exception as exc:  # a broken driver is as good as none for discovery
        found.searched[spec.tool] = [f"in-process library ({type(exc).__name__}: {exc})"]
        return False
    found.versions[spec.tool] = reading.version
    found.notes.extend(n for n in reading.notes if n not in found.notes)
    return True


def missing_tool_message(searched: Mapping[str, Sequence[str]]) -> str:
    """Plain words: no tool found, and where each one was looked for."""
    lines = ["No accelerator tool found. Searched:"]
    for tool, places in searched.items():
        lines.append(f"  {tool}: {', '.join(places) or 'nothing'}")
    lines.append("Use --tool VENDOR=PATH (or GPUSAT_TOOL_<TOOL>=PATH) to point at one.")
    return "\n".join(lines)
