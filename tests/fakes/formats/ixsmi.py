"""Fake Iluvatar ``ixsmi`` output in the real format.

``render``: plain ``ixsmi`` in the IX-ML 4.3.0 layout of
samples/smi/iluvatar/ixsmi-2xBI-V150-IXML4.3.0-container-no-timestamp.txt (79 columns, cells
31/22/22 wide, left-aligned, ``104W / 350W``, ``64MiB / 32768MiB``). Process rows follow the
header's columns (no public capture shows one).
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import bare_command_only, whole

RULE = "+" + "-" * 31 + "+" + "-" * 22 + "+" + "-" * 22 + "+"


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """Plain ``ixsmi`` for these cards."""
    lines = [
        "Timestamp    Tue Dec  1 10:00:00 2026",
        "+" + "-" * 77 + "+",
        "|  IX-ML: 4.3.0       Driver Version: 4.3.0       CUDA Version: 10.2          |",
        "|" + "-" * 31 + "+" + "-" * 22 + "+" + "-" * 22 + "|",
        "| GPU  Name                     | Bus-Id               | Clock-SM  Clock-Mem  |",
        "| Fan  Temp  Perf  Pwr:Usage/Cap|      Memory-Usage    | GPU-Util  Compute M. |",
        "|" + "=" * 31 + "+" + "=" * 22 + "+" + "=" * 22 + "|",
    ]
    for c in cards:
        power = f"{whole(c.power_w, 'W')} / {whole(c.power_cap_w, 'W')}"
        mem = f"{whole(c.mem_used_mib, 'MiB')} / {whole(c.mem_total_mib, 'MiB')}"
        bus = f"00000000:{0x10 + 3 * c.index:02X}:00.0"
        lines.append(f"| {c.index:<4} {c.name[:24]:<24} | {bus}     "
                     "| 1500MHz   1600MHz    |")
        lines.append(f"| N/A  {whole(c.temp_c, 'C'):<5} P0    {power:<12} | {mem:<20} "
                     f"| {whole(c.util_pct, '%'):<9} Default    |")
        lines.append(RULE)
    lines += [
        "",
        "+" + "-" * 77 + "+",
        "| Processes:                                                       GPU Memory |",
        "|  GPU        PID      Process name                                Usage(MiB) |",
        "|" + "=" * 77 + "|",
    ]
    if not processes:
        lines.append("|  No running processes found".ljust(78) + "|")
    for p in processes:
        mem = whole(p.mem_mib)
        lines.append(f"|  {p.card_index:<10} {p.pid:<8} {p.name[:40]:<40} {mem:>10}   |")
    lines.append("+" + "-" * 77 + "+")
    return "\n".join(lines) + "\n"


#: Plain ``ixsmi`` for no args; anything else gets a usage complaint.
render_for_args = bare_command_only(render, "ixsmi: unrecognized option\nUsage: ixsmi [OPTION]\n")
