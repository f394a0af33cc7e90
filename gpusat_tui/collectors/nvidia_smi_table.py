"""The default ``nvidia-smi`` table: the view every driver prints, nvidia-smi's last fallback.

Parsed apart from the csv queries (`nvidia_smi`) because it is another grammar: boxed rows of
2-3 lines per GPU in 79/89/91-column layouts (4xx to 6xx drivers), MIG instances as cards of
their own, and a process table that names cards by index. Used only when every csv query was
refused, and by copies of the table pasted into bug reports (`samples/smi/nvidia/`).
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import NA_TOKENS, ToolReading, num
from gpusat_tui.collectors.dark_cards import dark_card_notes
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

__all__ = ["TOOL", "is_na", "parse_table", "skipped_notes"]

TOOL = "nvidia-smi"


def skipped_notes(text: str) -> list[str]:
    """The lines where nvidia-smi says it skipped a GPU (``Unable to determine the device...``)."""
    return [
        line.strip() for line in text.splitlines() if "unable to determine" in line.lower()
    ]


def is_na(cell: str) -> bool:
    """Whether a cell says there is no figure (``N/A``, ``[N/A]``, ``[Not Supported]``...)."""
    low = cell.strip().lower()
    return low in NA_TOKENS or low.strip("[]") in NA_TOKENS


_VERSION_RE = re.compile(r"NVIDIA-SMI\s+(\S+)")
_GPU_LINE_RE = re.compile(
    r"^\s*(\d+)\s+(.*?)\s+(On|Off|WDDM|TCC|MCDM|N/A|ERR!|\[?Unknown Error\]?|\[N/A\])\s*$"
)
_BUS_RE = re.compile(r"([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])")
_POWER_CELL_RE = re.compile(r"^\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*/\s*(\S+)\s*$")
_MEM_CELL_RE = re.compile(r"^\s*(\S+?)\s*(?:MiB)?\s*/\s*(\S+?)\s*(?:MiB)?\s*$")
_MIG_ROW_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")
# GPU GI CI PID Type Name Memory (450+ drivers); GI/CI are N/A or numbers.
_PROC_RE = re.compile(
    r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(C|G|C\+G|M|M\+C|\?)\s+(.*?)\s+(\S+?)(?:MiB)?\s*$"
)
# GPU PID Type Name Memory (older drivers, no GI/CI columns).
_OLD_PROC_RE = re.compile(r"^\s*(\d+)\s+(\d+)\s+(C|G|C\+G)\s+(.*?)\s+(\S+?)(?:MiB)?\s*$")


def _cells(line: str) -> list[str] | None:
    """``| a | b | c |`` -> ["a", "b", "c"] (raw, unstripped); None for non-table lines."""
    stripped = line.rstrip()
    if not (stripped.startswith("|") and stripped.endswith("|")):
        return None
    return stripped[1:-1].split("|")


def _unwrap(lines: list[str]) -> list[str]:
    """Rejoin box rows a copy hard-wrapped: ``| a | b |`` then ``   c |`` -> ``| a | b | c |``.

    A line that is not a box row but ends like one continues the box row above it.
    """
    out: list[str] = []
    for line in lines:
        tail = line.rstrip()
        if (out and tail.endswith("|") and not line.lstrip().startswith(("|", "+"))
                and out[-1].lstrip().startswith("|")):
            out[-1] = out[-1].rstrip() + " " + line.strip()
            continue
        out.append(line)
    return out


def parse_table(text: str) -> ToolReading:
    """Parse the default ``nvidia-smi`` table (79/89/91-column layouts, 4xx to 6xx drivers).

    Each GPU is a block of 2-3 boxed lines: (index, name, persistence | bus id, Disp.A | ECC),
    (fan, temp, perf, power/cap | used/total | util, compute mode), (MIG mode). A GPU whose
    handle failed is simply absent (its stderr line is kept as a note).
    """
    lines = _unwrap(text.splitlines())
    version_match = _VERSION_RE.search(text)
    cards: list[CardReading] = []
    said: list[list[str]] = []
    processes: list[CardProcess] = []
    #: (gpu, gi, ci, mig dev, memory cell, SM cell) of each row of the "MIG devices" box.
    mig_rows: list[tuple[int, int, int, int, str, str]] = []
    #: The GI column of each process row (None: not a MIG process, or an older layout).
    process_gis: list[int | None] = []
    i = 0
    while i < len(lines):
        cells = _cells(lines[i])
        head = _GPU_LINE_RE.match(cells[0]) if cells and len(cells) == 3 else None
        bus = _BUS_RE.search(cells[1]) if cells and len(cells) == 3 else None
        if cells is None or head is None or bus is None:
            if cells and len(cells) == 4 and (mig := _MIG_ROW_RE.match(cells[0])):
                gpu, gi, ci, dev = (int(g) for g in mig.groups())
                mig_rows.append((gpu, gi, ci, dev, cells[1], cells[2]))
            elif cells and len(cells) == 1:
                row = _parse_process_row(cells[0])
                if row is not None:
                    processes.append(row[0])
                    process_gis.append(row[1])
            i += 1
            continue
        second = _cells(lines[i + 1]) if i + 1 < len(lines) else None
        third = _cells(lines[i + 2]) if i + 2 < len(lines) else None
        cards.append(_table_card(head, bus.group(1), second, third))
        said.append(second or [])
        i += 2
    if not cards and not processes:
        if "no devices were found" in text.lower():
            return ToolReading(notes=["nvidia-smi: No devices were found"])
        raise ParseError("nvidia-smi table: no GPU rows found")
    dark = dark_card_notes(TOOL, zip(cards, said, strict=True))
    cards, processes = _with_mig_instances(cards, processes, process_gis, mig_rows)
    return ToolReading(
        cards=cards,
        processes=processes,
        version=version_match.group(1) if version_match else None,
        notes=skipped_notes(text) + dark,
    )


def _with_mig_instances(
    cards: list[CardReading],
    processes: list[CardProcess],
    process_gis: list[int | None],
    mig_rows: list[tuple[int, int, int, int, str, str]],
) -> tuple[list[CardReading], list[CardProcess]]:
    """Each row of the "MIG devices" box is a card of its own (``nvidia:0/mig1``), right after
    its GPU, with its own memory; the GPU keeps power and temperature. Processes that name a
    GPU instance (the GI column) move to that instance's card, as NVML's reader does."""
    if not mig_rows:
        return cards, processes
    by_index = {c.index: c for c in cards}
    counts: dict[int, int] = {}
    instances: dict[int, list[CardReading]] = {}
    instance_of: dict[tuple[int, int], str] = {}
    for gpu, gi, ci, dev, mem_cell, sm_cell in mig_rows:
        counts[gpu] = counts.get(gpu, 0) + 1
        parent = by_index.get(gpu)
        used = total = None
        if m := _MEM_CELL_RE.match(mem_cell):
            used, total = num(m.group(1)), num(m.group(2))
        sm_tokens = sm_cell.split()
        extras: dict[str, float | str | None] = {"mig_gi": float(gi), "mig_ci": float(ci)}
        if sm_tokens and (sm := num(sm_tokens[0])) is not None:
            extras["sm_count"] = sm
        card = CardReading(
            vendor="nvidia", index=gpu, instance=f"mig{dev}",
            name=f"{parent.name} MIG" if parent is not None and parent.name else None,
            bus_id=parent.bus_id if parent is not None else None,
            mem_used_mib=used, mem_total_mib=total, extras=extras, tool=TOOL,
        )
        instances.setdefault(gpu, []).append(card)
        instance_of.setdefault((gpu, gi), card.id)
    merged: list[CardReading] = []
    for card in cards:
        if card.index in counts:
            extras = {**card.extras, "mig_devices": float(counts[card.index])}
            card = card.model_copy(update={"extras": extras})
        merged.append(card)
        merged.extend(instances.pop(card.index, []))
    moved: list[CardProcess] = []
    for proc, proc_gi in zip(processes, process_gis, strict=True):
        key = (int(proc.card_id.partition(":")[2]), proc_gi) if proc_gi is not None else None
        if key in instance_of:
            proc = proc.model_copy(update={"card_id": instance_of[key]})
        moved.append(proc)
    return merged, moved


def _table_card(
    head: re.Match[str], bus_id: str, second: list[str] | None, third: list[str] | None
) -> CardReading:
    temp = power = cap = used = total = util = None
    if second is not None and len(second) == 3:
        if m := _POWER_CELL_RE.match(second[0]):
            temp, power, cap = num(m.group(2)), num(m.group(4)), num(m.group(5))
        if m := _MEM_CELL_RE.match(second[1]):
            used, total = num(m.group(1)), num(m.group(2))
        util_tokens = second[2].split()
        util = num(util_tokens[0]) if util_tokens else None
    extras: dict[str, float | str | None] = {}
    if third is not None and len(third) == 3 and not third[0].strip():
        mig_mode = third[2].strip()
        if mig_mode and not is_na(mig_mode):
            extras["mig"] = mig_mode
    name = head.group(2).strip()
    return CardReading(
        vendor="nvidia",
        index=int(head.group(1)),
        name=name or None,
        bus_id=bus_id,
        util_pct=util,
        mem_used_mib=used,
        mem_total_mib=total,
        power_w=power,
        power_cap_w=cap,
        temp_c=temp,
        extras=extras,
        tool=TOOL,
    )


def _parse_process_row(cell: str) -> tuple[CardProcess, int | None] | None:
    """A process row -> (process on its GPU, its GI column as a number or None)."""
    gi: int | None = None
    if m := _PROC_RE.match(cell):
        gpu, pid, name, mem = m.group(1), m.group(4), m.group(6), m.group(7)
        gi = int(m.group(2)) if m.group(2).isdigit() else None
    elif m := _OLD_PROC_RE.match(cell):
        gpu, pid, name, mem = m.group(1), m.group(2), m.group(4), m.group(5)
    else:
        return None
    proc = CardProcess(
        pid=int(pid), card_id=f"nvidia:{int(gpu)}", name=name.strip() or None,
        mem_used_mib=num(mem),
    )
    return proc, gi
