"""Fake MetaX ``mx-smi`` / ``ht-smi`` output in the real format.

``render``: plain ``mx-smi`` in the 2.3.1 board layout of
samples/smi/metax/mx-smi-MetaX-C500-2.3.1-board-name-layout.txt (version line, Log preamble,
4-cell table, Process box, "End of Log"). ``render_list``: ``mx-smi -L`` like
samples/smi/metax/mx-smi-L-2.2.9-fragment.txt. ``ht-smi`` prints the same table (Mars names).
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusat_tui.collectors.mx_smi import SPECS
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import by_query_name, respond, whole

RULE = "+" + "-" * 18 + "+" + "-" * 17 + "+" + "-" * 21 + "+" + "-" * 22 + "+"


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = (),
           tool: str = "MX-SMI") -> str:
    """Plain ``mx-smi`` (or ``ht-smi`` with ``tool="HT-SMI"``) for these cards."""
    lines = [
        f"{tool.lower()}  version: 2.3.1",
        "",
        "=================== MetaX System Management Interface Log ===================",
        "Timestamp                                         : Tue Dec  1 10:00:00 2026",
        "",
        f"Attached GPUs                                     : {len(cards)}",
        "+" + "-" * 81 + "+",
        f"| {tool} 2.3.1                       Kernel Mode Driver Version: 3.8.30           |",
        "| MACA Version: 3.7.1.5              BIOS Version: 1.33.5.0                       |",
        "|" + "-" * 18 + "+" + "-" * 17 + "+" + "-" * 21 + "+" + "-" * 22 + "|",
        "| Board       Name | GPU   Persist-M | Bus-id              | GPU-Util      sGPU-M |",
        "| Pwr:Usage/Cap    | Temp   Perf     | Memory-Usage        | GPU-State            |",
        "|" + "=" * 18 + "+" + "=" * 17 + "+" + "=" * 21 + "+" + "=" * 22 + "|",
    ]
    for c in cards:
        power = f"{whole(c.power_w, 'W')} / {whole(c.power_cap_w, 'W')}"
        mem = f"{whole(c.mem_used_mib)}/{whole(c.mem_total_mib)} MiB"
        bus = f"0000:{0x12 + c.index:02x}:00.0"
        lines.append(f"| {c.index:<5}{c.name[:11]:>11} | {c.index:<11} Off | {bus}"
                     f"        | {whole(c.util_pct, '%'):<11} Disabled |")
        lines.append(f"| {power:<16} | {whole(c.temp_c, 'C'):<12} P0 | {mem:<19} | Available"
                     "            |")
        lines.append(RULE)
    lines += [
        "",
        "+" + "-" * 81 + "+",
        "| Process:".ljust(82) + "|",
        "|  GPU                    PID         Process Name                 GPU Memory     |",
        "|                                                                  Usage(MiB)     |",
        "|" + "=" * 81 + "|",
    ]
    if not processes:
        lines.append("|  no process found".ljust(82) + "|")
    for p in processes:
        lines.append(f"|  {p.card_index:<18} {p.pid:>8}         {p.name[:28]:<28} "
                     f"{whole(p.mem_mib):<15}|")
    lines += ["+" + "-" * 81 + "+", "", "End of Log"]
    return "\n".join(lines) + "\n"


def render_list(cards: Sequence[FakeCard]) -> str:
    """``mx-smi -L``."""
    lines = ["mx-smi  version: 2.3.1"]
    for c in cards:
        name = c.name.replace(" ", "")[:10]
        lines.append(f"GPU#{c.index}    {name:<10}  0000:{0x12 + c.index:02x}:00.0"
                     f"   Available (UUID: GPU-0000{c.index:04x}-bbd6-bc06-5196-90a5554a24ba)")
    return "\n".join(lines) + "\n"


def render_for_args(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """The table for no args, the list for ``-L``, else a usage complaint."""
    views = by_query_name(SPECS[0], {
        "default": lambda: render(cards, processes),
        "list": lambda: render_list(cards),
    })
    return respond(args, views, "mx-smi: unrecognized option\nUsage: mx-smi [OPTIONS]\n")
