"""Cambricon MLUs through ``cnmon``.

Required query: plain ``cnmon``, the box table every CNMON version prints (1.16 on MLU220 to
v5.10.x on MLU370 in the samples). Two lines per card:

    | Card  VF  Name       Firmware | Inited  Driver / Bus-Id | Util        Ecc-Error |
    | Fan   Temp      Pwr:Usage/Cap |         Memory-Usage    | vMemory-Usage / SR-IOV Mode |

The middle and right columns change between versions (Inited/Driver vs Bus-Id; vMemory-Usage vs
SR-IOV/Compute-Mode), so cells are read by what they contain, not by fixed offsets, and spacing
is never trusted (one v5.10.10 capture has a ``N/A  |`` one character off).

Processes: the "Processes:" box (``Card  VF|MI  PID  Command Line  MLU Memory Usage``). None of
the public captures shows a process row (all say "No running processes found"), so rows are read
as ``card, VF/MI, pid, command..., <n> MiB`` following that header; say so if a real one differs.
"""

from __future__ import annotations

import re
from typing import TypedDict

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.collectors.tables import box_cells, celsius_token, first_group, header_index
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "cnmon"

_VERSION_RE = re.compile(r"CNMON\s+v?(\d[\w.]*)")
_POWER_RE = re.compile(r"(\S+)\s*W\s*/\s*(\S+?)\s*W\b")
_MEM_RE = re.compile(r"(\S+)\s*MiB\s*/\s*(\S+?)\s*MiB")
_BUS_RE = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")
_LINE1_RE = re.compile(r"^(\d+)\s+(\S+)\s+(.*)$")
_PROC_RE = re.compile(r"^(\d+)\s+(\S+)\s+(\d+)\s+(.*?)\s+(\S+)\s*MiB$")


class _FirstRow(TypedDict):
    """What a card's first table row says; its second row completes the card."""

    index: int
    name: str | None
    bus_id: str | None
    util: float | None
    extras: dict[str, float | str | None]


def parse_default(text: str) -> ToolReading:
    """Parse the plain ``cnmon`` table into cards (and processes, when listed)."""
    lines = strip_ansi(text).splitlines()
    version = first_group(_VERSION_RE, lines)
    header_at = header_index(lines, "Card", "Name", "|")
    if header_at is None:
        raise ParseError("cnmon: no device table ('Card  VF  Name' header) found")

    cards: list[CardReading] = []
    processes: list[CardProcess] = []
    pending: _FirstRow | None = None
    in_procs = False
    for line in lines[header_at + 1:]:
        stripped = line.strip()
        if "Processes:" in stripped:
            in_procs = True
            continue
        if not stripped.startswith("|"):
            continue
        cells = box_cells(stripped)
        if in_procs:
            row = " ".join(cells)
            match = _PROC_RE.match(row.strip())
            if match and "PID" not in row:
                card = int(match.group(1))
                processes.append(
                    CardProcess(
                        pid=int(match.group(3)),
                        card_id=f"cambricon:{card}",
                        name=match.group(4).strip() or None,
                        mem_used_mib=num(match.group(5)),
                    )
                )
            continue
        if len(cells) < 3 or set(stripped) <= set("|=+- "):
            continue
        if pending is None:
            match = _LINE1_RE.match(cells[0])
            if not match:
                continue
            rest = match.group(3).split()
            # "MLU370-X4    v1.1.6": the last token is the firmware when it looks like a version.
            firmware = rest[-1] if len(rest) > 1 and re.match(r"^v?\d", rest[-1]) else None
            name_tokens = rest[:-1] if firmware else rest
            middle = cells[1].split()
            right = cells[2].split()
            extras: dict[str, float | str | None] = {}
            if firmware:
                extras["firmware"] = firmware
            if match.group(2) not in ("/", "-"):
                extras["vf"] = match.group(2)
            if len(right) > 1:
                extras["ecc_error"] = " ".join(right[1:])
            pending = {
                "index": int(match.group(1)),
                "name": " ".join(name_tokens) or None,
                "bus_id": next((t for t in middle if _BUS_RE.match(t)), None),
                "util": num(right[0]) if right else None,
                "extras": extras,
            }
            continue
        left = cells[0]
        power = _POWER_RE.search(left)
        temp = celsius_token(left.split())
        mem = _MEM_RE.search(cells[1])
        extras = pending["extras"]
        fan = left.split()[0] if left.split() else None
        if fan is not None and fan.endswith("%"):
            extras["fan_pct"] = num(fan)
        vmem = _MEM_RE.search(cells[2])
        if vmem:
            extras["vmem_used_mib"] = num(vmem.group(1))
            extras["vmem_total_mib"] = num(vmem.group(2))
        else:
            right = cells[2].split()
            if len(right) >= 2:
                extras["sriov"] = right[0]
                extras["compute_mode"] = " ".join(right[1:])
        cards.append(
            CardReading(
                vendor="cambricon",
                index=pending["index"],
                name=pending["name"],
                bus_id=pending["bus_id"],
                util_pct=pending["util"],
                mem_used_mib=num(mem.group(1)) if mem else None,
                mem_total_mib=num(mem.group(2)) if mem else None,
                power_w=num(power.group(1)) if power else None,
                power_cap_w=num(power.group(2)) if power else None,
                temp_c=num(temp),
                extras=extras,
                tool=TOOL,
            )
        )
        pending = None
    if not cards:
        raise ParseError("cnmon: the device table has no card rows")
    return ToolReading(cards=cards, processes=processes, version=version)


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="cambricon",
        names=("cnmon",),
        search_dirs=("/usr/bin", "/usr/local/neuware/bin", "/usr/local/bin"),
        queries=(Query(name="default", args=(), parse=parse_default),),
    ),
)
