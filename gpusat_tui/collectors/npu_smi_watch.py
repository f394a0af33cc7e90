"""Huawei Ascend ``npu-smi info watch``: npu-smi's own loop mode, read as a `Stream`.

The watch view prints a header once (``NpuID(Idx)  ChipId(Idx) Pwr(W)  Temp(C)  AI Core(%) ...``;
newer drivers drop ``ChipId(Idx)`` and add ``NPU Util(%)`` / ``AI Cube(%)``), then one row per
chip per sample, every cell left-justified in 12 to 15 columns, trailing spaces included. Header
names hold spaces ("AI Core(%)") and end in a parenthesised unit; row cells hold none, so rows
split on whitespace and header names on their closing parenthesis.

Figures: AI Core % is the utilisation (as in ``npu-smi info``), Pwr the power, Memory(%) the
memory percentage. The view has no memory in MiB, no names, no bus ids and no power cap, which
is why it is not the default way to read npu-smi (see `collectors.loops`). Card index: the NPU
id when every row of a sample is a different NPU, else the row's position in the sample (the
same rule as `npu_smi` when no logical id is printed). Parsed from three real captures; the
stream itself (delay, buffering) is untested against a real npu-smi.
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import Stream, ToolReading, num, strip_ansi
from gpusat_tui.collectors.records import RowGroups
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardReading

TOOL = "npu-smi"

_HEADER_NAME_RE = re.compile(r"\s*([^()]+?\([^)]*\))")
#: Header name -> CardReading field or extras key.
_FIELDS = {
    "npuid(idx)": "npu_id",
    "chipid(idx)": "chip_id",
    "pwr(w)": "power_w",
    "temp(c)": "temp_c",
    "ai core(%)": "util_pct",
    "memory(%)": "mem_pct",
    "ai cpu(%)": "aicpu_pct",
    "ctrl cpu(%)": "ctrlcpu_pct",
    "memory bw(%)": "mem_bw_pct",
    "npu util(%)": "npu_util_pct",
    "ai cube(%)": "aicube_pct",
}
_CARD_FIELDS = {"power_w", "temp_c", "util_pct", "mem_pct"}


def header_names(line: str) -> list[str] | None:
    """``NpuID(Idx)  ChipId(Idx) Pwr(W) ...`` -> lower-case names, or None for any other line."""
    text = strip_ansi(line).strip()
    if not text.lower().startswith("npuid"):
        return None
    names = [m.group(1).strip().lower() for m in _HEADER_NAME_RE.finditer(text)]
    return names or None


def is_header(line: str) -> bool:
    return header_names(line) is not None


def _row_key(line: str, header: str | None) -> str | None:
    """NPU id and chip id (when the header has a chip column): repeats when a sample ends."""
    cells = strip_ansi(line).split()
    if not cells:
        return None
    names = header_names(header) if header else None
    width = 2 if names and len(names) > 1 and names[1] == "chipid(idx)" else 1
    return " ".join(cells[:width])


def parse_watch(text: str) -> ToolReading:
    """One sample of ``npu-smi info watch`` (its header, then one row per chip) -> cards.

    A captured file with several samples is read as its *last* sample (rows after the header,
    from the last row whose NPU/chip repeats an earlier one).
    """
    lines = [strip_ansi(line) for line in text.splitlines() if line.strip()]
    header_at = next((i for i, ln in enumerate(lines) if is_header(ln)), None)
    if header_at is None:
        first = lines[0][:80] if lines else "(empty)"
        raise ParseError(f"npu-smi info watch: no NpuID(Idx) header: {first!r}")
    names = header_names(lines[header_at]) or []
    rows = [ln.split() for ln in lines[header_at + 1:]]
    sample: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()
    width = 2 if len(names) > 1 and names[1] == "chipid(idx)" else 1
    for cells in rows:
        if len(cells) != len(names):
            raise ParseError(
                f"npu-smi info watch: a row has {len(cells)} cells under {len(names)} "
                f"columns: {' '.join(cells)[:80]!r}"
            )
        key = tuple(cells[:width])
        if key in seen:  # the next sample starts: keep only the newest
            sample, seen = [], set()
        seen.add(key)
        sample.append(cells)
    if not sample:
        return ToolReading(notes=["npu-smi info watch printed its header but no rows"])
    npu_ids = [num(cells[0]) for cells in sample]
    known_ids = [n for n in npu_ids if n is not None]
    by_npu = len(known_ids) == len(npu_ids) and len(set(known_ids)) == len(known_ids)
    cards: list[CardReading] = []
    for position, cells in enumerate(sample):
        figures: dict[str, float | None] = {}
        extras: dict[str, float | str | None] = {}
        for name, cell in zip(names, cells, strict=True):
            field = _FIELDS.get(name, re.sub(r"[^a-z0-9]+", "_", name).strip("_"))
            if field in _CARD_FIELDS:
                figures[field] = num(cell)
            else:
                extras[field] = num(cell)
        cards.append(
            CardReading(
                vendor="ascend",
                index=int(known_ids[position]) if by_npu else position,
                power_w=figures.get("power_w"),
                temp_c=figures.get("temp_c"),
                util_pct=figures.get("util_pct"),
                mem_pct=figures.get("mem_pct"),
                extras=extras,
                tool=TOOL,
            )
        )
    return ToolReading(cards=cards)


def _rows() -> RowGroups:
    return RowGroups(is_header=is_header, key=_row_key)


#: ``npu-smi info watch`` as a stream: not preferred (no HBM MiB in this view).
WATCH_STREAM = Stream(
    name="info watch",
    args=("info", "watch"),
    parse=parse_watch,
    framer=_rows,
    pty=True,
    preferred=False,
)
