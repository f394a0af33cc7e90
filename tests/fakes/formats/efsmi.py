"""Fake Enflame ``efsmi`` output in the real format.

``render``: plain ``efsmi`` in the 1.7.2.14 layout of
samples/smi/enflame/efsmi-Enflame-L300-1.7.2.14.txt (the dashed banner, the timestamp in the top
border, ``35℃``, ``68W / 300W``, the memory size only). ``render_query``: ``efsmi -q -d
TEMP,MEMORY,USAGE`` with the newer key names of samples/smi/enflame/efsmi-q-S60-1.4.3.4-...txt.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusat_tui.collectors.efsmi import SPECS
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import NA, by_query_name, respond, whole

RULE = "+" + "-" * 29 + "+" + "-" * 19 + "+" + "-" * 27 + "+"
BANNER = [
    "-" * 79,
    "--------------------- Enflame System Management Interface ---------------------",
    "--------- Enflame Tech, All Rights Reserved. 2024-2026 Copyright (C) ----------",
    "-" * 79,
    "",
]


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """Plain ``efsmi`` (it lists no processes)."""
    lines = [
        *BANNER,
        "+2026-12-01, 10:00:00 CST" + "-" * 53 + "+",
        "| EFSMI: 1.7.2.14          Driver Ver: 1.7.2.14                               |",
        RULE,
        "| DEV    NAME                 | Boot FW VER       | BUS-ID      ECC           |",
        "| TEMP   Lpm   Pwr(Usage/Cap) | Mem      GCU Virt | DUsed       SN            |",
        "|" + "=" * 77 + "|",
    ]
    for c in cards:
        power = NA if c.power_w is None else (
            f"{whole(c.power_w, 'W')} / {whole(c.power_cap_w, 'W')}")
        temp = NA if c.temp_c is None else f"{round(c.temp_c)}℃"
        mem = f"{whole(c.mem_total_mib, 'MiB')} Disable"
        bus = f"00:{0x2d + c.index:02x}:00.0"
        lines.append(f"| {c.index:<6} {c.name[:20]:<20} | 40.2.8.3          | {bus}  "
                     "Enable        |")
        lines.append(f"| {temp:<6} LP1   {power:>12} | {mem:<17} | {whole(c.util_pct, '%'):<11} "
                     f"A098Q5061{c.index:04d} |")
        lines.append(RULE)
    return "\n".join(lines) + "\n"


def render_query(cards: Sequence[FakeCard]) -> str:
    """``efsmi -q -d TEMP,MEMORY,USAGE``."""
    lines = BANNER[:4]
    for c in cards:
        free = None if c.mem_total_mib is None or c.mem_used_mib is None else (
            c.mem_total_mib - c.mem_used_mib)
        lines += [
            f"DEV ID {c.index}",
            "    Device Mem Info",
            f"        Total Size              : {whole(c.mem_total_mib)} MiB",
            "        Reserved Size           : 1129 MiB",
            f"        Used Size               : {whole(c.mem_used_mib)} MiB",
            f"        Free Size               : {whole(free)} MiB",
            "    Temperature Info",
            f"        GCU Temp                : {whole(c.temp_c)} ℃",
            "    Device Usage Info",
            f"        GCU Usage               : {whole(c.util_pct)} %",
        ]
    return "\n".join(lines) + "\n"


def render_for_args(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """The table for no args, the key/value view for the ``-q`` query, else a complaint."""
    views = by_query_name(SPECS[0], {
        "default": lambda: render(cards, processes),
        "query": lambda: render_query(cards),
    })
    return respond(args, views, "efsmi: invalid option\nUsage: efsmi [OPTIONS]\n")
