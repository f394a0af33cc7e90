"""Intel Gaudi (Habana) accelerators through ``hl-smi``.

Required query: plain ``hl-smi``, the nvidia-smi-like box table every release prints (1.4.1 to
1.22.1 in the samples). Two rows per card (an "AIP"):

    | AIP  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
    | Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | AIP-Util  Compute M. |

1.20 renamed the ECC column "Uncor-Events" and turned the last cell into the memory % (it was
"Compute M." ``N/A``); cells are read by content, so both parse. Spacing is never trusted: 1.20
squeezes the power cell (``N/A  96W /  600W``) and 1.4.1 writes ``Mib``. The "Compute Processes"
box gives one row per AIP (``N/A`` rows when idle); a row may lack its closing ``|`` (1.16.0).

Optional enrichment: ``hl-smi -Q <fields> -f csv,nounits`` (the query interface, fields as
all-smi asks them on 1.22.1): fills the UUID and anything the table lacked. Its header names the
columns, so the parser reads any field order; an older ``hl-smi`` that refuses ``-Q`` loses only
the UUID. ``hl-smi -l`` (its loop mode) is not used here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.collectors.dark_cards import block_cards
from gpusat_tui.collectors.tables import (
    box_blocks,
    box_card,
    box_process_rows,
    first_group,
    header_index,
    sentinel_to_none,
)
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "hl-smi"

_VERSION_RE = re.compile(r"HL-SMI Version:\s*(\S+)")
_PERF_RE = re.compile(r"^P\d+$")
_FLAGS = {"n/a", "on", "off"}

#: Fields of the ``-Q`` enrichment, in the order all-smi asks them (seen on 1.22.1).
QUERY_FIELDS = (
    "index", "uuid", "name", "memory.total", "memory.used", "power.draw", "power.max",
    "temperature.aip", "utilization.aip",
)


def _figure(token: str | None) -> float | None:
    return sentinel_to_none(num(token))


def _card(block: list[list[str]]) -> CardReading | None:
    cells = box_card(block, _FLAGS, rows=1)
    if cells is None:
        return None
    extras: dict[str, float | str | None] = {}
    if len(cells.first) > 2 and cells.first[2]:
        extras["uncorrectable"] = cells.first[2]
    perf = next((t for t in cells.left.split() if _PERF_RE.match(t)), None)
    if perf:
        extras["perf"] = perf
    if len(cells.right) > 1 and not cells.right[1].endswith("%"):
        extras["compute_mode"] = cells.right[1]
    power = cells.power
    figures = cells.figures()
    # 65535 W is hl-smi's "no reading", not a figure
    figures["power_w"] = _figure(power[0]) if power else None
    figures["power_cap_w"] = _figure(power[1]) if power else None
    return CardReading(
        vendor="gaudi", index=cells.index, name=cells.name, bus_id=cells.bus_id,
        **figures, extras=extras, tool=TOOL,
    )


def _processes(lines: Sequence[str]) -> list[CardProcess]:
    out: list[CardProcess] = []
    for tokens in box_process_rows(lines, "Compute Processes", min_tokens=4):
        mem = tokens[-1] if tokens[-1].lower().endswith(("mib", "mb")) else None
        name_tokens = tokens[3:-1] if mem else tokens[3:]
        out.append(
            CardProcess(
                pid=int(tokens[1]),
                card_id=f"gaudi:{tokens[0]}",
                name=" ".join(name_tokens) or None,
                mem_used_mib=num(mem),
            )
        )
    return out


def parse_default(text: str) -> ToolReading:
    """Parse plain ``hl-smi`` into one card per AIP, plus its process rows."""
    lines = strip_ansi(text).splitlines()
    header_at = header_index(lines, "AIP", "Name", "|")
    if header_at is None:
        raise ParseError("hl-smi: no device table ('AIP  Name' header) found")
    cards, dark = block_cards(TOOL, box_blocks(lines, header_at + 1), _card)
    if not cards:
        raise ParseError("hl-smi: the device table has no AIP rows")
    return ToolReading(
        cards=cards, processes=_processes(lines), version=first_group(_VERSION_RE, lines),
        notes=dark,
    )


def _field(header: str) -> str:
    """``"memory.total [MiB]"`` -> ``"memory.total"``."""
    return header.split("[", 1)[0].strip().lower()


def parse_query(text: str, fields: Sequence[str] = QUERY_FIELDS) -> ToolReading:
    """Parse ``hl-smi -Q ... -f csv[,noheader][,nounits]``.

    With a header its names decide the columns (any order); without one (``noheader``) the
    columns are ``fields``. Units inside values (``131072 MiB``, ``226 W``) are dropped. Without
    an ``index`` column a row's position is its index (the tool lists AIPs in index order).
    """
    rows = [
        [c.strip() for c in line.split(",")]
        for line in strip_ansi(text).splitlines()
        if line.strip() and "," in line
    ]
    if not rows:
        raise ParseError("hl-smi -Q: no CSV rows")
    names = [_field(c) for c in rows[0]]
    if any(n in QUERY_FIELDS or n in ("bus_id", "module_id", "driver_version") for n in names):
        rows = rows[1:]
    else:
        names = list(fields)
    cards: list[CardReading] = []
    for position, row in enumerate(rows):
        if len(row) != len(names):
            continue  # a cut line
        value = dict(zip(names, row, strict=True))
        index_token = value.get("index", str(position))
        if not index_token.isdigit():
            continue
        extras: dict[str, float | str | None] = {}
        if "module_id" in value:
            extras["module_id"] = num(value["module_id"])
        cards.append(
            CardReading(
                vendor="gaudi",
                index=int(index_token),
                name=value.get("name") or None,
                uuid=value.get("uuid") or None,
                bus_id=value.get("bus_id") or None,
                util_pct=num(value.get("utilization.aip")),
                mem_used_mib=num(value.get("memory.used")),
                mem_total_mib=num(value.get("memory.total")) or None,
                power_w=_figure(value.get("power.draw")),
                power_cap_w=_figure(value.get("power.max")),
                temp_c=num(value.get("temperature.aip")),
                extras=extras,
                tool=TOOL,
            )
        )
    if not cards:
        raise ParseError("hl-smi -Q: no AIP rows in the CSV")
    return ToolReading(cards=cards)


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="gaudi",
        names=("hl-smi",),
        search_dirs=("/usr/bin", "/usr/local/bin"),
        queries=(
            Query(name="default", args=(), parse=parse_default),
            Query(
                name="query",
                args=("-Q", ",".join(QUERY_FIELDS), "-f", "csv,nounits"),
                parse=parse_query,
                optional=True,
            ),
        ),
    ),
)
