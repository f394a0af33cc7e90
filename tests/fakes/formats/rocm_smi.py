"""Fake ``rocm-smi`` output in the real formats (template: the ROCm 6.x Concise Info samples).

- `render`: the plain ``rocm-smi`` table (ROCm 6.x layout: Device/Node/IDs/Temp/Power...).
- `render_meminfo_json`: ``rocm-smi --showmeminfo vram --json`` (one line, string values).
- `render_processes`: ``rocm-smi --showpids --showpidgpus`` (KFD table + GPUs Indexed by PID).
- `render_for_args`: what the real tool prints for an argv (argparse refusal otherwise).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gpusat_tui.collectors.rocm_smi import SPECS
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import by_query_name, na_or, respond

_RULE = "=" * 122
_MIB = 1024 * 1024


def _banner(title: str, width: int = 122) -> str:
    return f" {title} ".center(width, "=")


def _pct(card: FakeCard) -> float | None:
    if card.mem_used_mib is None or not card.mem_total_mib:
        return None
    return round(100.0 * card.mem_used_mib / card.mem_total_mib)


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """The plain ``rocm-smi`` Concise Info table (processes are a separate query)."""
    del processes
    lines = [
        _banner("ROCm System Management Interface"),
        _banner("Concise Info"),
        "Device  Node  IDs              Temp    Power     Partitions          SCLK     MCLK    "
        "Fan     Perf  PwrCap  VRAM%  GPU%",
        "              (DID,     GUID)  (Edge)  (Socket)  (Mem, Compute, ID)",
        _RULE,
    ]
    for card in cards:
        lines.append(
            f"{card.index:<8}{card.index + 2:<6}{'0x66a1,':<10}{29631 + card.index:<7}"
            f"{na_or(card.temp_c, '{:.1f}°C'):<8}{na_or(card.power_w, '{:.1f}W'):<10}"
            f"{'N/A, N/A, 0':<20}{'1725Mhz':<9}{'350Mhz':<8}{'15.69%':<8}{'auto':<6}"
            f"{na_or(card.power_cap_w, '{:.1f}W'):<8}{na_or(_pct(card), '{:.0f}%'):<7}"
            f"{na_or(card.util_pct, '{:.0f}%')}"
        )
    lines += [_RULE, _banner("End of ROCm SMI Log")]
    return "\n".join(lines) + "\n"


def render_meminfo_json(cards: Sequence[FakeCard]) -> str:
    """``--showmeminfo vram --json``: bytes as strings, keyed card<index>, one line."""
    data = {
        f"card{c.index}": {
            "VRAM Total Memory (B)": na_or(c.mem_total_mib, "{:.0f}", _MIB),
            "VRAM Total Used Memory (B)": na_or(c.mem_used_mib, "{:.0f}", _MIB),
        }
        for c in cards
    }
    return json.dumps(data) + "\n"


def render_processes(
    cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """``--showpids --showpidgpus``: KFD table (GPU(s) is a count) then PID -> devices."""
    del cards
    by_pid: dict[int, list[FakeProcess]] = {}
    for proc in processes:
        by_pid.setdefault(proc.pid, []).append(proc)
    lines = ["", _banner("ROCm System Management Interface", 90), _banner("KFD Processes", 90)]
    if not by_pid:
        lines.append("No KFD PIDs currently running")
    else:
        lines += [
            "KFD process information:",
            "PID   \tPROCESS NAME\tGPU(s)\tVRAM USED  \tSDMA USED\tCU OCCUPANCY\t",
        ]
        for pid, procs in by_pid.items():
            vram = int(sum(p.mem_mib for p in procs) * _MIB)
            lines.append(
                f"{pid:<6}\t{procs[0].name}\t{len(procs):<6}\t{vram:<11}\t{0:<9}\t{'UNKNOWN':<12}\t"
            )
    lines += ["=" * 90, _banner("GPUs Indexed by PID", 80)]
    if not by_pid:
        lines.append("No KFD PIDs currently running")
    for pid, procs in by_pid.items():
        lines.append(f"PID {pid} is using {len(procs)} DRM device(s):")
        lines.append("".join(f"{p.card_index} " for p in procs))
    lines += ["=" * 80, _banner("End of ROCm SMI Log", 90)]
    return "\n".join(lines) + "\n"


def usage(args: Sequence[str]) -> str:
    """What rocm-smi's argparse prints (on stderr, exit 2) for flags it does not know."""
    return (
        "usage: rocm-smi [-h] [-V] [-d DEVICE [DEVICE ...]] [--alldevices] [--showhw] [-a]\n"
        f"rocm-smi: error: unrecognized arguments: {' '.join(args)}\n"
    )


def render_for_args(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """What rocm-smi prints for one of the argvs in its SPECS, else its argparse refusal."""
    views = by_query_name(SPECS[0], {
        "table": lambda: render(cards),
        "meminfo-json": lambda: render_meminfo_json(cards),
        "pids": lambda: render_processes(cards, processes),
    })
    return respond(args, views, usage(args))
