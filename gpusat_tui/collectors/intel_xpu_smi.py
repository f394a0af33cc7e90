"""Intel data-centre and Arc GPUs through Intel's ``xpu-smi`` (XPU Manager).

Parsed from real captures (XPU Manager docs, ALCF's Aurora docs, a Slurm monitor's tests); the
call sequence below (table, then ``dump`` fallback, per-card views) was never run on a card.

Required query: plain ``xpu-smi``. From v2.0 it prints an nvidia-smi-like table (GPU Name |
Bus-Id | ECC over Fan Temp Pwr:Usage/Cap | Memory-Usage | GPU-Util) with a Processes box: every
figure we need, one call. Older releases (1.x) print their help text instead; that is refused,
and the fallback ``xpu-smi dump -d -1 -m 0,1,2,3,4,5,18 -i 1 -n 1`` (the Slurm monitor's
command line: one CSV sample of every device: util, power, frequency, core and memory
temperature, memory util and used MiB) is used for the rest of the session. ``dump`` prints no
memory size and no power cap, and a Max 1550 prints util ``N/A`` on every sample. ``-i 1``
may make one call last about a second: never measured against the poll timeout on a card.

Per-card enrichments, every few polls (see ``enrich_every``): ``discovery -d N`` (name, UUID,
bus id, memory size) and ``stats -d N`` (temperature and used memory where ``dump`` has none;
empty cells are no figure).

Kunlunxin's tool is also called ``xpu-smi``: `identify` says "not ours" only for recognisably
Kunlunxin output (its ``XPU-RT Version`` banner, its ``DEVICES``/``DevID`` table, ``xpu_smi -m``
lines), and Kunlunxin's collector does the same for Intel's, so neither ever reads the other's
cards. Both are one group, Intel first: on an Intel box Kunlunxin's collector never runs the
tool, on a Kunlunxin box this one asks once, says "not ours" and gives way (a box with both
vendors' cards would see only the first that answers). The tool is named ``intel-xpu-smi`` here
(override ``GPUSAT_TOOL_INTEL_XPU_SMI``) so its variable differs from Kunlunxin's
``GPUSAT_TOOL_XPU_SMI``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpusat_tui.collectors.base import (
    FigureName,
    Query,
    ReadingFigures,
    ToolReading,
    ToolSpec,
    num,
    strip_ansi,
)
from gpusat_tui.collectors.dark_cards import block_cards
from gpusat_tui.collectors.tables import (
    box_blocks,
    box_card,
    box_cells,
    box_process_rows,
    first_group,
    header_index,
)
from gpusat_tui.collectors.xpu_smi import is_intel
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "intel-xpu-smi"

_VERSION_RE = re.compile(r"XPU-SMI\s+v?(\d[\w.]*)", re.IGNORECASE)
_KUNLUN_RE = re.compile(
    r"XPU-RT Version|^\s*DEVICES\s*$|\|\s*DevID\s*\||^[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:"
    r"[0-9A-Fa-f]{2}\.[0-7]\s+\d+\s+\d+\s",
    re.MULTILINE,
)
#: dump metric ids: 0 util, 1 power, 2 frequency, 3 core temp, 4 memory temp, 5 memory util,
#: 18 memory used (the column names below are what ``dump`` prints for them).
DUMP_ARGS = ("dump", "-d", "-1", "-m", "0,1,2,3,4,5,18", "-i", "1", "-n", "1")
_FLAGS = {"on", "off", "n/a"}


def is_kunlunxin(text: str) -> bool:
    """Is this Kunlunxin's ``xpu_smi``/``xpu-smi`` talking (and not Intel's)?"""
    return not is_intel(text) and bool(_KUNLUN_RE.search(text))


def identify(text: str) -> bool:
    """False only for recognisably Kunlunxin output; garbage stays ours (a parse error)."""
    return not is_kunlunxin(strip_ansi(text))


def _refuse_kunlunxin(text: str, view: str) -> None:
    if is_kunlunxin(text):
        raise ParseError(
            f"{view}: this is Kunlunxin's xpu-smi, not Intel's XPU Manager; no Intel card "
            "read from it"
        )


def _card(block: list[list[str]]) -> CardReading | None:
    cells = box_card(block, _FLAGS)
    if cells is None:
        return None
    extras: dict[str, float | str | None] = {}
    if len(cells.right) > 1:
        extras["compute_mode"] = cells.right[1]
    if len(cells.first) > 2 and cells.first[2]:
        extras["ecc"] = cells.first[2]
    return CardReading(
        vendor="intel", index=cells.index, name=cells.name, bus_id=cells.bus_id,
        **cells.figures(), extras=extras, tool=TOOL,
    )


def _processes(lines: Sequence[str]) -> list[CardProcess]:
    out: list[CardProcess] = []
    for tokens in box_process_rows(lines, "Processes:", min_tokens=4):
        mem = None
        if tokens[-1] == "MiB" and len(tokens) > 4:
            mem, tokens = num(tokens[-2]), tokens[:-2]
        out.append(CardProcess(pid=int(tokens[1]), card_id=f"intel:{tokens[0]}",
                               name=" ".join(tokens[3:]) or None, mem_used_mib=mem))
    return out


def parse_default(text: str) -> ToolReading:
    """Parse plain ``xpu-smi`` (v2.0+ table) into cards and processes."""
    text = strip_ansi(text)
    _refuse_kunlunxin(text, "xpu-smi")
    lines = text.splitlines()
    header_at = header_index(lines, "GPU", "Name", "Bus-Id")
    if header_at is None:
        if is_intel(text) and "Usage:" in text:
            raise ParseError("xpu-smi printed its help text (a release without the v2 table)")
        raise ParseError("xpu-smi: no device table ('GPU  Name | Bus-Id' header) found")
    cards, dark = block_cards(TOOL, box_blocks(lines, header_at + 1), _card)
    if not cards:
        raise ParseError("xpu-smi: the device table has no GPU rows")
    return ToolReading(
        cards=cards, processes=_processes(lines), version=first_group(_VERSION_RE, lines),
        notes=dark,
    )


_DUMP_FIELDS: dict[str, FigureName] = {
    "gpu utilization (%)": "util_pct",
    "gpu power (w)": "power_w",
    "gpu core temperature (celsius degree)": "temp_c",
    "gpu memory used (mib)": "mem_used_mib",
    "gpu memory utilization (%)": "mem_pct",
}
_DUMP_EXTRAS = {
    "gpu frequency (mhz)": "freq_mhz",
    "gpu memory temperature (celsius degree)": "mem_temp_c",
}


def parse_dump(text: str) -> ToolReading:
    """Parse ``xpu-smi dump`` CSV: the last row of each DeviceId wins (a dump may hold rounds)."""
    text = strip_ansi(text)
    _refuse_kunlunxin(text, "xpu-smi dump")
    header: list[str] | None = None
    rows: dict[int, dict[str, str]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if cells[:2] == ["Timestamp", "DeviceId"]:
            header = [c.lower() for c in cells]
            continue
        if header is None or len(cells) != len(header) or not cells[1].isdigit():
            continue
        rows[int(cells[1])] = dict(zip(header, cells, strict=True))
    if not rows:
        raise ParseError("xpu-smi dump: no 'Timestamp, DeviceId, ...' CSV rows found")
    cards: list[CardReading] = []
    for index in sorted(rows):
        row = rows[index]
        fields: ReadingFigures = {}
        for col, name in _DUMP_FIELDS.items():
            fields[name] = num(row.get(col))
        extras: dict[str, float | str | None] = {
            name: num(row[col]) for col, name in _DUMP_EXTRAS.items() if col in row
        }
        cards.append(
            CardReading(vendor="intel", index=index, extras=extras, tool=TOOL, **fields)
        )
    return ToolReading(cards=cards)


def _key_values(text: str) -> list[tuple[str, str, str]]:
    """``| id | Key: value |`` (discovery) or ``| Key | value |`` (stats) rows, as
    (first cell, key, value)."""
    out: list[tuple[str, str, str]] = []
    for line in strip_ansi(text).splitlines():
        stripped = line.strip()
        if not stripped.startswith("|") or set(stripped) <= set("|+-= "):
            continue
        cells = box_cells(stripped)
        if len(cells) < 2:
            continue
        key, sep, value = cells[1].partition(":")
        out.append((cells[0], key.strip() if sep else "", value.strip() if sep else cells[1]))
    return out


def parse_discovery(text: str) -> ToolReading:
    """Parse ``xpu-smi discovery -d N``: one device's name, UUID, bus id and memory size."""
    values: dict[str, str] = {}
    index: int | None = None
    for first, key, value in _key_values(text):
        if first.isdigit() and index is None:
            index = int(first)
        if key:
            values.setdefault(key, value)
    if index is None or "Device Name" not in values:
        raise ParseError("xpu-smi discovery: no 'Device ID | Device Name: ...' rows found")
    return ToolReading(cards=[
        CardReading(
            vendor="intel",
            index=index,
            name=values.get("Device Name") or None,
            uuid=values.get("UUID") or values.get("SOC UUID") or None,
            bus_id=values.get("PCI BDF Address") or None,
            mem_total_mib=num(values.get("Memory Physical Size")) or None,
            tool=TOOL,
        )
    ])


