"""NVIDIA through the ``nvidia-smi`` executable, for machines where NVML does not load in-process.

Required query: ``--query-gpu=... --format=csv,noheader,nounits`` (machine-readable and stable
since the 3xx drivers), with the clock-event reason mask (``extras["throttle"]``). Its fallback
chain: the same with the reasons' pre-535 name, then without reasons, then the plain
``nvidia-smi`` table, the view that exists on every version; the first that answers is used for
the rest of the session. The table also lists MIG instances, each a card (``nvidia:0/mig1``);
the csv query has no per-instance rows, so on the csv path a MIG GPU is one card (not done:
reading the table every few polls for them). Processes come from ``--query-compute-apps``,
which names cards by PCI bus id (or UUID), not by index: `parse_compute_apps` returns
``card_id="bus:<BUS-ID>"`` (``"uuid:<UUID>"`` for a UUID-keyed output) and the live source
maps it with `base.resolve_process_cards` against the bus ids that both the csv query and the
table give. The table lists processes itself too;
`resolve_process_cards` keeps one entry per (pid, card).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpusat_tui.collectors.base import NA_TOKENS, Query, ToolReading, ToolSpec, num
from gpusat_tui.collectors.dark_cards import dark_card_notes
from gpusat_tui.collectors.nvidia_throttle import parse_mask, reason_names
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "nvidia-smi"

#: Fields of the required query, in order. Changing them changes the fakes too.
QUERY_GPU_FIELDS: tuple[str, ...] = (
    "index", "name", "uuid", "pci.bus_id", "utilization.gpu", "memory.used", "memory.total",
    "power.draw", "power.limit", "temperature.gpu",
)
#: Processes name their card by PCI bus id, not UUID: the default table (the fallback of the
#: required query) shows bus ids but no UUIDs, so bus ids map processes in both modes.
QUERY_APPS_FIELDS: tuple[str, ...] = (
    "gpu_bus_id", "pid", "process_name", "used_gpu_memory",
)

#: The clock-event ("throttle") reason mask, by its name since the 535 drivers and by its old
#: name before. A driver that knows neither refuses the whole query: the live source then
#: walks the fallback chain (event name -> old name -> neither -> the table), so the field is
#: dropped for the session and the cards are kept.
EVENT_REASONS_FIELD = "clocks_event_reasons.active"
THROTTLE_REASONS_FIELD = "clocks_throttle_reasons.active"
QUERY_GPU_EVENT_FIELDS: tuple[str, ...] = (*QUERY_GPU_FIELDS, EVENT_REASONS_FIELD)
QUERY_GPU_THROTTLE_FIELDS: tuple[str, ...] = (*QUERY_GPU_FIELDS, THROTTLE_REASONS_FIELD)


#: The query's fields that are figures (what a card that went dark prints no value for).
_FIGURE_FIELDS = QUERY_GPU_FIELDS[4:]


def _query_gpu_args(fields: Sequence[str]) -> tuple[str, ...]:
    return ("--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits")


#: The query without reasons (the last csv link of the chain).
QUERY_GPU_ARGS: tuple[str, ...] = _query_gpu_args(QUERY_GPU_FIELDS)
QUERY_GPU_EVENT_ARGS: tuple[str, ...] = _query_gpu_args(QUERY_GPU_EVENT_FIELDS)
QUERY_GPU_THROTTLE_ARGS: tuple[str, ...] = _query_gpu_args(QUERY_GPU_THROTTLE_FIELDS)
QUERY_APPS_ARGS: tuple[str, ...] = (
    "--query-compute-apps=" + ",".join(QUERY_APPS_FIELDS), "--format=csv,noheader,nounits",
)

#: Header names nvidia-smi prints that differ from what was asked (it says "name" for
#: "gpu_name", "used_gpu_memory" for "used_memory").
_ALIASES = {
    "gpu_name": "name",
    "used_memory": "used_gpu_memory",
    "gpu_bus_id": "pci.bus_id",
    "utilization.gpu": "utilization.gpu",
}
_KNOWN_HEADER = {
    *QUERY_GPU_FIELDS, *QUERY_APPS_FIELDS, EVENT_REASONS_FIELD, THROTTLE_REASONS_FIELD,
    "timestamp", "gpu_name", "used_memory", "gpu_uuid",
    "utilization.memory", "fan.speed", "pstate", "power.default_limit",
}
_UNIT_RE = re.compile(r"\s*\[[^\]]*\]\s*$")
#: A cell with a digit before any "[" (a unit) can be no known header name (none has a digit):
#: one search per line rules out a header for every data row, instead of a unit strip and a
#: lookup per cell (`_header_fields`). Counted per cell: a match starts at the line's start or
#: at a comma and stops at the cell's first digit.
_DATA_CELL_RE = re.compile(r"(?:^|,)[^,\[\d]*\d")


def _is_na(cell: str) -> bool:
    low = cell.strip().lower()
    return low in NA_TOKENS or low.strip("[]") in NA_TOKENS


def _text(cell: str | None) -> str | None:
    if cell is None or _is_na(cell):
        return None
    return cell.strip()


def _header_fields(cells: list[str]) -> tuple[str, ...] | None:
    """A csv header line -> field names without units (``memory.used [MiB]`` -> memory.used)."""
    names = [_UNIT_RE.sub("", c).strip().lower() for c in cells]
    if sum(n in _KNOWN_HEADER for n in names) * 2 >= len(names):
        return tuple(_ALIASES.get(n, n) for n in names)
    return None


def _csv_rows(text: str, fields: Sequence[str]) -> list[dict[str, str]]:
    """Rows of an nvidia-smi csv output as dicts, header or not, units or not.

    A line with the wrong number of cells (an stderr line such as "Unable to determine the
    device handle for GPU1: ...", a usage text) is not a row: that card is simply absent.
    """
    fields = tuple(_ALIASES.get(f, f) for f in fields)
    rows: list[dict[str, str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        # At least half the cells must be known names for a header (`_header_fields`).
        maybe_names = len(cells) - len(_DATA_CELL_RE.findall(line))
        header = _header_fields(cells) if maybe_names * 2 >= len(cells) else None
        if header is not None:
            fields = header
            continue
        if len(cells) > len(fields):
            cells = _rejoin_name(cells, fields)
        if len(cells) != len(fields):
            continue
        rows.append(dict(zip(fields, cells, strict=True)))
    return rows


def _rejoin_name(cells: list[str], fields: tuple[str, ...]) -> list[str]:
    """A process name with commas in it splits into extra cells: glue them back. (GPU names
    have no commas; a GPU row with too many cells stays refused.)"""
    if "process_name" not in fields:
        return cells
    at = fields.index("process_name")
    extra = len(cells) - len(fields)
    return [*cells[:at], ", ".join(cells[at:at + extra + 1]), *cells[at + extra + 1:]]


def _skipped_notes(text: str) -> list[str]:
    return [
        line.strip() for line in text.splitlines() if "unable to determine" in line.lower()
    ]


def parse_query_gpu(text: str, fields: Sequence[str] = QUERY_GPU_FIELDS) -> ToolReading:
    """Parse ``--query-gpu`` csv output. ``fields`` is what was asked, used when no header.

    Without an ``index`` field, cards are numbered in output order (nvidia-smi's own order).
    """
    rows = _csv_rows(text, fields)
    if not rows:
        if "no devices were found" in text.lower():
            return ToolReading(notes=["nvidia-smi: No devices were found"])
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "(empty output)")
        raise ParseError(f"nvidia-smi --query-gpu: no card rows in output: {first[:200]}")
    cards: list[CardReading] = []
    said: list[list[str]] = []
    for position, row in enumerate(rows):
        index = num(row.get("index"))
        extras: dict[str, float | str | None] = {}
        for reasons_field in (EVENT_REASONS_FIELD, THROTTLE_REASONS_FIELD):
            mask = parse_mask(row.get(reasons_field))
            if mask is not None:
                extras["throttle"] = reason_names(mask)
        cards.append(
            CardReading(
                vendor="nvidia",
                index=int(index) if index is not None else position,
                name=_text(row.get("name")),
                uuid=_text(row.get("uuid")),
                bus_id=_text(row.get("pci.bus_id")),
                util_pct=num(row.get("utilization.gpu")),
                mem_used_mib=num(row.get("memory.used")),
                mem_total_mib=num(row.get("memory.total")),
                power_w=num(row.get("power.draw")),
                power_cap_w=num(row.get("power.limit")),
                temp_c=num(row.get("temperature.gpu")),
                extras=extras,
                tool=TOOL,
            )
        )
        said.append([row.get(f) or "" for f in _FIGURE_FIELDS])
    notes = _skipped_notes(text) + dark_card_notes(TOOL, zip(cards, said, strict=True))
    return ToolReading(cards=cards, notes=notes)


def parse_query_gpu_event(text: str) -> ToolReading:
    """``--query-gpu`` with the clock-event reason mask (535+ drivers)."""
    return parse_query_gpu(text, QUERY_GPU_EVENT_FIELDS)


def parse_query_gpu_throttle(text: str) -> ToolReading:
    """``--query-gpu`` with the reason mask by its pre-535 name."""
    return parse_query_gpu(text, QUERY_GPU_THROTTLE_FIELDS)


def parse_compute_apps(text: str, fields: Sequence[str] = QUERY_APPS_FIELDS) -> ToolReading:
    """Parse ``--query-compute-apps`` csv: processes with ``card_id="bus:<BUS-ID>"``.

    Outputs keyed by ``gpu_uuid`` give ``"uuid:<UUID>"``; rows naming no card at all (other
    field lists) keep ``card_id="uuid:?"``. The live source maps ids to ``nvidia:<index>`` with
    `resolve_process_cards`. "No running processes found" (or nothing) is an empty list.
    """
    processes: list[CardProcess] = []
    for row in _csv_rows(text, fields):
        pid = num(row.get("pid"))
        if pid is None:
            continue
        bus, uuid = _text(row.get("pci.bus_id")), _text(row.get("gpu_uuid"))
        processes.append(
            CardProcess(
                pid=int(pid),
                card_id=f"bus:{bus}" if bus else "uuid:" + (uuid or "?"),
                name=_text(row.get("process_name")),
                mem_used_mib=num(row.get("used_gpu_memory")),
            )
        )
    return ToolReading(processes=processes)


# --- the default table -------------------------------------------------------------------

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
        notes=_skipped_notes(text) + dark,
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
        if mig_mode and not _is_na(mig_mode):
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


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="nvidia",
        names=("nvidia-smi",),
        search_dirs=(
            "/usr/bin", "/usr/local/nvidia/bin", "/usr/lib/wsl/lib", "/usr/local/bin",
            "/opt/nvidia/bin", "/usr/local/cuda/bin",
        ),
        queries=(
            Query(
                name="query-gpu",
                args=QUERY_GPU_EVENT_ARGS,
                parse=parse_query_gpu_event,
                fallback=Query(
                    name="query-gpu-throttle-reasons",
                    args=QUERY_GPU_THROTTLE_ARGS,
                    parse=parse_query_gpu_throttle,
                    only_after=EVENT_REASONS_FIELD,
                    fallback=Query(
                        name="query-gpu-no-reasons",
                        args=QUERY_GPU_ARGS,
                        parse=parse_query_gpu,
                        only_after="reasons.active",
                        fallback=Query(name="table", args=(), parse=parse_table),
                    ),
                ),
            ),
            Query(
                name="compute-apps", args=QUERY_APPS_ARGS, parse=parse_compute_apps,
                optional=True, process_list=True,
            ),
        ),
        group="nvidia",
        priority=1,
    ),
)
