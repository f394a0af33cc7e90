"""NVIDIA through the ``nvidia-smi`` executable, for machines where NVML does not load in-process.

Required query: ``--query-gpu=... --format=csv,noheader,nounits`` (machine-readable and stable
since the 3xx drivers). Its fallback is the plain ``nvidia-smi`` table, the view that exists on
every version: when the csv query is refused the live source parses the table for the rest of
the session. Processes come from ``--query-compute-apps``, which names cards by PCI bus id (or
UUID), not by index: `parse_compute_apps` returns ``card_id="bus:<BUS-ID>"`` (``"uuid:<UUID>"``
for a UUID-keyed output) and the live source maps it with `base.resolve_process_cards` against
the bus ids that both the csv query and the table give. The table lists processes itself too;
`resolve_process_cards` keeps one entry per (pid, card).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpusat_tui.collectors.base import NA_TOKENS, ParseError, Query, ToolReading, ToolSpec, num
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

QUERY_GPU_ARGS: tuple[str, ...] = (
    "--query-gpu=" + ",".join(QUERY_GPU_FIELDS), "--format=csv,noheader,nounits",
)
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
    *QUERY_GPU_FIELDS, *QUERY_APPS_FIELDS, "timestamp", "gpu_name", "used_memory", "gpu_uuid",
    "utilization.memory", "fan.speed", "pstate", "power.default_limit",
}
_UNIT_RE = re.compile(r"\s*\[[^\]]*\]\s*$")


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
        header = _header_fields(cells)
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
    for position, row in enumerate(rows):
        index = num(row.get("index"))
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
                tool=TOOL,
            )
        )
    return ToolReading(cards=cards, notes=_skipped_notes(text))


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
_GPU_LINE_RE = re.compile(r"^\s*(\d+)\s+(.*?)\s+(On|Off|WDDM|TCC|MCDM|N/A)\s*$")
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
    processes: list[CardProcess] = []
    mig_devices: dict[int, int] = {}
    i = 0
    while i < len(lines):
        cells = _cells(lines[i])
        head = _GPU_LINE_RE.match(cells[0]) if cells and len(cells) == 3 else None
        bus = _BUS_RE.search(cells[1]) if cells and len(cells) == 3 else None
        if cells is None or head is None or bus is None:
            if cells and len(cells) == 4 and (mig := _MIG_ROW_RE.match(cells[0])):
                gpu = int(mig.group(1))
                mig_devices[gpu] = mig_devices.get(gpu, 0) + 1
            elif cells and len(cells) == 1:
                proc = _parse_process_row(cells[0])
                if proc is not None:
                    processes.append(proc)
            i += 1
            continue
        second = _cells(lines[i + 1]) if i + 1 < len(lines) else None
        third = _cells(lines[i + 2]) if i + 2 < len(lines) else None
        cards.append(_table_card(head, bus.group(1), second, third))
        i += 2
    if not cards and not processes:
        if "no devices were found" in text.lower():
            return ToolReading(notes=["nvidia-smi: No devices were found"])
        raise ParseError("nvidia-smi table: no GPU rows found")
    for n, card in enumerate(cards):
        if card.index in mig_devices:
            extras = {**card.extras, "mig_devices": float(mig_devices[card.index])}
            cards[n] = card.model_copy(update={"extras": extras})
    return ToolReading(
        cards=cards,
        processes=processes,
        version=version_match.group(1) if version_match else None,
        notes=_skipped_notes(text),
    )


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


def _parse_process_row(cell: str) -> CardProcess | None:
    if m := _PROC_RE.match(cell):
        gpu, pid, name, mem = m.group(1), m.group(4), m.group(6), m.group(7)
    elif m := _OLD_PROC_RE.match(cell):
        gpu, pid, name, mem = m.group(1), m.group(2), m.group(4), m.group(5)
    else:
        return None
    return CardProcess(
        pid=int(pid), card_id=f"nvidia:{int(gpu)}", name=name.strip() or None,
        mem_used_mib=num(mem),
    )


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
                args=QUERY_GPU_ARGS,
                parse=parse_query_gpu,
                fallback=Query(name="table", args=(), parse=parse_table),
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
