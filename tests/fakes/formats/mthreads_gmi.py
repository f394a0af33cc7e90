"""Fake ``mthreads-gmi`` output in the real format.

``render`` prints the mthreads-gmi 2.0.0 layout of
samples/smi/moorethreads/mthreads-gmi-MTT-S80-2.0.0-drv3.0.0-procs.txt (63-column rules,
three lines per GPU, ``662MiB(16384MiB)``, right-aligned process memory). The real tool prints no
power figures in this view, so ``power_w`` / ``power_cap_w`` never show.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import bare_command_only, whole

RULE = "-" * 63
SEP = "+" + "-" * 61 + "+"


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """Plain ``mthreads-gmi`` for these cards."""
    lines = [
        "Fri Dec 19 03:35:38 2025",
        RULE,
        "    mthreads-gmi:2.0.0           Driver Version:3.0.0",
        RULE,
        "ID   Name           |PCIe                |%GPU  Mem            ",
        "     Device Type    |Pcie Lane Width     |Temp  MPC Capable    ",
        "                                         |      ECC Mode       ",
        SEP,
    ]
    for i, card in enumerate(cards):
        util = "N/A" if card.util_pct is None else f"{round(card.util_pct)}%"
        temp = "N/A" if card.temp_c is None else f"{round(card.temp_c)}C"
        mem = "N/A"
        if card.mem_used_mib is not None and card.mem_total_mib is not None:
            mem = f"{whole(card.mem_used_mib)}MiB({whole(card.mem_total_mib)}MiB)"
        bus = f"00000000:{card.index + 1:02x}:00.0"
        lines += [
            f"{card.index:<5}{card.name:<15}|{bus:<20}|{util:<6}{mem:<15}",
            f"     {'Physical':<15}|{'16x(16x)':<20}|{temp:<6}{'YES':<15}",
            f"{'':<41}|      {'N/A':<15}",
        ]
        lines.append(SEP if i < len(cards) - 1 else RULE)
    lines += [
        "",
        RULE,
        "Processes:",
        "ID   PID       Process name                         GPU Memory",
        "                                                         Usage",
        SEP,
    ]
    if not processes:
        lines.append("   No running processes found")
    for proc in processes:
        lines.append(f"{proc.card_index:<5}{proc.pid:<10}{proc.name:<41}"
                     + f"{whole(proc.mem_mib)}MiB".rjust(6))
    lines.append(RULE)
    return "\n".join(lines) + "\n"


#: Plain view for no args; anything else gets a usage complaint.
render_for_args = bare_command_only(
    render, "mthreads-gmi: unrecognized option\nUsage: mthreads-gmi [OPTION...]\n"
)
