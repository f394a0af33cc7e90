"""AMD through ``amd-smi`` (ROCm 6.x and later; replaces rocm-smi).

Required query: the plain ``amd-smi`` view, an nvidia-smi-like box (AMD-SMI 25/26.x) with
utilisation, VRAM used/total, power and its cap, temperature and the process list. Older
amd-smi releases (the ROCm 6.x ones in our samples) have no such view and print their help
text: the parser refuses it and the live source falls back to ``amd-smi monitor`` (a
one-line-per-GPU table) for the rest of the session. Monitor shows no power cap and no
processes, so those are None/empty then (``process --json`` was left out: a second amd-smi run
per poll costs a Python start-up each second for figures the default view already gives).

Cells carry units (``126 W``, ``40 °C``, ``1 %``, ``227 MB``, ``19.6 GB``); amd-smi's "MB" is
taken as MiB like every other tool here. amd-smi really prints GFX 100 % on some idle cards
(sample R9700): the parser keeps it; judging it is the verdict engine's job.
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "amd-smi"

#: A cell value: a word, optionally followed by one space and a unit ("126 W", "N/A Mb/s").
_UNITS = r"(?:W|°C|%|MHz|GHz|MB|GB|KB|KiB|MiB|GiB|TB|B|Mb/s|GB/s|GT/s|ns|ms|V|mV)"
_VALUE_RE = re.compile(rf"\S+(?: {_UNITS}(?=\s|$))?")
_SIZE_FACTOR = {
    "B": 1 / (1024 * 1024), "KB": 1 / 1024, "KIB": 1 / 1024, "MB": 1.0, "MIB": 1.0,
    "GB": 1024.0, "GIB": 1024.0, "TB": 1024.0 * 1024.0,
}
_BDF_RE = re.compile(r"^\s*([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F])\s*(.*?)\s*$")
_PROC_RE = re.compile(
    rf"^\s*(\d+)\s+(\d+)\s+(.*?)\s+(\S+ {_UNITS})\s+(\S+ {_UNITS})\s+(\S+ {_UNITS})\s+(.*?)\s*$"
)


def _values(text: str) -> list[str]:
    return _VALUE_RE.findall(text)


def _mib(cell: str | None) -> float | None:
    """``"19.6 GB"`` -> 20070.4; ``"227 MB"`` -> 227.0; a bare number is MiB."""
    if cell is None:
        return None
    figure = num(cell)
    if figure is None:
        return None
    unit = cell.split()[-1].upper() if " " in cell.strip() else "MB"
    return figure * _SIZE_FACTOR.get(unit, 1.0)


_PAIR_RE = re.compile(r"^(N/A|[-\d.]+)\s*/\s*(N/A|[-\d.]+)")


def _pair(cell: str | None) -> tuple[float | None, float | None]:
    """``"103/300 W"`` -> (103, 300); ``"N/A/300 W"`` -> (None, 300)."""
    if cell is None:
        return None, None
    match = _PAIR_RE.match(cell.strip())
    if match is None:
        return num(cell), None
    return num(match.group(1)), num(match.group(2))


def parse_default(text: str) -> ToolReading:
    """Parse the plain ``amd-smi`` box view (two lines per GPU, then a process box)."""
    text = strip_ansi(text)
    version = re.search(r"AMD-SMI\s+(\S+)", text)
    if version is None or "GPU-Name" not in text:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "(empty output)")
        raise ParseError(f"amd-smi: not the default box view: {first[:200]}")
    header_a: list[str] = []
    header_b: list[str] = []
    cards: list[CardReading] = []
    processes: list[CardProcess] = []
    pending: tuple[re.Match[str], list[str]] | None = None
    for line in text.splitlines():
        cells = line.strip().strip("|").split("|")
        if len(cells) == 2:
            left, right = cells
            if "GPU-Name" in left:
                header_a = right.split()
                continue
            if "Partition-Mode" in left or left.split()[:1] == ["GPU"]:
                header_b = right.split()
                continue
            if bdf := _BDF_RE.match(left):
                pending = (bdf, _values(right))
                continue
            if pending is not None and (idx := re.match(r"^\s*(\d+)\s", left)):
                cards.append(_box_card(pending, int(idx.group(1)), header_a, header_b,
                                       _values(right)))
            pending = None
        elif len(cells) == 1 and (proc := _PROC_RE.match(cells[0])):
            processes.append(
                CardProcess(
                    pid=int(proc.group(2)), card_id=f"amd:{int(proc.group(1))}",
                    name=proc.group(3).strip() or None, mem_used_mib=_mib(proc.group(5)),
                )
            )
    return ToolReading(cards=cards, processes=processes, version=version.group(1))


def _box_card(
    pending: tuple[re.Match[str], list[str]], index: int, header_a: list[str],
    header_b: list[str], values_b: list[str],
) -> CardReading:
    bdf, values_a = pending
    row = {
        **dict(zip(header_a, values_a, strict=False)),
        **dict(zip(header_b, values_b, strict=False)),
    }
    power, cap = _pair(row.get("Power-Usage"))
    used, total = _pair(row.get("Mem-Usage"))
    extras: dict[str, float | str | None] = {}
    if "Mem-Uti" in row:
        extras["mem_util_pct"] = num(row["Mem-Uti"])
    name = bdf.group(2).strip()
    return CardReading(
        vendor="amd",
        index=index,
        name=name or None,
        bus_id=bdf.group(1),
        util_pct=num(row.get("GFX-Uti")),
        mem_used_mib=used,
        mem_total_mib=total,
        power_w=power,
        power_cap_w=cap or None,  # "N/A/0 W" on an APU: a 0 W cap is no cap
        temp_c=num(row.get("Temp")),
        extras=extras,
        tool=TOOL,
    )


def parse_monitor(text: str) -> ToolReading:
    """Parse ``amd-smi monitor`` (any column subset: ``-ptum``, all columns, ``-q`` processes).

    Columns are matched by header name; values are split as "word [unit]", so alignment and
    the optional version banner above the table do not matter.
    """
    text = strip_ansi(text)
    version = re.search(r"AMDSMI Tool:\s*(\S+)", text)
    header: list[str] | None = None
    proc_header: list[str] | None = None
    cards: list[CardReading] = []
    processes: list[CardProcess] = []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "GPU" and ("POWER" in words or "GFX_UTIL" in words):
            header, proc_header = words, None
            continue
        if words[0] == "GPU" and "PID" in words:
            proc_header = words
            continue
        if not re.fullmatch(r"\d+", words[0]):
            continue
        values = _values(line)
        if proc_header is not None:
            row = dict(zip(proc_header, values, strict=False))
            pid = num(row.get("PID"))
            if pid is not None:
                processes.append(
                    CardProcess(
                        pid=int(pid), card_id=f"amd:{int(words[0])}", name=row.get("NAME"),
                        mem_used_mib=_mib(row.get("VRAM_MEM")),
                    )
                )
        elif header is not None:
            row = dict(zip(header, values, strict=False))
            row["GPU"] = words[0]  # the value split may glue a unit to it on garbage input
            cards.append(_monitor_card(row))
    if header is None:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "(empty output)")
        raise ParseError(f"amd-smi monitor: no table header found: {first[:200]}")
    return ToolReading(
        cards=cards, processes=processes, version=version.group(1) if version else None
    )


def _monitor_card(row: dict[str, str]) -> CardReading:
    extras: dict[str, float | str | None] = {}
    for key, name in (
        ("MEM_UTIL", "mem_util_pct"), ("ENC_UTIL", "enc_pct"), ("DEC_UTIL", "dec_pct"),
        ("MEM_TEMP", "mem_temp_c"),
    ):
        if key in row:
            extras[name] = num(row[key])
    if "THROTTLE" in row:
        extras["throttle"] = row["THROTTLE"]
    return CardReading(
        vendor="amd",
        index=int(row["GPU"]),
        util_pct=num(row.get("GFX_UTIL")),
        mem_used_mib=_mib(row.get("VRAM_USED")),
        mem_total_mib=_mib(row.get("VRAM_TOTAL")),
        power_w=num(row.get("POWER")),
        temp_c=num(row.get("GPU_TEMP")),
        extras=extras,
        tool=TOOL,
    )


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="amd",
        names=("amd-smi",),
        search_dirs=("/opt/rocm/bin", "/usr/bin", "/usr/local/bin"),
        queries=(
            Query(
                name="default",
                args=(),
                parse=parse_default,
                fallback=Query(name="monitor", args=("monitor",), parse=parse_monitor),
            ),
        ),
        group="amd-family",
        priority=1,
    ),
)
