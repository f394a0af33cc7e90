"""AWS Neuron through ``neuron-ls``: the inventory, used when ``neuron-monitor`` cannot be.

``neuron-ls`` prints one box-table row per Neuron *device* (``NEURON DEVICE | NEURON CORES |
[NEURON CORE IDS |] NEURON MEMORY | ...``; Inferentia1's old layout: ``PCI BDF | LOGICAL ID |
NEURON CORES | MEMORY CHANNEL 0 | MEMORY CHANNEL 1 | ...``), a header of two lines whose cells
join per column, and, with ``--show-all-procs`` (or ``--wide``), the processes on each device
(``PID | COMMAND | RUNTIME VERSION``; a second process is a continuation row with empty device
cells). It has no utilisation, no power, no temperature.

As with `neuron_monitor`, a card is a NeuronCore (what a rank uses), indexed by its global id:
the ``NEURON CORE IDS`` range when printed, else ``device * cores + i``. Memory total per core is
the device's memory (``96 GB`` is GiB, as the tools print it) divided by its cores; the process
list is every process on a device, on each of its cores (neuron-ls cannot say which core a
process drives), ``neuron-ls`` itself left out. Utilisation is unknown, so verdicts stay
``unknown``: a note says to run neuron-monitor. Parsed from seven real captures.
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.collectors.neuron_monitor import SEARCH_DIRS
from gpusat_tui.collectors.tables import box_cells
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "neuron-ls"
_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")
_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGT]i?B)$", re.IGNORECASE)
_MIB = {"k": 1 / 1024, "m": 1.0, "g": 1024.0, "t": 1024.0 * 1024.0}
NOTE = "neuron-ls shows no utilisation; with neuron-monitor installed it is read instead"


def _size_mib(cell: str) -> float | None:
    match = _SIZE_RE.match(cell.strip())
    if match is None:
        return None
    return float(match.group(1)) * _MIB[match.group(2)[0].lower()]


def _table(text: str) -> tuple[list[str], list[list[str]]]:
    """Column names (header lines joined per column) and the data rows of the box table."""
    lines = [ln.rstrip() for ln in strip_ansi(text).splitlines()]
    rules = [i for i, ln in enumerate(lines) if ln.startswith("+-")]
    if len(rules) < 2:
        raise ParseError("neuron-ls: no device table (+---+ rules) in the output")
    header_rows = [box_cells(ln) for ln in lines[rules[0] + 1:rules[1]] if ln.startswith("|")]
    width = max((len(r) for r in header_rows), default=0)
    names = [
        " ".join(r[c] for r in header_rows if c < len(r) and r[c]).upper()
        for c in range(width)
    ]
    rows: list[list[str]] = []
    for line in lines[rules[1] + 1:]:
        if not line.startswith("|"):
            if rows and not line.startswith("+-"):
                break  # the table ended (a topology diagram follows)
            continue
        cells = box_cells(line)
        if len(cells) == len(names):
            rows.append(cells)
    return names, rows


def _column(names: list[str], *wanted: str) -> int | None:
    for want in wanted:
        if want in names:
            return names.index(want)
    return None


def parse_neuron_ls(text: str) -> ToolReading:
    """``neuron-ls`` (any of its views) -> one card per NeuronCore, and the processes."""
    names, rows = _table(text)
    device_col = _column(names, "NEURON DEVICE", "LOGICAL ID")
    cores_col = _column(names, "NEURON CORES")
    if device_col is None or cores_col is None:
        raise ParseError(f"neuron-ls: no NEURON DEVICE / CORES columns in {names[:6]}")
    ids_col = _column(names, "NEURON CORE IDS")
    memory_col = _column(names, "NEURON MEMORY")
    channels = [i for i, n in enumerate(names) if n.startswith("MEMORY CHANNEL")]
    bdf_col = _column(names, "PCI BDF")
    pid_col = _column(names, "PID")
    command_col = _column(names, "COMMAND")
    cards: list[CardReading] = []
    processes: list[CardProcess] = []
    device_cores: list[int] = []
    for cells in rows:
        if not cells[device_col]:
            pass  # a continuation row: one more process on the device above
        else:
            device = num(cells[device_col])
            count = num(cells[cores_col])
            if device is None or count is None:
                continue
            first = int(device) * int(count)
            if ids_col is not None and (span := _RANGE_RE.match(cells[ids_col])):
                first = int(span.group(1))
            device_cores = list(range(first, first + int(count)))
            if memory_col is not None:
                device_mib = _size_mib(cells[memory_col])
            else:
                sizes = [_size_mib(cells[c]) for c in channels]
                device_mib = sum(s for s in sizes if s is not None) if any(sizes) else None
            for core in device_cores:
                cards.append(
                    CardReading(
                        vendor="neuron",
                        index=core,
                        bus_id=cells[bdf_col] if bdf_col is not None else None,
                        mem_total_mib=device_mib / int(count) if device_mib and count else None,
                        extras={"device": float(device)},
                        tool=TOOL,
                    )
                )
        if pid_col is None:
            continue
        pid = num(cells[pid_col])
        command = cells[command_col] if command_col is not None else ""
        if pid is None or command.startswith("neuron-ls"):
            continue
        processes.extend(
            CardProcess(pid=int(pid), card_id=f"neuron:{core}", name=command or None)
            for core in device_cores
        )
    if not cards:
        raise ParseError("neuron-ls: the device table has no device rows")
    return ToolReading(cards=cards, processes=processes, notes=[NOTE])


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="neuron",
        names=("neuron-ls",),
        search_dirs=SEARCH_DIRS,
        queries=(
            Query(name="list", args=(), parse=parse_neuron_ls),
            Query(name="show-all-procs", args=("--show-all-procs",), parse=parse_neuron_ls,
                  optional=True, process_list=True),
        ),
        group="neuron",
        priority=1,
    ),
)
