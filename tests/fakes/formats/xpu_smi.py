"""Fake Kunlunxin ``xpu_smi`` output in the real format.

``render``: plain ``xpu_smi`` like samples/smi/kunlunxin/xpu_smi-R300-2dev-video-section-4.31.txt
(columns sized to their content, numbers right-aligned, ``MB`` units, empty PROCESSES table when
there are none). Like the real K200/R300 view it shows no power or temperature: those come from
``render_machine`` (``xpu_smi -m``, the P800 capture's column order). ``intel_help`` is what
Intel's ``xpu-smi`` prints with no arguments (XPU Manager docs), for Intel-vs-Kunlun tests.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import respond, whole

INTEL_HELP = (
    "Intel(R) XPU System Management Interface -- v1.0 \n"
    "Intel(R) XPU System Management Interface provides the Intel data center GPU device info. "
    "It can also be used to update the firmware.  \n"
    " \n"
    "Usage: xpu-smi [Options]\n"
    "  xpu-smi -v\n"
    "  xpu-smi -h\n"
    "  xpu-smi discovery\n"
)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]
    rule = "-" * (sum(widths) + 3 * len(widths) + 1)
    out = [rule, "| " + " | ".join(h.center(w) for h, w in zip(header, widths, strict=True))
           + " |", rule]
    for row in rows:
        out.append("| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |")
    out.append(rule)
    return out


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """Plain ``xpu_smi`` (DEVICES and PROCESSES tables)."""
    rows = [
        [str(c.index), f"0000:{0x53 + 3 * c.index:02x}:00.0", f"{c.name} ", f"02K{c.index:03d}",
         f"/dev/xpu{c.index} ", f"{whole(c.util_pct)} %", "0 / 63 MB",
         f"{whole(c.mem_used_mib)} / {whole(c.mem_total_mib)} MB"]
        for c in cards
    ]
    lines = ["Runtime Version: 4.31", "Driver Version: 4.0", "  DEVICES"]
    lines += _table(["DevID", "PCI Addr", "Model", "SN", "INODE", "UseRate", "L3", "Memory"], rows)
    lines.append("  PROCESSES")
    prow = [[str(p.card_index), str(p.pid), "1", "0 MB", f"{whole(p.mem_mib)} MB", p.name]
            for p in processes]
    table = _table(["DevID", "PID", "Streams", "L3", "Memory", "Command"], prow)
    if not processes:
        table = table[:3] + table[2:3]
    lines += table
    return "\n".join(lines) + "\n"


def render_machine(cards: Sequence[FakeCard]) -> str:
    """``xpu_smi -m``: one space-separated line per device."""
    out = []
    for c in cards:
        out.append(
            f"00000000:{3 + 2 * c.index:02x}:00.0 {c.index} {c.index} 02K15K624CV{c.index:05d} "
            f"{whole(c.temp_c)} 0 0 0 {whole(c.power_w)} 1450 1450 1450 1450 1450 1450 2 96 "
            f"{whole(c.mem_used_mib)} {whole(c.mem_total_mib)} {whole(c.util_pct)} "
            "1.0:2.6:1.39.1.7 "
            f'"{c.name}" 0 0 0 0 0 0 0 0 0 0'
        )
    return "\n".join(out) + "\n"


def render_for_args(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """Plain view for no args, machine-readable lines for ``-m``, else a usage complaint."""
    return respond(
        args,
        {(): lambda: render(cards, processes), ("-m",): lambda: render_machine(cards)},
        "xpu_smi: invalid option\nUsage: xpu_smi [-m] [-d DevID]\n",
    )
