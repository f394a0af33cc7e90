"""Moore Threads GPUs through ``mthreads-gmi``.

Required query: plain ``mthreads-gmi``. Each GPU is a three-line block between ``+----+`` rules:

    0    MTT S5000            |00000000:18:00.0    |0%    0MiB(81920MiB)
         Physical      P0     |16x(16x)            |48C   YES
                                                   |      On-die, EDC

Line 1: index, name | PCIe bus id | %GPU and memory ``used(total)``; line 2: device type
[, Perf state] | lane width | temperature and MPC capability; line 3: ECC mode. The 2.0.0 (S80)
and 2.4.1 (S5000, extra ``Perf`` column) layouts both parse because cells are split on ``|`` and
read by content. This view prints **no power figures** at all, so power and cap stay None.

Processes: ``ID  PID  Process name  GPU Memory Usage`` rows, e.g.
``0    1123      /usr/lib/xorg/Xorg      134MiB``.
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.collectors.tables import celsius_token, first_group, header_index
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "mthreads-gmi"

_VERSION_RE = re.compile(r"mthreads-gmi:\s*(\S+)")
_LINE1_RE = re.compile(r"^\s*(\d+)\s+(.*?)\s*$")
_MEM_RE = re.compile(r"(\S+?)MiB\s*\(\s*(\S+?)MiB\s*\)")
_PROC_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(.*?)\s+(\S+?)MiB\s*$")
_BUS_RE = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")


def parse_default(text: str) -> ToolReading:
    """Parse the plain ``mthreads-gmi`` table into cards and processes."""
    lines = strip_ansi(text).splitlines()
    version = first_group(_VERSION_RE, lines)
    header_at = header_index(lines, "%GPU", "Name")
    if header_at is None:
        raise ParseError("mthreads-gmi: no device table ('ID  Name ... %GPU  Mem' header) found")

    cards: list[CardReading] = []
    processes: list[CardProcess] = []
    block: list[list[str]] = []
    in_procs = False

    def flush() -> None:
        if block:
            card = _card_from_block(block)
            if card is not None:
                cards.append(card)
            block.clear()

    for line in lines[header_at + 1:]:
        stripped = line.strip()
        if stripped.startswith("Processes"):
            flush()
            in_procs = True
            continue
        if in_procs:
            match = _PROC_RE.match(line)
            if match:
                processes.append(
                    CardProcess(
                        pid=int(match.group(2)),
                        card_id=f"mthreads:{match.group(1)}",
                        name=match.group(3).strip() or None,
                        mem_used_mib=num(match.group(4)),
                    )
                )
            continue
        if not stripped or set(stripped) <= set("+-="):
            flush()
            continue
        if "|" not in line:
            continue
        cells = [c.strip() for c in line.split("|")]
        if block or _LINE1_RE.match(cells[0]):
            block.append(cells)
    flush()
    if not cards:
        raise ParseError("mthreads-gmi: the device table has no GPU rows")
    return ToolReading(cards=cards, processes=processes, version=version)


def _card_from_block(block: list[list[str]]) -> CardReading | None:
    first = block[0]
    match = _LINE1_RE.match(first[0])
    if not match:
        return None
    index = int(match.group(1))
    name = match.group(2) or None
    bus = first[1] if len(first) > 1 and _BUS_RE.match(first[1]) else None
    right = first[2] if len(first) > 2 else ""
    right_tokens = right.split()
    util = num(right_tokens[0]) if right_tokens else None
    mem = _MEM_RE.search(right)
    extras: dict[str, float | str | None] = {}
    temp = None
    if len(block) > 1:
        second = block[1]
        left = second[0].split()
        if left:
            extras["device_type"] = left[0]
        if len(left) > 1:
            extras["perf"] = left[1]
        tail = second[2].split() if len(second) > 2 else []
        temp = celsius_token(tail)
        if len(tail) > 1:
            extras["mpc_capable"] = " ".join(tail[1:])
    if len(block) > 2:
        ecc = block[2][-1].strip()
        if ecc:
            extras["ecc_mode"] = ecc
    return CardReading(
        vendor="mthreads",
        index=index,
        name=name,
        bus_id=bus,
        util_pct=util,
        mem_used_mib=num(mem.group(1)) if mem else None,
        mem_total_mib=(num(mem.group(2)) or None) if mem else None,
        temp_c=num(temp),
        extras=extras,
        tool=TOOL,
    )


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="mthreads",
        names=("mthreads-gmi",),
        search_dirs=("/usr/bin", "/usr/local/musa/bin", "/usr/local/bin"),
        queries=(Query(name="default", args=(), parse=parse_default),),
    ),
)
