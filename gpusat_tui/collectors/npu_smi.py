"""Huawei Ascend NPUs through ``npu-smi``.

Required query: ``npu-smi info``, the two-line-per-chip box table that every npu-smi version
prints (21.x to 25.x in the samples). Line 1 of a chip: ``NPU  Name | Health | Power(W) Temp(C)
Hugepages``; line 2: ``Chip [Device|Phy-ID] | Bus-Id | AICore(%) Memory-Usage(MB) [HBM-Usage(MB)]``,
then an optional process table.

Decisions (and what they cost):

* **One card per chip**, because a training rank sees a chip (an Atlas A3 "Ascend910" NPU module
  has two chips = two cards). The card index is the chip's logical device id when the table
  prints one (the second column of line 2: ``Phy-ID`` on A3, ``Device`` on 310P); otherwise the
  NPU id when every NPU has one chip; otherwise the chip's position in the table. On a bare-metal
  A3 node the ``Phy-ID`` equals the device id a rank passes to ``torch.npu.set_device``; inside a
  container with a subset of chips it may not, and we cannot tell from this view.
* **VRAM** is HBM-Usage when the chip has HBM (training parts), else Memory-Usage (DDR; 310P
  inference cards). The DDR figures of an HBM chip go to ``extras`` (``ddr_used_mib``...).
* **Power** is printed per NPU: on a two-chip module only chip 0's row carries it and chip 1's row
  shows ``-``. We keep it where npu-smi prints it: chip 0's ``power_w`` is the *whole module's*
  power, chip 1's is None, and every chip of a multi-chip NPU gets ``extras["npu_power_w"]`` and
  ``extras["power_scope"] = "npu"`` so the UI can say so. Splitting it would invent figures.
* **Power cap** is not in ``npu-smi info``: always None here (``-t power`` output was not verified
  against a real capture, so it is not queried).
* ``extras["npu_id"]`` / ``extras["chip_id"]`` address the chip for the per-card enrichment
  ``npu-smi info -t usages -i {npu_id} -c {chip_id}`` (see `base.card_args`).
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.collectors.tables import first_group, header_index
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "npu-smi"

_VERSION_RE = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
_PAIR_RE = re.compile(r"(\S+?)\s*/\s*(\S+)")
_INT_RE = re.compile(r"^\d+$")


def _cells(line: str) -> list[str]:
    """Cells of a ``| a | b | c |`` row, stripped.

    Only one border ``|`` goes at each end (unlike `tables.box_cells`, which strips them all),
    so a zero-width cell at either end (``| a ||``) is still a cell and positions hold.
    """
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|"):
        inner = inner[:-1]
    return [c.strip() for c in inner.split("|")]


def _int(token: str | None) -> int | None:
    return int(token) if token is not None and _INT_RE.match(token) else None


class _Chip:
    """One chip while the table is being read (line 1 and line 2 together)."""

    def __init__(self, npu_id: int, name: str | None, health: str | None,
                 power: float | None, temp: float | None, position: int) -> None:
        self.npu_id = npu_id
        self.name = name
        self.health = health
        self.power = power
        self.temp = temp
        self.position = position
        self.chip_id: int | None = None
        self.device_id: int | None = None
        self.bus_id: str | None = None
        self.util: float | None = None
        self.ddr: tuple[float | None, float | None] = (None, None)
        self.hbm: tuple[float | None, float | None] | None = None


def _parse_line1(cells: list[str], position: int) -> _Chip | None:
    head = cells[0].split(None, 1)
    npu_id = _int(head[0]) if head else None
    if npu_id is None or len(cells) < 3:
        return None
    name = head[1].strip() if len(head) > 1 else None
    health = cells[1] or None
    figures = cells[2].split()
    power = num(figures[0]) if figures else None
    temp = num(figures[1]) if len(figures) > 1 else None
    return _Chip(npu_id, name, health, power, temp, position)


def _parse_line2(chip: _Chip, cells: list[str]) -> None:
    head = cells[0].split()
    chip.chip_id = _int(head[0]) if head else None
    chip.device_id = _int(head[1]) if len(head) > 1 else None
    bus = cells[1] if len(cells) > 1 else ""
    chip.bus_id = bus if bus and num(bus) is not None else None
    rest = cells[2] if len(cells) > 2 else ""
    parts = rest.split(None, 1)
    chip.util = num(parts[0]) if parts else None
    pairs = _PAIR_RE.findall(parts[1]) if len(parts) > 1 else []
    if pairs:
        chip.ddr = (num(pairs[0][0]), num(pairs[0][1]))
    if len(pairs) > 1:
        chip.hbm = (num(pairs[1][0]), num(pairs[1][1]))


def _card_indices(chips: list[_Chip], has_device_col: bool) -> list[int]:
    device_ids = [c.device_id for c in chips if c.device_id is not None]
    if has_device_col and len(device_ids) == len(chips):
        return device_ids
    per_npu: dict[int, int] = {}
    for c in chips:
        per_npu[c.npu_id] = per_npu.get(c.npu_id, 0) + 1
    if all(n == 1 for n in per_npu.values()):
        return [c.npu_id for c in chips]
    return [c.position for c in chips]


def parse_info(text: str) -> ToolReading:
    """Parse ``npu-smi info`` (the default view) into one card per chip, plus processes."""
    lines = strip_ansi(text).splitlines()
    version = first_group(_VERSION_RE, lines)
    header_at = header_index(lines, "NPU", "Name", "Health")
    if header_at is None:
        if "Usage:" in text or "usage:" in text:
            raise ParseError("npu-smi info printed usage text instead of the device table")
        raise ParseError("npu-smi info: no device table (no 'NPU  Name | Health' header) found")
    second = lines[header_at + 1] if header_at + 1 < len(lines) else ""
    second_head = _cells(second)[0].split() if second.strip().startswith("|") else []
    has_device_col = len(second_head) >= 2

    chips: list[_Chip] = []
    pending: _Chip | None = None
    proc_rows: list[list[str]] = []
    in_procs = False
    for line in lines[header_at + 2:]:
        stripped = line.strip()
        if not stripped.startswith("|"):
            if pending is not None and stripped.startswith("+"):
                continue  # a rule between line 1 and line 2 never happens; keep waiting
            continue
        cells = _cells(stripped)
        if "Process id" in stripped or "Process name" in stripped:
            in_procs = True
            if pending is not None:
                chips.append(pending)
                pending = None
            continue
        if in_procs:
            if not stripped.lower().startswith("| no running"):
                proc_rows.append(cells)
            continue
        if len(cells) < 3:
            continue
        if pending is None:
            chip = _parse_line1(cells, len(chips))
            if chip is not None:
                pending = chip
        else:
            _parse_line2(pending, cells)
            chips.append(pending)
            pending = None
    if pending is not None:  # truncated after line 1: keep what it said
        chips.append(pending)
    if not chips:
        raise ParseError("npu-smi info: the device table has no NPU rows")

    indices = _card_indices(chips, has_device_col)
    chips_per_npu: dict[int, int] = {}
    for c in chips:
        chips_per_npu[c.npu_id] = chips_per_npu.get(c.npu_id, 0) + 1
    npu_power: dict[int, float | None] = {}
    for c in chips:
        if c.power is not None:
            npu_power.setdefault(c.npu_id, c.power)

    cards: list[CardReading] = []
    by_chip: dict[tuple[int, int], int] = {}
    for chip, index in zip(chips, indices, strict=True):
        extras: dict[str, float | str | None] = {"npu_id": float(chip.npu_id)}
        if chip.chip_id is not None:
            extras["chip_id"] = float(chip.chip_id)
            by_chip[(chip.npu_id, chip.chip_id)] = index
        if chip.health:
            extras["health"] = chip.health
        used, total = chip.ddr
        if chip.hbm is not None and chip.hbm[1]:
            if total:
                extras["ddr_used_mib"] = used
                extras["ddr_total_mib"] = total
            used, total = chip.hbm
        if chips_per_npu[chip.npu_id] > 1:
            extras["power_scope"] = "npu"
            extras["npu_power_w"] = npu_power.get(chip.npu_id)
        cards.append(
            CardReading(
                vendor="ascend",
                index=index,
                name=chip.name,
                bus_id=chip.bus_id,
                util_pct=chip.util,
                mem_used_mib=used,
                mem_total_mib=total or None,
                power_w=chip.power,
                temp_c=chip.temp,
                extras=extras,
                tool=TOOL,
            )
        )

    processes: list[CardProcess] = []
    for cells in proc_rows:
        head = cells[0].split()
        if len(cells) < 4 or len(head) < 1:
            continue
        npu_id = _int(head[0])
        chip_id = _int(head[1]) if len(head) > 1 else 0
        pid = _int(cells[1])
        if npu_id is None or pid is None:
            continue
        index = by_chip.get((npu_id, chip_id if chip_id is not None else 0), npu_id)
        processes.append(
            CardProcess(
                pid=pid,
                card_id=f"ascend:{index}",
                name=cells[2] or None,
                mem_used_mib=num(cells[3]),
            )
        )
    return ToolReading(cards=cards, processes=processes, version=version)


# --- npu-smi info -t usages -i N [-c C] ---------------------------------------------------------

_KV_RE = re.compile(r"^\s*([^:]+?)\s*:\s*(.*?)\s*$")


def _extra_key(label: str) -> str:
    """``"HBM Bandwidth Usage Rate(%)"`` -> ``"hbm_bw_pct"``: stable, predictable extras names."""
    key = label.lower()
    key = key.replace("usage rate(%)", "pct").replace("bandwidth", "bw")
    key = key.replace("(mb)", " mib").replace("(page)", " pages").replace("(%)", " pct")
    return re.sub(r"[^a-z0-9]+", "_", key).strip("_")


def parse_usages(text: str) -> ToolReading:
    """Parse ``npu-smi info -t usages`` (key : value lines) into one card per chip block.

    The text does not know the card index, so every card has ``index=-1``; the live source sets
    it from the per-card call that produced the text. With ``-c`` (how we call it) there is one
    chip and no ``Chip ID`` line; with only ``-i`` there may be several chip blocks, each with a
    ``Chip ID`` line that comes before its values (newer docs) or after them (23.0.5 capture).
    Figures go to ``extras`` (``aicpu_pct``, ``hbm_bw_pct``, ``vectorcore_pct``,
    ``dvpp_vdec_pct``...); AICore % and HBM (or DDR) capacity/usage also fill the card's own fields.
    """
    pairs: list[tuple[str, str]] = []
    for raw in strip_ansi(text).splitlines():
        match = _KV_RE.match(raw)
        # Every usages figure has a unit in its label ("(%)", "(MB)"); "Error: ..." has none.
        if match and (match.group(1) == "Chip ID" or match.group(1).endswith(")")):
            pairs.append((match.group(1), match.group(2)))
    labels = [label for label, _ in pairs]
    first_chip = labels.index("Chip ID") if "Chip ID" in labels else None
    # "Chip ID" closes its block when values come before the first one, else it opens one.
    trailing = first_chip is not None and first_chip > 0
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for label, value in pairs:
        if label == "Chip ID":
            if trailing:
                current[label] = value
                blocks.append(current)
                current = {}
                continue
            if current:
                blocks.append(current)
            current = {label: value}
            continue
        current[label] = value
    if current:
        blocks.append(current)
    blocks = [b for b in blocks if any(k != "Chip ID" for k in b)]
    if not blocks:
        raise ParseError("npu-smi info -t usages: no 'Name : value' lines found")

    cards: list[CardReading] = []
    for block in blocks:
        extras: dict[str, float | str | None] = {}
        for label, value in block.items():
            if label == "Chip ID":
                extras["chip_id"] = num(value)
            else:
                extras[_extra_key(label)] = num(value)
        if "HBM Capacity(MB)" in block:
            total, pct = num(block["HBM Capacity(MB)"]), num(block.get("HBM Usage Rate(%)"))
        elif "DDR Capacity(MB)" in block:
            total, pct = num(block["DDR Capacity(MB)"]), num(block.get("DDR Usage Rate(%)"))
        else:
            total = num(block.get("Memory Capacity(MB)"))
            pct = num(block.get("Memory Usage Rate(%)"))
        cards.append(
            CardReading(
                vendor="ascend",
                index=-1,
                util_pct=num(block.get("Aicore Usage Rate(%)")),
                mem_total_mib=total or None,
                mem_pct=pct,
                extras=extras,
                tool=TOOL,
            )
        )
    return ToolReading(cards=cards)


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="ascend",
        names=("npu-smi",),
        search_dirs=("/usr/local/bin", "/usr/local/sbin", "/usr/local/Ascend/driver/tools"),
        queries=(
            Query(name="info", args=("info",), parse=parse_info),
            Query(
                name="usages",
                args=("info", "-t", "usages", "-i", "{npu_id}", "-c", "{chip_id}"),
                parse=parse_usages,
                optional=True,
                per_card=True,
            ),
        ),
    ),
)
