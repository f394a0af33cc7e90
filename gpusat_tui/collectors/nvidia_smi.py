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

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num
from gpusat_tui.collectors.dark_cards import dark_card_notes
from gpusat_tui.collectors.nvidia_smi_table import TOOL, is_na, parse_table, skipped_notes
from gpusat_tui.collectors.nvidia_throttle import parse_mask, reason_names
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

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


def _text(cell: str | None) -> str | None:
    if cell is None or is_na(cell):
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
    notes = skipped_notes(text) + dark_card_notes(TOOL, zip(cards, said, strict=True))
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
