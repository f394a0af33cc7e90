"""Baidu Kunlunxin XPUs through ``xpu_smi`` (also installed as ``xpu-smi``).

Required query: plain ``xpu_smi``. Releases up to 4.x print a ``DEVICES`` table (``DevID |
PCI Addr | Model | SN | INODE | UseRate | L3 | Memory``), then optional ``VIDEO`` and
``PROCESSES`` tables. Columns are read by their header names, so the wider tables of newer
releases (extra Power/Temp/State columns) parse too. The K200 and R300 captures print **no
power and no temperature** in this view.
P800-era releases (5.0.21.x) print an nvidia-smi-like box instead, three rows per card (the
third: L3-Usage and SR-IOV mode), with power, cap and temperature.

Optional enrichment: ``xpu_smi -m``, one space-separated line per device (verified on a P800
capture only; columns: 0 bus, 1 dev id, 4 temp °C, 8 power W, 17/18 memory used/total MiB,
19 util %, the quoted model). It fills power and temperature where the default view has none;
an older tool that refuses ``-m`` just loses those two figures.

Intel's XPU Manager ships a tool also called ``xpu-smi`` (plain ``xpu-smi`` prints its help
text or, from v2.0, its own table; ``xpu-smi dump`` prints CSV). `identify` recognises Intel
output so that it never becomes a Kunlunxin card, and the parsers refuse it with a ParseError
naming Intel; Intel's cards are read by `intel_xpu_smi`, whose `identify` refuses ours.

Each DevID is one card: a K200 board carries two logical devices (same PCI address and SN,
``/dev/xpu0`` and ``/dev/xpu1``), and each is what a training rank opens.
"""

from __future__ import annotations

import re
import shlex

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.collectors.dark_cards import block_cards
from gpusat_tui.collectors.tables import (
    box_blocks,
    box_card,
    box_cells,
    header_index,
    mem_pair,
)
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "xpu_smi"

_INTEL_MARKERS = (
    "intel(r) xpu system management interface",
    "intel xpu system management interface",
    "intel xpu-smi",
    "level zero",
    "xpu-smi discovery",
)
_INTEL_DUMP_RE = re.compile(r"^\s*Timestamp,\s*DeviceId\b", re.MULTILINE)
_PAIR_RE = re.compile(r"(\S+)\s*/\s*(\S+)")
_M_LINE_RE = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s+\d+\s")


def is_intel(text: str) -> bool:
    """Is this Intel XPU Manager's ``xpu-smi`` talking (help text, dump CSV, discovery)?"""
    lowered = text.lower()
    return any(marker in lowered for marker in _INTEL_MARKERS) or bool(
        _INTEL_DUMP_RE.search(text)
    )


def identify(text: str) -> bool:
    """False only for recognisably Intel output: garbage from a real Kunlunxin tool must still
    surface as a parse error, not vanish as "not ours"."""
    return not is_intel(strip_ansi(text))


def _refuse_intel(text: str, view: str) -> None:
    if is_intel(text):
        raise ParseError(
            f"{view}: this is Intel's xpu-smi (XPU Manager), not Kunlunxin's xpu_smi; "
            "no Kunlunxin card read from it"
        )


def _tables(lines: list[str]) -> dict[str, tuple[list[str], list[list[str]]]]:
    """Split the output into its titled tables: title -> (header cells, row cells)."""
    tables: dict[str, tuple[list[str], list[list[str]]]] = {}
    title: str | None = None
    header: list[str] | None = None
    for line in lines:
        stripped = line.strip()
        if stripped and not stripped.startswith(("|", "-")) and stripped.isupper():
            title, header = stripped, None
            tables[title] = ([], [])
            continue
        if title is None or not stripped.startswith("|"):
            continue
        cells = box_cells(stripped)
        if header is None:
            header = [c.lower() for c in cells]
            tables[title] = (header, [])
            continue
        tables[title][1].append(cells)
    return tables


