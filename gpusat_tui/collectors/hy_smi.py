"""Hygon DCU through ``hy-smi`` (shipped by hyhal under ``/opt/hyhal/bin``).

The default view is a one-line-per-card table whose first header cell names the device kind
(``HCU`` on newer hyhal, ``DCU`` on DTK 24.x)::

    HCU     Temp     AvgPwr     Perf     PwrCap     VRAM%      HCU%      Dec%  Enc%  Mode

It gives temperature, power, cap, VRAM % and utilisation (``HCU%``/``DCU%``), but no MiB. The
enrichment `parse_json` (``--showmeminfo vram --json``) adds VRAM used/total in MiB where hy-smi
answers it (its one real JSON capture is malformed; see there). DTK's own ``rocm-smi`` prints
the same table; `rocm_smi` recognises it and delegates here, so one machine never yields the
cards twice (same group, hy-smi first).

``dcu-smi`` is NOT listed as a name: no real output of it was found to confirm it prints this
table. Use ``--tool hygon=/path/to/dcu-smi`` to try it.
"""

from __future__ import annotations

import json
import re

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.collectors.kfd_processes import parse_pid_sections
from gpusat_tui.errors import ParseError
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


# A value's closing quote glued to the next key's opening quote: "91.0""Average GFX ..." (the
# BW-series hy-smi prints its JSON so). Never matches an empty "" key or value.
_GLUED_RE = re.compile(r'"\s*"(?=[^"]*"\s*:)')


def parse_json(text: str) -> ToolReading:
    """``hy-smi ... --json``: ``{"card0": {"HCU use (%)": "0.0", "vram Total Memory (MiB)": ...}}``.

    The one real capture (BW series) is not valid JSON: commas are missing between some fields.
    When strict parsing fails, glued fields are split and parsing is tried once more (the only
    repair made); anything still invalid is a ParseError. Gives VRAM in MiB, which the table
    lacks. The flags we pass (``--showmeminfo vram --json``, as rocm-smi takes them) are not
    verified on a DCU: a hy-smi that refuses them loses only the MiB figures.
    """
    body = strip_ansi(text).strip()
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        try:
            data = json.loads(_GLUED_RE.sub('", "', body))
        except (ValueError, RecursionError) as exc:
            raise ParseError(f"hy-smi --json: not JSON, even with missing commas restored ({exc})"
                             ) from exc
    if not isinstance(data, dict):
        raise ParseError("hy-smi --json: expected an object keyed by card")
    if any(re.fullmatch(r"card\d+", k) for k in data) and "card0" not in data:
        return ToolReading(notes=["hy-smi --json numbers cards from card1; not used"])
    cards: list[CardReading] = []
    for key, fields in data.items():
        match = re.fullmatch(r"card(\d+)", key)
        if match is None or not isinstance(fields, dict):
            continue
        fields = {str(k): None if v is None else str(v) for k, v in fields.items()}
        util = fields.get("HCU use (%)", fields.get("DCU use (%)"))
        mem_pct = fields.get("HCU memory use (%)", fields.get("DCU memory use (%)"))
        extras: dict[str, float | str | None] = {}
        for label, name in (("Temperature (Sensor junction) (C)", "junction_c"),
                            ("Temperature (Sensor mem) (C)", "mem_temp_c")):
            if label in fields:
                extras[name] = num(fields[label])
        cards.append(
            CardReading(
                vendor="hygon",
                index=int(match.group(1)),
                name=fields.get("Card Series") or fields.get("Card series") or None,
                util_pct=num(util),
                mem_used_mib=num(fields.get("vram Total Used Memory (MiB)")),
                mem_total_mib=num(fields.get("vram Total Memory (MiB)")) or None,
                mem_pct=num(mem_pct),
                power_w=num(fields.get("Average Graphics Package Power (W)")),
                temp_c=num(fields.get("Temperature (Sensor edge) (C)")),
                extras=extras,
                tool=TOOL,
            )
        )
    if not cards:
        raise ParseError("hy-smi --json: no 'cardN' objects")
    return ToolReading(cards=cards)


def parse_pids(text: str) -> ToolReading:
    """``hy-smi --showpids --showpidgpus``: hy-smi is a fork of rocm-smi.

    No real hy-smi process output was available: this reuses the rocm-smi parser (KFD table
    plus "GPUs Indexed by PID"), tolerating ``DCU(s)``/``HCU(s)`` headers, and is unverified on
    a real DCU. If hy-smi refuses these flags the live source simply stops asking.
    """
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
                name="json", args=("--showmeminfo", "vram", "--json"), parse=parse_json,
                optional=True,
            ),
            Query(
                name="pids", args=("--showpids", "--showpidgpus"), parse=parse_pids,
                optional=True, process_list=True,
            ),
        ),
        group="amd-family",
        priority=0,
    ),
)