_STATS_FIELDS: dict[str, FigureName] = {
    "GPU Utilization (%)": "util_pct",
    "GPU Power (W)": "power_w",
    "GPU Core Temperature (C)": "temp_c",
    "GPU Memory Used (MiB)": "mem_used_mib",
    "GPU Memory Util (%)": "mem_pct",
}


def parse_stats(text: str) -> ToolReading:
    """Parse ``xpu-smi stats -d N`` (a ``| name | value |`` box; empty cells are no figure)."""
    values = {first: value for first, key, value in _key_values(text) if not key}
    device = values.get("Device ID", "")
    if not device.isdigit():
        raise ParseError("xpu-smi stats: no 'Device ID | n' row found")
    fields: ReadingFigures = {}
    for label, name in _STATS_FIELDS.items():
        fields[name] = num(values.get(label))
    extras: dict[str, float | str | None] = {}
    if "GPU Frequency (MHz)" in values:
        extras["freq_mhz"] = num(values["GPU Frequency (MHz)"])
    return ToolReading(cards=[
        CardReading(vendor="intel", index=int(device), extras=extras, tool=TOOL, **fields)
    ])


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="intel",
        names=("xpu-smi",),
        search_dirs=("/usr/bin", "/usr/local/bin"),
        queries=(
            Query(
                name="default",
                args=(),
                parse=parse_default,
                fallback=Query(name="dump", args=DUMP_ARGS, parse=parse_dump),
            ),
            Query(
                name="discovery", args=("discovery", "-d", "{index}"), parse=parse_discovery,
                optional=True, per_card=True,
            ),
            Query(
                name="stats", args=("stats", "-d", "{index}"), parse=parse_stats,
                optional=True, per_card=True,
            ),
        ),
        identify=identify,
        group="xpu-smi",
        priority=0,
    ),
)