def _col(header: list[str], row: list[str], *names: str) -> str | None:
    for name in names:
        for i, head in enumerate(header):
            if head.startswith(name) and i < len(row):
                return row[i]
    return None


def _pct_of(cell: str | None) -> float | None:
    """``"0 %, 0 fps, 800 MHz"`` -> 0.0 (the first figure: the engine's busy %)."""
    if cell is None:
        return None
    return num(cell.split(",")[0])


_DRIVER_RE = re.compile(r"Driver Version:\s*(\S+)")


def _box_card(block: list[list[str]]) -> CardReading | None:
    cells = box_card(block, ("n/a", "on", "off"))
    if cells is None:
        return None
    extras: dict[str, float | str | None] = {}
    if len(cells.right) > 1:
        extras["compute_mode"] = cells.right[1]
    if len(block) > 2:  # P800: L3-Usage and SR-IOV M. on a third row
        third = block[2]
        l3 = mem_pair(third[1]) if len(third) > 1 else None
        if l3:
            extras["l3_used_mb"], extras["l3_total_mb"] = num(l3[0]), num(l3[1])
        if len(third) > 2 and third[2]:
            extras["sriov"] = third[2]
    return CardReading(
        vendor="kunlunxin", index=cells.index, name=cells.name, bus_id=cells.bus_id,
        **cells.figures(), extras=extras, tool=TOOL,
    )


def _parse_box(lines: list[str], header_at: int) -> ToolReading:
    """The nvidia-smi-like table of P800-era releases (5.0.21.x): three rows per card.

    Processes box rows (``XPU XI CI PID Type Process name Usage``) are read by position after
    that header; no public capture shows one (all say "No running processes found").
    """
    cards, dark = block_cards(TOOL, box_blocks(lines, header_at + 1), _box_card)
    if not cards:
        raise ParseError("xpu_smi: the XPU table has no card rows")
    processes: list[CardProcess] = []
    at = header_index(lines, "Processes:")
    for line in lines[at + 1:] if at is not None else []:
        tokens = " ".join(box_cells(line)).split() if line.strip().startswith("|") else []
        if len(tokens) < 6 or not tokens[0].isdigit() or not tokens[3].isdigit():
            continue
        mem = tokens[-1] if tokens[-1].lower().endswith("mib") else None
        processes.append(CardProcess(
            pid=int(tokens[3]), card_id=f"kunlunxin:{tokens[0]}",
            name=" ".join(tokens[5:-1] if mem else tokens[5:]) or None, mem_used_mib=num(mem),
        ))
    version = next((m.group(1) for ln in lines if (m := _DRIVER_RE.search(ln))), None)
    return ToolReading(cards=cards, processes=processes, version=version, notes=dark)


