"""Fake ``brsmi`` output: SYNTHETIC, not copied from a real capture (none is public).

The layout is the nvidia-smi-like box table that `gpusat_tui.collectors.birensmi` assumes (see
its docstring for what was and was not verified); the idle line uses the wording Biren's own
scripts grep for ("No running process found"). A round trip through it only proves the parser
reads what this renderer writes, not that it reads a real Biren card.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import bare_command_only, whole

RULE = "+-------------------------------+----------------------+----------------------+"


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """A synthetic default ``brsmi`` view for these cards."""
    lines = [
        "+-----------------------------------------------------------------------------+",
        "| BRSMI 1.0.0                 Driver Version: 1.0.0                           |",
        RULE,
        "| GPU  Name                     | Bus-Id               | GPU-Util  Compute M. |",
        "| Fan  Temp  Pwr:Usage/Cap      |         Memory-Usage |                      |",
        "|===============================+======================+======================|",
    ]
    for card in cards:
        bus = f"0000:{card.index + 0x1a:02x}:00.0"
        util = whole(card.util_pct, "%")
        power = f"{whole(card.power_w, 'W')} / {whole(card.power_cap_w, 'W')}"
        mem = f"{whole(card.mem_used_mib, 'MiB')} / {whole(card.mem_total_mib, 'MiB')}"
        lines.append(f"| {card.index:<4} {card.name[:24]:<24} | {bus:>20} | {'':<20} |")
        lines.append(
            f"| N/A  {whole(card.temp_c, 'C'):<5} {power:<18} | {mem:>20} | "
            f"{util:>7}   Default    |"
        )
        lines.append(RULE)
    lines += [
        "",
        "+-----------------------------------------------------------------------------+",
        "| Processes:                                                                  |",
        "|  GPU       PID   Process name                                    GPU Memory  |",
        "|=============================================================================|",
    ]
    if not processes:
        lines.append("|  No running process found".ljust(78) + "|")
    for proc in processes:
        lines.append(
            f"|  {proc.card_index:<4}{proc.pid:>10}   {proc.name[:40]:<40}"
            f"{whole(proc.mem_mib, 'MiB'):>12}   |"
        )
    lines.append("+-----------------------------------------------------------------------------+")
    return "\n".join(lines) + "\n"


#: The synthetic default view for no args; anything else gets a usage complaint.
render_for_args = bare_command_only(
    render, "brsmi: unrecognized option\nUsage: brsmi [options]\n"
)
