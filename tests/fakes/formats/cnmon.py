"""Fake ``cnmon`` output in the real format.

``render`` prints the CNMON v5.10.13 layout of
samples/smi/cambricon/cnmon-MLU370-X8-2card-v5.10.13-SRIOV-col-no-timestamp.txt (80 columns,
cells 31/22/23 wide, power as ``106 W/ 250 W``, fractional power with two decimals like the
MLU220 capture). Process rows: no public capture shows one, so they follow the header's columns
(``Card  MI  PID  Command Line  MLU Memory Usage``) as the parser expects them.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import bare_command_only

VERSION = "v5.10.13"
RULE = "+" + "-" * 31 + "+" + "-" * 22 + "+" + "-" * 23 + "+"


def _n(value: float | None) -> str:
    if value is None:
        return "N/A"
    return str(round(value)) if float(value).is_integer() else f"{value:.2f}"


def _fit(left: str, right: str, width: int) -> str:
    return left + right.rjust(width - len(left))


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """Plain ``cnmon`` for these cards."""
    lines = [
        "+" + "-" * 78 + "+",
        "| " + f"CNMON {VERSION}".ljust(61) + f"Driver {VERSION} |",
        RULE,
        "| Card  VF  Name       Firmware |               Bus-Id | Util        Ecc-Error |",
        "| Fan   Temp      Pwr:Usage/Cap |         Memory-Usage | SR-IOV   Compute-Mode |",
        "|" + "=" * 31 + "+" + "=" * 22 + "+" + "=" * 23 + "|",
    ]
    for card in cards:
        bus = f"0000:{(card.index * 4 + 0x39) % 256:02X}:00.0"
        util = "N/A" if card.util_pct is None else f"{round(card.util_pct)}%"
        temp = "N/A" if card.temp_c is None else f"{round(card.temp_c)}C"
        lines.append(
            "|" + _fit(f" {card.index:<6}/   {card.name[:12]:<12}", "v1.1.6 ", 31)
            + "|" + f"{bus} ".rjust(22)
            + "|" + _fit(f" {util}", "N/A ", 23) + "|"
        )
        lines.append(
            "|" + _fit(f"  {'0%':<5}{temp}", f"{_n(card.power_w)} W/ {_n(card.power_cap_w)} W ", 31)
            + "|" + f"{_n(card.mem_used_mib)} MiB/ {_n(card.mem_total_mib)} MiB ".rjust(22)
            + "|" + _fit(" N/A", "Default ", 23) + "|"
        )
        lines.append(RULE)
    lines += [
        "",
        "+" + "-" * 78 + "+",
        "| Processes:".ljust(79) + "|",
        "|  Card  MI  PID     Command Line                             MLU Memory Usage |",
        "|" + "=" * 78 + "|",
    ]
    if not processes:
        lines.append("|  No running processes found".ljust(79) + "|")
    for proc in processes:
        lines.append(
            "|" + _fit(f"  {proc.card_index:<6}/   {proc.pid:<8}{proc.name[:40]}",
                       f"{_n(proc.mem_mib)} MiB ", 78) + "|"
        )
    lines.append("+" + "-" * 78 + "+")
    return "\n".join(lines) + "\n"


#: Plain ``cnmon`` for no args; anything else gets a short usage complaint.
render_for_args = bare_command_only(
    render, "cnmon: unrecognized option\nUsage: cnmon [info|top|...] [options]\n"
)
