"""Fake ``amd-smi`` output in the real formats (templates: the R9700 and V710 samples).

- `render`: the plain ``amd-smi`` box view of AMD-SMI 26.x (cards, then the process box).
- `render_monitor`: ``amd-smi monitor`` with every column (the older tools' view).
- `render_for_args`: what the tool prints for an argv. ``legacy=True`` plays an amd-smi of
  ROCm 6.x, which answers the plain command with its help text, so the collector must fall
  back to ``monitor``.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import na_or

_INNER = 78


def _size(mib: float) -> str:
    """amd-smi's human units: '5.9 MB', '19.6 GB', '0.0 B'."""
    if mib <= 0:
        return "0.0 B"
    if mib < 1:
        return f"{mib * 1024:.1f} KB"
    if mib < 1024:
        return f"{mib:.1f} MB"
    return f"{mib / 1024:.1f} GB"


def _boxed(text: str) -> str:
    return f"|{text:<{_INNER}}|"


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """The plain amd-smi view (AMD-SMI 26.2.1 layout, 80 columns)."""
    sep = "|" + "-" * 37 + "+" + "-" * 40 + "|"
    lines = [
        "+" + "-" * _INNER + "+",
        _boxed(" AMD-SMI 26.2.1+fc0010cf6a    amdgpu version: 6.16.6   ROCm version: 7.2.0"),
        _boxed(" VBIOS version: 00158742"),
        _boxed(" Platform: Linux Baremetal"),
        sep,
        "| BDF                        GPU-Name | Mem-Uti   Temp   UEC       Power-Usage |",
        "| GPU  HIP-ID  OAM-ID  Partition-Mode | GFX-Uti    Fan               Mem-Usage |",
        "|" + "=" * 37 + "+" + "=" * 40 + "|",
    ]
    for n, card in enumerate(cards):
        bdf = f"0000:{card.index + 3:02x}:00.0"
        power = f"{na_or(card.power_w, '{:.0f}')}/{na_or(card.power_cap_w, '{:.0f}')} W"
        mem = f"{na_or(card.mem_used_mib, '{:.0f}')}/{na_or(card.mem_total_mib, '{:.0f}')} MB"
        mem_util = na_or(card.extras.get("mem_util_pct", 0.0), "{:.0f} %")
        lines.append(
            f"| {bdf} {card.name[-22:]:>22} | {mem_util:<8} {na_or(card.temp_c, '{:.0f} °C'):>5}   "
            f"{'0':<9}{power:>12} |"
        )
        lines.append(
            f"| {card.index:>3}{card.index:>8}     N/A             N/A | "
            f"{na_or(card.util_pct, '{:.0f} %'):<7} {'40.0 %':<8}{mem:>22} |"
        )
        lines.append(sep if n < len(cards) - 1 else "+" + "-" * 37 + "+" + "-" * 40 + "+")
    lines += [
        "+" + "-" * _INNER + "+",
        _boxed(" Processes:"),
        _boxed("  GPU        PID  Process Name          GTT_MEM  VRAM_MEM  MEM_USAGE     CU %"),
        "|" + "=" * _INNER + "|",
    ]
    if not processes:
        lines.append(_boxed("  No running processes detected"))
    for proc in processes:
        lines.append(
            _boxed(
                f"  {proc.card_index:>3}  {proc.pid:>9}  {proc.name[:20]:<20} "
                f"{_size(5.9):>8}  {_size(proc.mem_mib):>8}  {_size(proc.mem_mib):>9}  N/A"
            )
        )
    lines.append("+" + "-" * _INNER + "+")
    return "\n".join(lines) + "\n"


_MONITOR_COLS = (
    ("GPU", 3), ("POWER", 7), ("GPU_TEMP", 10), ("MEM_TEMP", 10), ("GFX_UTIL", 10),
    ("GFX_CLOCK", 11), ("MEM_UTIL", 10), ("MEM_CLOCK", 11), ("ENC_UTIL", 10), ("ENC_CLOCK", 11),
    ("DEC_UTIL", 10), ("DEC_CLOCK", 11), ("THROTTLE", 13), ("SINGLE_ECC", 12),
    ("DOUBLE_ECC", 12), ("PCIE_REPLAY", 13), ("VRAM_USED", 11), ("VRAM_TOTAL", 12),
    ("PCIE_BW", 10),
)


def render_monitor(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """``amd-smi monitor`` (all columns, ROCm 6.3 layout: header, empty line, one row each)."""
    del processes
    header = "".join(f"{name:>{width}}" for name, width in _MONITOR_COLS) + " "
    lines = [header, ""]
    for card in cards:
        values = {
            "GPU": str(card.index),
            "POWER": na_or(card.power_w, "{:.0f} W"),
            "GPU_TEMP": na_or(card.temp_c, "{:.0f} °C"),
            "MEM_TEMP": na_or(card.temp_c, "{:.0f} °C"),
            "GFX_UTIL": na_or(card.util_pct, "{:.0f} %"),
            "GFX_CLOCK": "1814 MHz",
            "MEM_UTIL": na_or(card.extras.get("mem_util_pct", 0.0), "{:.0f} %"),
            "MEM_CLOCK": "96 MHz",
            "ENC_UTIL": "N/A",
            "ENC_CLOCK": "812 MHz",
            "DEC_UTIL": "N/A",
            "DEC_CLOCK": "512 MHz",
            "THROTTLE": "UNTHROTTLED",
            "SINGLE_ECC": "0",
            "DOUBLE_ECC": "0",
            "PCIE_REPLAY": "0",
            "VRAM_USED": na_or(card.mem_used_mib, "{:.0f} MB"),
            "VRAM_TOTAL": na_or(card.mem_total_mib, "{:.0f} MB"),
            "PCIE_BW": "N/A Mb/s",
        }
        lines.append("".join(f"{values[name]:>{width}}" for name, width in _MONITOR_COLS))
    return "\n".join(lines) + "\n"


HELP = (
    "usage: amd-smi [-h] {version,list,static,firmware,ucode,bad-pages,metric,process,"
    "profile,event,topology,set,reset,monitor,xgmi} ...\n\n"
    "AMD System Management Interface | Version: 24.6.2+2b02a07 | ROCm version: 6.2.2\n"
)


def render_for_args(
    args: Sequence[str],
    cards: Sequence[FakeCard],
    processes: Sequence[FakeProcess] = (),
    *,
    legacy: bool = False,
) -> str:
    """The plain view (or, ``legacy``, the help text), ``monitor``, else the help text."""
    args = tuple(args)
    if args == ():
        return HELP if legacy else render(cards, processes)
    if args == ("monitor",):
        return render_monitor(cards)
    return HELP
