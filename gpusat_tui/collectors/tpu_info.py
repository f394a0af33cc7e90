"""Google Cloud TPUs through ``tpu-info``.

Required query: plain ``tpu-info``. It prints titled tables, drawn with Rich heavy boxes
(``┃ … ┃`` / ``│ … │``, 2024 releases) or Markdown pipes (2025): ``TPU Chips`` (device path, type,
PID of the process holding it), then, while a workload runs, a utilisation table (``TPU Chip
Utilization`` keyed by ``Core ID``, ``TPU Utilization`` by ``Device``, ``TPU Runtime
Utilization`` by ``Chip``) with ``Memory/HBM usage`` as ``used GiB / total GiB`` and the
``Duty cycle``, and ``TensorCore Utilization`` per core.

Decisions (and what they cost):

* **One card per chip, indexed by its row** (0, 1, 2 … in table order, as the process on the host
  numbers them). The tool's own id goes to ``extras["chip_id"]``: in a multi-host slice it is the
  global id (8, 9, 12, 13), which no local rank uses.
* **Utilisation is the duty cycle** (the share of time the TensorCores ran anything): it reads
  100 % on a chip busy with little (a v6e at 100 % duty cycle had 8 % TensorCore utilisation).
  TensorCore utilisation goes to ``extras["tensorcore_pct"]`` where the counts line up.
* **Memory is HBM**, GiB as printed, times 1024 into MiB.
* ``tpu-info`` shows **no power and no temperature**: both stay None.
* Without a workload there is no utilisation table: the chips are listed with no figures and a
  note says why.
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "tpu-info"

_VERSION_RE = re.compile(r"Libtpu version:\s*(\S+)")
_GIB_PAIR_RE = re.compile(r"([\d.]+)\s*GiB\s*/\s*([\d.]+)\s*GiB")
_BARS = str.maketrans({"┃": "|", "│": "|"})
_RULE_CHARS = set("|-+=:━┏┓┗┛┳┻╇┡┩└┘┴─┬┌┐├┤┼╭╮╰╯ ")

Table = tuple[list[str], list[list[str]]]


def _tables(text: str) -> dict[str, Table]:
    """Titled tables: title line -> (header cells, row cells). Panels and other text are
    skipped; a title seen twice keeps its first table."""
    tables: dict[str, Table] = {}
    title: str | None = None
    current: Table | None = None
    for raw in strip_ansi(text).splitlines():
        line = raw.translate(_BARS).strip()
        if not line:
            continue
        if line.startswith("|"):
            if set(line) <= _RULE_CHARS:
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            if current is None:
                if title is None or title in tables:
                    continue
                current = ([c.lower() for c in cells], [])
                tables[title] = current
            else:
                current[1].append(cells)
            continue
        if set(line) <= _RULE_CHARS or line[0] in "╭╰":
            continue
        title, current = line, None
    return tables


def _find(tables: dict[str, Table], column: str) -> Table | None:
    return next((t for t in tables.values() if any(column in h for h in t[0])), None)


def _col(header: list[str], row: list[str], word: str) -> str | None:
    at = next((i for i, h in enumerate(header) if word in h), None)
    return row[at] if at is not None and at < len(row) else None


def parse_default(text: str) -> ToolReading:
    """Parse plain ``tpu-info`` into one card per chip (see the module docstring)."""
    tables = _tables(text)
    chips = tables.get("TPU Chips")
    usage = _find(tables, "duty cycle")
    if chips is None and usage is None:
        raise ParseError("tpu-info: no 'TPU Chips' or utilization table found")
    chip_rows = [r for r in (chips[1] if chips else []) if r and r[0]]
    usage_rows = [r for r in (usage[1] if usage else []) if r and r[0].isdigit()]
    cores = _find(tables, "tensorcore utilization")
    core_rows = [r for r in (cores[1] if cores else []) if r and r[0].isdigit()]
    count = len(usage_rows) if usage_rows else len(chip_rows)
    cards: list[CardReading] = []
    processes: list[CardProcess] = []
    notes: list[str] = []
    for i in range(count):
        extras: dict[str, float | str | None] = {}
        name = None
        if i < len(chip_rows) and chips is not None:
            chip = chip_rows[i]
            extras["device"] = chip[0]
            name = _col(chips[0], chip, "type") or None
            pid = _col(chips[0], chip, "pid")
            if pid and pid.isdigit():
                processes.append(CardProcess(pid=int(pid), card_id=f"tpu:{i}"))
        used = total = util = None
        if usage_rows and usage is not None:
            row = usage_rows[i]
            extras["chip_id"] = num(row[0])
            pair = _GIB_PAIR_RE.search(_col(usage[0], row, "usage") or "")
            if pair:
                used = round(float(pair.group(1)) * 1024, 2)
                total = round(float(pair.group(2)) * 1024, 2)
            util = num(_col(usage[0], row, "duty cycle"))
        if cores is not None and len(core_rows) == count:
            extras["tensorcore_pct"] = num(_col(cores[0], core_rows[i], "tensorcore"))
        cards.append(
            CardReading(
                vendor="tpu", index=i, name=name, util_pct=util, mem_used_mib=used,
                mem_total_mib=total or None, extras=extras, tool=TOOL,
            )
        )
    if not cards:
        raise ParseError("tpu-info: the tables list no chip")
    if not usage_rows:
        notes.append("tpu-info shows no utilization table (no TPU workload running?)")
    version = next((m.group(1) for line in text.splitlines() if (m := _VERSION_RE.search(line))),
                   None)
    return ToolReading(cards=cards, processes=processes, version=version, notes=notes)


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="tpu",
        names=("tpu-info",),
        search_dirs=("/usr/local/bin", "/usr/bin"),
        queries=(Query(name="default", args=(), parse=parse_default),),
    ),
)
