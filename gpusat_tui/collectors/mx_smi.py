"""MetaX GPUs (C500, C550; the Mars X201) through ``mx-smi`` and the older ``ht-smi``.

Required query: the plain tool, a box table after a "System Management Interface Log" preamble.
Two layouts are in the samples, read by content (never by column):

* mx-smi 2.1.x-2.2.4, three cells: ``GPU NAME | Bus-id | GPU-Util`` over ``Temp Pwr:Usage/Cap |
  Memory-Usage | GPU-State``. 2.1.6 prints ``Power`` (no cap: ``44W``) and an empty state; a pod
  may print the cap as ``NA``.
* mx-smi 2.2.9+ and ht-smi 2.2.9+, four cells: ``Board Name | GPU Persist-M | Bus-id | GPU-Util
  sGPU-M`` over ``Pwr:Usage/Cap | Temp Perf | Memory-Usage | GPU-State``. The card index is the
  ``GPU`` number (second cell), not the board's.

Memory is ``858/65536 MiB`` (used without its unit). The "Process:" box lists ``GPU PID
Process Name Usage(MiB)`` rows (``no process found`` when idle). Optional enrichment:
``mx-smi -L`` (``GPU#0  MXC500  0000:08:00.0  Available (UUID: GPU-...)``) for each card's UUID.

``ht-smi`` (the HPCC stack's name for the same tool) prints the same table; both are one group,
mx-smi first, so a box with both counts each card once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.collectors.dark_cards import block_cards
from gpusat_tui.collectors.tables import (
    box_blocks,
    box_process_rows,
    celsius_token,
    first_group,
    header_index,
    mem_pair,
    power_pair,
)
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

_VERSION_RE = re.compile(r"(?:mx|ht)-smi\s+(?:version:\s*)?(\d[\w.]*)", re.IGNORECASE)
_BUS_RE = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
_PERF_RE = re.compile(r"^P\d+$")
_WATTS_RE = re.compile(r"(?<![\w./])(\d+(?:\.\d+)?)W\b")
_LIST_RE = re.compile(
    r"^GPU#(\d+)\s+(.*?)\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s+(.*?)"
    r"(?:\s*\(UUID:\s*([^)]+)\))?\s*$"
)


def _card(block: list[list[str]], board_layout: bool, tool: str) -> CardReading | None:
    first = block[0]
    head = first[0].split()
    if len(block) < 2 or not head or not head[0].isdigit():
        return None
    second = block[1]
    tokens = [t for cell in second for t in cell.split()]
    index_token = head[0]
    if board_layout and len(first) > 1 and first[1].split()[:1] and first[1].split()[0].isdigit():
        index_token = first[1].split()[0]
    power = next((p for cell in second if (p := power_pair(cell))), None)
    watts = None if power else next((m for c in second if (m := _WATTS_RE.search(c))), None)
    mem = next((pair for cell in second if (pair := mem_pair(cell))), None)
    util = next((t for cell in first[1:] for t in cell.split() if t.endswith("%")), None)
    extras: dict[str, float | str | None] = {}
    if second[-1] and mem_pair(second[-1]) is None:
        extras["state"] = second[-1]
    perf = next((t for t in tokens if _PERF_RE.match(t)), None)
    if perf:
        extras["perf"] = perf
    if board_layout:
        extras["board"] = float(head[0])
    return CardReading(
        vendor="metax",
        index=int(index_token),
        name=" ".join(head[1:]) or None,
        bus_id=next((t for c in first[1:] for t in c.split() if _BUS_RE.match(t)), None),
        util_pct=num(util),
        mem_used_mib=num(mem[0]) if mem else None,
        mem_total_mib=(num(mem[1]) or None) if mem else None,
        power_w=num(power[0]) if power else (num(watts.group(1)) if watts else None),
        power_cap_w=num(power[1]) if power else None,
        temp_c=num(celsius_token(tokens)),
        extras=extras,
        tool=tool,
    )


def _processes(lines: Sequence[str]) -> list[CardProcess]:
    out: list[CardProcess] = []
    for tokens in box_process_rows(lines, "Process:"):
        mem = num(tokens[-1]) if len(tokens) > 3 else None
        names = tokens[2:-1] if mem is not None else tokens[2:]
        out.append(CardProcess(pid=int(tokens[1]), card_id=f"metax:{tokens[0]}",
                               name=" ".join(names) or None, mem_used_mib=mem))
    return out


def _parse_table(text: str, tool: str) -> ToolReading:
    lines = strip_ansi(text).splitlines()
    header_at = header_index(lines, "Bus-id", "GPU-Util")
    if header_at is None:
        raise ParseError(f"{tool}: no device table ('Bus-id | GPU-Util' header) found")
    board_layout = "Board" in lines[header_at]
    cards, dark = block_cards(
        tool, box_blocks(lines, header_at + 1), lambda b: _card(b, board_layout, tool)
    )
    if not cards:
        raise ParseError(f"{tool}: the device table has no GPU rows")
    return ToolReading(
        cards=cards, processes=_processes(lines), version=first_group(_VERSION_RE, lines),
        notes=dark,
    )


def parse_default(text: str) -> ToolReading:
    """Parse plain ``mx-smi`` (either layout) into cards and processes."""
    return _parse_table(text, "mx-smi")


def parse_ht_default(text: str) -> ToolReading:
    """Parse plain ``ht-smi``: the same table under the Mars name."""
    return _parse_table(text, "ht-smi")


def parse_list(text: str) -> ToolReading:
    """Parse ``mx-smi -L``: one ``GPU#n  NAME  BDF  state (UUID: ...)`` line per GPU."""
    cards: list[CardReading] = []
    for line in strip_ansi(text).splitlines():
        match = _LIST_RE.match(line.strip())
        if not match:
            continue
        cards.append(
            CardReading(
                vendor="metax",
                index=int(match.group(1)),
                name=match.group(2) or None,
                bus_id=match.group(3),
                uuid=(match.group(5) or "").strip() or None,
                extras={"state": match.group(4).strip()} if match.group(4).strip() else {},
                tool="mx-smi",
            )
        )
    if not cards:
        raise ParseError("mx-smi -L: no 'GPU#n' lines found")
    return ToolReading(cards=cards, version=first_group(_VERSION_RE, text.splitlines()))


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool="mx-smi",
        vendor="metax",
        names=("mx-smi",),
        # The /opt folders are where MACA and HPCC install by default: not verified on a box.
        search_dirs=("/opt/mxdriver/bin", "/opt/maca/bin", "/usr/local/bin", "/usr/bin"),
        queries=(
            Query(name="default", args=(), parse=parse_default),
            Query(name="list", args=("-L",), parse=parse_list, optional=True),
        ),
        group="metax",
        priority=0,
    ),
    ToolSpec(
        tool="ht-smi",
        vendor="metax",
        names=("ht-smi",),
        search_dirs=("/opt/hpcc/bin", "/usr/local/bin", "/usr/bin"),
        queries=(Query(name="default", args=(), parse=parse_ht_default),),
        group="metax",
        priority=1,
    ),
)
