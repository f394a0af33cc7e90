"""AMD through ``rocm-smi`` (the older ROCm tool, still on most ROCm 5/6 machines).

Default view: the "Concise Info" table. Its layout changed across ROCm versions (``GPU  Temp
(DieEdge)  AvgPwr`` in 5.x; ``Device  Node  IDs ... Temp Power Partitions`` in 6.x; a two-line
``[Model : Revision]`` / ``Name (20 chars)`` variant; cells such as ``0x66a1,   29631`` or
``N/A, N/A, 0`` span several words), so the parser does not count header words: it reads the
fixed tail of every row (``... PwrCap VRAM% GPU%``) from the right, and temperature and power
by their units. Error lines that rocm-smi interleaves into the table (``GPU[0] : get_power_avg,
Not supported``, ``Exception caught: map::at``) are not rows and are skipped.

The table has VRAM % but no MiB; the optional ``--showmeminfo vram --json`` query fills MiB.
On a Hygon DCU machine DTK's ``rocm-smi`` prints hy-smi's DCU table: it is parsed as Hygon
cards (see `hy_smi`), never as AMD ones.
"""

from __future__ import annotations

import json
import re

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.collectors.hy_smi import parse_dcu_table
from gpusat_tui.collectors.kfd_processes import bytes_mib, parse_pid_sections
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardReading

TOOL = "rocm-smi"

_DCU_HEADER_RE = re.compile(r"^\s*(HCU|DCU)\s+Temp\b", re.MULTILINE)
_HEADER_RE = re.compile(r"^\s*(GPU|Device)\s+.*GPU%")
_ROW_RE = re.compile(r"^(\d+)\s+\S")
_TEMP_RE = re.compile(r"^-?\d+(?:\.\d+)?(?:°C|°c|c|C)$")
_WATT_RE = re.compile(r"^\d+(?:\.\d+)?W$")
_MIB = 1024 * 1024


def parse_table(text: str) -> ToolReading:
    """Parse the default ``rocm-smi`` view (Concise Info), or DTK's DCU table as Hygon."""
    text = strip_ansi(text)
    if _DCU_HEADER_RE.search(text):
        return parse_dcu_table(text, TOOL)
    lines = text.splitlines()
    header_at = next((i for i, ln in enumerate(lines) if _HEADER_RE.match(ln)), None)
    if header_at is None:
        first = next((ln.strip() for ln in lines if ln.strip()), "(empty output)")
        raise ParseError(f"rocm-smi: no Concise Info table header found: {first[:200]}")
    two_line = "[Model" in lines[header_at]
    cards: list[CardReading] = []
    last_was_card = False
    for line in lines[header_at + 1:]:
        if line.startswith("=") and cards:
            break
        match = _ROW_RE.match(line)
        if match is None:
            # The second line of a two-line card: "        Vega 20 [Radeon VII]".
            if two_line and last_was_card and line[:1].isspace() and line.strip():
                cards[-1] = cards[-1].model_copy(update={"name": line.strip()})
            last_was_card = False
            continue
        card = _concise_row(line.split())
        last_was_card = card is not None
        if card is not None:
            cards.append(card)
    return ToolReading(cards=cards)


def _concise_row(tokens: list[str]) -> CardReading | None:
    # A row ends with GPU% ("100%", or "N/A" where the card cannot say): anything else is an
    # error line that happens to start with a number.
    if len(tokens) < 5 or not (tokens[-1].endswith("%") or num(tokens[-1]) is None):
        return None
    middle = tokens[1:-3]
    temp = next((t for t in middle if _TEMP_RE.match(t)), None)
    power = next((t for t in middle if _WATT_RE.match(t)), None)
    return CardReading(
        vendor="amd",
        index=int(tokens[0]),
        util_pct=num(tokens[-1]),
        mem_pct=num(tokens[-2]),
        power_cap_w=num(tokens[-3]),
        power_w=num(power),
        temp_c=num(temp),
        tool=TOOL,
    )



def parse_json(text: str) -> ToolReading:
    """``rocm-smi ... --json``: ``{"card0": {"GPU use (%)": "0", ...}, "system": {...}}``.

    Every value is a string. Used as an enrichment (VRAM MiB above all), merged by index into
    the table's cards. Keys missing in a version are None. Hygon's rocm-smi renames keys
    ("DCU use (%)") and may number cards from card1: such JSON gives no cards (the DCU table
    stays the source) rather than figures on the wrong card.
    """
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"rocm-smi --json: not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ParseError("rocm-smi --json: expected an object keyed by card")
    cards: list[CardReading] = []
    if any(re.fullmatch(r"card\d+", k) for k in data) and "card0" not in data:
        # Numbered from card1 (Hygon's DTK build): the numbers are not the table's indices,
        # so merging by index would put one card's memory on another. Better no enrichment.
        return ToolReading(notes=["rocm-smi --json numbers cards from card1; not used"])
    for key, fields in data.items():
        match = re.fullmatch(r"card(\d+)", key)
        if match is None or not isinstance(fields, dict):
            continue
        if any(k.startswith(("DCU ", "HCU ")) for k in fields):
            continue
        # rocm-smi prints every value as a string; str() keeps odd JSON from crashing us.
        fields = {str(k): None if v is None else str(v) for k, v in fields.items()}
        power = fields.get("Average Graphics Package Power (W)")
        if power is None:
            power = fields.get("Current Socket Graphics Package Power (W)")
        cards.append(
            CardReading(
                vendor="amd",
                index=int(match.group(1)),
                name=fields.get("Card series") or fields.get("Card Series") or None,
                bus_id=fields.get("PCI Bus"),
                util_pct=num(fields.get("GPU use (%)")),
                mem_used_mib=bytes_mib(fields.get("VRAM Total Used Memory (B)")),
                mem_total_mib=bytes_mib(fields.get("VRAM Total Memory (B)")),
                power_w=num(power),
                power_cap_w=num(fields.get("Max Graphics Package Power (W)")),
                temp_c=num(fields.get("Temperature (Sensor edge) (C)")),
                tool=TOOL,
            )
        )
    system = data.get("system")
    version = system.get("Driver version") if isinstance(system, dict) else None
    return ToolReading(cards=cards, version=None if version is None else str(version))




def parse_pids(text: str) -> ToolReading:
    """The optional process query of rocm-smi (AMD cards)."""
    return parse_pid_sections(text, vendor="amd")


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="amd",
        names=("rocm-smi",),
        search_dirs=("/opt/rocm/bin", "/opt/dtk/bin", "/usr/bin", "/usr/local/bin"),
        queries=(
            Query(name="table", args=(), parse=parse_table),
            Query(
                name="meminfo-json", args=("--showmeminfo", "vram", "--json"),
                parse=parse_json, optional=True,
            ),
            Query(
                name="pids", args=("--showpids", "--showpidgpus"), parse=parse_pids,
                optional=True, process_list=True,
            ),
        ),
        group="amd-family",
        priority=2,
    ),
)
