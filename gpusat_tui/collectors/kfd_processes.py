"""The process listing that rocm-smi and hy-smi share (``--showpids --showpidgpus``).

hy-smi is a fork of rocm-smi and prints the same KFD table and "PID N is using K DRM
device(s)" sections, with ``DCU(s)``/``HCU(s)`` in place of ``GPU(s)``: one parser serves both.
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import ToolReading, num, strip_ansi
from gpusat_tui.model import CardProcess, Vendor

_MIB = 1024 * 1024


def bytes_mib(value: object) -> float | None:
    """A byte count as rocm-smi prints it, in MiB (None when it is no number)."""
    figure = num(str(value)) if value is not None else None
    return figure / _MIB if figure is not None else None


_PID_USING_RE = re.compile(r"^PID\s+(\d+)\s+is using\s+(\d+)\s+DRM device")


def parse_pid_sections(text: str, vendor: Vendor = "amd") -> ToolReading:
    """``rocm-smi --showpids --showpidgpus``: one CardProcess per (PID, card).

    ``--showpids`` prints the KFD table (PID, name, VRAM bytes) whose ``GPU(s)`` column is a
    COUNT of devices, not their indices; ``--showpidgpus`` says which devices ("PID 28156 is
    using 2 DRM device(s):" then "0 1"). Both together give name, card and memory; the memory
    is attributed only when the process uses one card (rocm-smi gives one total). A PID that
    only the KFD table lists cannot be put on a card and becomes a note.
    """
    lines = strip_ansi(text).splitlines()
    kfd: dict[int, tuple[str | None, float | None]] = {}
    gpus: dict[int, list[int]] = {}
    in_kfd = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("PID") and "PROCESS NAME" in line:
            in_kfd = True
            if "DCU(s)" in line or "HCU(s)" in line:
                vendor = "hygon"  # DTK's rocm-smi: these are Hygon cards
        elif line.startswith("="):
            in_kfd = False
        elif in_kfd and "\t" in line:
            cells = [c.strip() for c in line.split("\t")]
            if re.fullmatch(r"\d+", cells[0]):
                name = cells[1] if len(cells) > 1 and cells[1] else None
                vram = bytes_mib(cells[3]) if len(cells) > 3 else None
                kfd[int(cells[0])] = (name, vram)
        elif match := _PID_USING_RE.match(line):
            tokens = lines[i + 1].split() if i + 1 < len(lines) else []
            gpus[int(match.group(1))] = [int(d) for d in tokens if re.fullmatch(r"\d+", d)]
            i += 1
        i += 1
    processes: list[CardProcess] = []
    notes: list[str] = []
    for pid in sorted(set(kfd) | set(gpus)):
        name, vram = kfd.get(pid, (None, None))
        devices = gpus.get(pid)
        if devices is None:
            if vram:
                notes.append(
                    f"PID {pid} ({name}) holds {vram:.0f} MiB on a card rocm-smi did not name"
                )
            continue
        for device in devices:
            processes.append(
                CardProcess(
                    pid=pid, card_id=f"{vendor}:{device}", name=name,
                    mem_used_mib=vram if len(devices) == 1 else None,
                )
            )
    return ToolReading(processes=processes, notes=notes)