def parse_default(text: str) -> ToolReading:
    """Parse plain ``xpu_smi``: DEVICES / VIDEO / PROCESSES tables, or the P800-era box."""
    text = strip_ansi(text)
    _refuse_intel(text, "xpu_smi")
    lines = text.splitlines()
    box_at = header_index(lines, "XPU", "Name", "Bus-Id")
    if box_at is not None:
        return _parse_box(lines, box_at)
    version = None
    for line in lines:
        if line.strip().startswith("Runtime Version:"):
            version = line.split(":", 1)[1].strip() or None
    tables = _tables(lines)
    if "DEVICES" not in tables or not tables["DEVICES"][1]:
        raise ParseError("xpu_smi: no DEVICES table with device rows found")
    header, rows = tables["DEVICES"]
    cards: list[CardReading] = []
    for row in rows:
        dev = _col(header, row, "devid")
        if dev is None or not dev.isdigit():
            continue
        used = total = None
        memory = _col(header, row, "memory")
        if memory:
            pair = _PAIR_RE.search(memory)
            if pair:
                used, total = num(pair.group(1)), num(pair.group(2))
        extras: dict[str, float | str | None] = {}
        for key, names in (("sn", ("sn",)), ("inode", ("inode",)), ("state", ("state",))):
            value = _col(header, row, *names)
            if value:
                extras[key] = value
        l3 = _col(header, row, "l3")
        if l3:
            pair = _PAIR_RE.search(l3)
            if pair:
                extras["l3_used_mb"] = num(pair.group(1))
                extras["l3_total_mb"] = num(pair.group(2))
        cards.append(
            CardReading(
                vendor="kunlunxin",
                index=int(dev),
                name=_col(header, row, "model") or None,
                bus_id=_col(header, row, "pci addr", "bus") or None,
                util_pct=num(_col(header, row, "userate", "util")),
                mem_used_mib=used,
                mem_total_mib=total or None,
                power_w=num(_col(header, row, "power")),
                temp_c=num(_col(header, row, "temp")),
                extras=extras,
                tool=TOOL,
            )
        )
    if not cards:
        raise ParseError("xpu_smi: the DEVICES table has no device rows")
    if "VIDEO" in tables:
        vheader, vrows = tables["VIDEO"]
        video = {
            int(dev): {
                "dec_pct": _pct_of(_col(vheader, vrow, "dec")),
                "enc_pct": _pct_of(_col(vheader, vrow, "enc")),
                "imgproc_pct": _pct_of(_col(vheader, vrow, "imgproc")),
            }
            for vrow in vrows
            if (dev := _col(vheader, vrow, "devid")) is not None and dev.isdigit()
        }
        cards = [
            c.model_copy(update={"extras": {**c.extras, **video[c.index]}})
            if c.index in video else c
            for c in cards
        ]
    processes: list[CardProcess] = []
    if "PROCESSES" in tables:
        pheader, prows = tables["PROCESSES"]
        for prow in prows:
            dev = _col(pheader, prow, "devid")
            pid = _col(pheader, prow, "pid")
            if not (dev and dev.isdigit() and pid and pid.isdigit()):
                continue
            processes.append(
                CardProcess(
                    pid=int(pid),
                    card_id=f"kunlunxin:{dev}",
                    name=_col(pheader, prow, "command") or None,
                    mem_used_mib=num(_col(pheader, prow, "memory")),
                )
            )
    return ToolReading(cards=cards, processes=processes, version=version)


def parse_machine(text: str) -> ToolReading:
    """Parse ``xpu_smi -m``: one space-separated line per device (see module docstring)."""
    text = strip_ansi(text)
    _refuse_intel(text, "xpu_smi -m")
    cards: list[CardReading] = []
    for line in text.splitlines():
        if not _M_LINE_RE.match(line.strip()):
            continue
        try:
            fields = shlex.split(line)
        except ValueError:
            continue
        if len(fields) < 20 or not fields[1].isdigit():
            continue
        name = next((f for f in fields[20:] if not re.fullmatch(r"[-\d.:]+", f)), None)
        cards.append(
            CardReading(
                vendor="kunlunxin",
                index=int(fields[1]),
                name=name,
                bus_id=fields[0],
                util_pct=num(fields[19]),
                mem_used_mib=num(fields[17]),
                mem_total_mib=num(fields[18]) or None,
                power_w=num(fields[8]),
                temp_c=num(fields[4]),
                extras={"sn": fields[3]},
                tool=TOOL,
            )
        )
    if not cards:
        raise ParseError("xpu_smi -m: no machine-readable device lines found")
    return ToolReading(cards=cards)


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="kunlunxin",
        names=("xpu_smi", "xpu-smi"),
        search_dirs=("/usr/local/bin", "/usr/local/xpu/bin", "/usr/bin"),
        queries=(
            Query(name="default", args=(), parse=parse_default),
            Query(name="machine", args=("-m",), parse=parse_machine, optional=True),
        ),
        identify=identify,
        # One group with Intel's collector (intel_xpu_smi), which asks first: see its docstring.
        group="xpu-smi",
        priority=1,
    ),
)
