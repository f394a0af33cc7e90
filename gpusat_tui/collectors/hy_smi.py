"""Hygon DCU through ``hy-smi`` (shipped by hyhal under ``/opt/hyhal/bin``).

The default view is a one-line-per-card table whose first header cell names the device kind
(``HCU`` on newer hyhal, ``DCU`` on DTK 24.x)::

    HCU     Temp     AvgPwr     Perf     PwrCap     VRAM%      HCU%      Dec%  Enc%  Mode

It gives temperature, power, cap, VRAM % and utilisation (``HCU%``/``DCU%``), but no MiB:
``mem_used_mib``/``mem_total_mib`` stay None (no real output of a MiB view was available to
verify a parser against). DTK's own ``rocm-smi`` prints the same table; `rocm_smi` recognises it
and delegates here, so one machine never yields the cards twice (same group, hy-smi first).

``dcu-smi`` is NOT listed as a name: no real output of it was found to confirm it prints this
table. Use ``--tool hygon=/path/to/dcu-smi`` to try it.
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import ParseError, Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.model import CardReading

TOOL = "hy-smi"

_HEADER_RE = re.compile(r"^\s*(HCU|DCU)\s+Temp\b")
_ROW_RE = re.compile(r"^\s*\d+\s")


def parse_dcu_table(text: str, tool: str = TOOL) -> ToolReading:
    """Parse the DCU/HCU table of hy-smi (or of DTK's rocm-smi, with ``tool="rocm-smi"``).

    Columns are found by header name, so older hyhal without Dec%/Enc% and newer with them
    both parse; a column a version lacks is None.
    """
    lines = strip_ansi(text).splitlines()
    header: list[str] | None = None
    cards: list[CardReading] = []
    for line in lines:
        if header is None:
            if _HEADER_RE.match(line):
                header = line.split()
            continue
        if line.startswith("="):
            if cards:
                break
            continue
        if not _ROW_RE.match(line):
            continue
        cells = dict(zip(header, line.split(), strict=False))
        util_key = "HCU%" if "HCU%" in cells else "DCU%"
        extras: dict[str, float | str | None] = {}
        for key, name in (("Dec%", "dec_pct"), ("Enc%", "enc_pct")):
            if key in cells:
                extras[name] = num(cells[key])
        mode = cells.get("Mode")
        if mode is not None and num(mode) is None and mode.upper() != "N/A":
            extras["mode"] = mode
        cards.append(
            CardReading(
                vendor="hygon",
                index=int(cells[header[0]]),
                util_pct=num(cells.get(util_key)),
                mem_pct=num(cells.get("VRAM%")),
                power_w=num(cells.get("AvgPwr")),
                power_cap_w=num(cells.get("PwrCap")),
                temp_c=num(cells.get("Temp")),
                extras=extras,
                tool=tool,
            )
        )
    if header is None:
        first = next((ln.strip() for ln in lines if ln.strip()), "(empty output)")
        raise ParseError(f"{tool}: no HCU/DCU table header found: {first[:200]}")
    return ToolReading(cards=cards)


def parse_table(text: str) -> ToolReading:
    """hy-smi's default view."""
    return parse_dcu_table(text, TOOL)


def parse_pids(text: str) -> ToolReading:
    """``hy-smi --showpids --showpidgpus``: hy-smi is a fork of rocm-smi.

    No real hy-smi process output was available: this reuses the rocm-smi parser (KFD table
    plus "GPUs Indexed by PID"), tolerating ``DCU(s)``/``HCU(s)`` headers, and is unverified on
    a real DCU. If hy-smi refuses these flags the live source simply stops asking.
    """
    from gpusat_tui.collectors.rocm_smi import parse_pid_sections

    return parse_pid_sections(text, vendor="hygon")


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="hygon",
        names=("hy-smi",),
        search_dirs=("/opt/hyhal/bin", "/opt/dtk/bin", "/opt/dtk/hyhal/bin", "/usr/local/bin"),
        queries=(
            Query(name="table", args=(), parse=parse_table),
            Query(
                name="pids", args=("--showpids", "--showpidgpus"), parse=parse_pids,
                optional=True, process_list=True,
            ),
        ),
        group="amd-family",
        priority=0,
    ),
)
