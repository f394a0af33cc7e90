"""Iluvatar CoreX GPUs (BI-V100, BI-V150, MR-V100) through ``ixsmi``.

Required query: plain ``ixsmi``, an nvidia-smi-like box table (IX-ML 3.0.1 to 4.4.0 in the
samples). Two rows per GPU (a chip: a BI-V150 or MR-V100 DUO board has two, each its own card):

    | GPU  Name                     | Bus-Id               | Clock-SM  Clock-Mem  |
    | Fan  Temp  Perf  Pwr:Usage/Cap|      Memory-Usage    | GPU-Util  Compute M. |

Read by content, not by column. What the captures show and what it costs:

* On a two-chip board only one chip reports power (``N/A / N/A`` on the other, IX-ML 4.1-4.4):
  that chip's power and cap stay None; we do not split the board's figure.
* A board in a broken state prints ``65535W / 250`` (a sentinel, cap without its unit): the
  power is None, the cap is kept, and ``extras["power_sentinel"]`` says so.
* A capture that starts mid-table (no header; a log fragment) still parses when its blocks carry
  a memory figure.

Processes: the "Processes:" box (``GPU  PID  Process name  Usage(MiB)``). No public capture shows
a process row (all say "No running processes found"): rows are read as ``gpu pid name... MiB``
following that header; say so if a real one differs. There is no enrichment query: no richer
view of ``ixsmi`` was captured.
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
    sentinel_to_none,
)
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "ixsmi"

_VERSION_RE = re.compile(r"IX-ML:\s*(\S+)")
_BUS_RE = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
_MHZ_RE = re.compile(r"^(\d+)MHz$")


def _card(block: list[list[str]], need_memory: bool) -> CardReading | None:
    first = block[0]
    head = first[0].split()
    second = block[1] if len(block) > 1 else []
    mem = mem_pair(second[1]) if len(second) > 1 else None
    if not head or not head[0].isdigit() or (need_memory and mem is None):
        return None
    left = second[0] if second else ""
    power = power_pair(left)
    extras: dict[str, float | str | None] = {}
    clocks = [m.group(1) for t in (first[2].split() if len(first) > 2 else [])
              if (m := _MHZ_RE.match(t))]
    if len(clocks) == 2:
        extras["clock_sm_mhz"], extras["clock_mem_mhz"] = num(clocks[0]), num(clocks[1])
    power_w = num(power[0]) if power else None
    if power_w is not None and sentinel_to_none(power_w) is None:
        extras["power_sentinel"] = f"{power_w:.0f}W"
        power_w = None
    right = second[2].split() if len(second) > 2 else []
    if len(right) > 1:
        extras["compute_mode"] = right[1]
    fan = left.split()[0] if left.split() else None
    if fan and fan.endswith("%"):
        extras["fan_pct"] = num(fan)
    return CardReading(
        vendor="iluvatar",
        index=int(head[0]),
        name=" ".join(head[1:]) or None,
        bus_id=next((t for t in (first[1].split() if len(first) > 1 else []) if _BUS_RE.match(t)),
                    None),
        util_pct=num(right[0]) if right else None,
        mem_used_mib=num(mem[0]) if mem else None,
        mem_total_mib=(num(mem[1]) or None) if mem else None,
        power_w=power_w,
        power_cap_w=sentinel_to_none(num(power[1])) if power else None,
        temp_c=num(celsius_token(left.split())),
        extras=extras,
        tool=TOOL,
    )


def _processes(lines: Sequence[str]) -> list[CardProcess]:
    out: list[CardProcess] = []
    for tokens in box_process_rows(lines, "Processes:"):
        mem = num(tokens[-1].removesuffix("MiB")) if len(tokens) > 3 else None
        names = tokens[2:-1] if mem is not None else tokens[2:]
        out.append(CardProcess(pid=int(tokens[1]), card_id=f"iluvatar:{tokens[0]}",
                               name=" ".join(names) or None, mem_used_mib=mem))
    return out


def parse_default(text: str) -> ToolReading:
    """Parse plain ``ixsmi`` into one card per chip, plus processes."""
    lines = strip_ansi(text).splitlines()
    header_at = header_index(lines, "GPU", "Name", "Bus-Id")
    start = 0 if header_at is None else header_at + 1
    cards, dark = block_cards(
        TOOL, box_blocks(lines, start), lambda b: _card(b, header_at is None)
    )
    if not cards:
        raise ParseError("ixsmi: no GPU rows found (no 'GPU  Name | Bus-Id' table)")
    return ToolReading(
        cards=cards, processes=_processes(lines), version=first_group(_VERSION_RE, lines),
        notes=dark,
    )


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="iluvatar",
        names=("ixsmi",),
        # /usr/local/corex/bin: where Iluvatar's device-plugin README runs it from.
        search_dirs=("/usr/local/corex/bin", "/usr/local/bin", "/usr/bin"),
        queries=(Query(name="default", args=(), parse=parse_default),),
    ),
)
