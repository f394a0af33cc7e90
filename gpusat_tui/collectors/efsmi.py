"""Enflame GCUs (S60, S60G, L300) through ``efsmi``.

Required query: plain ``efsmi``, a box table (EFSMI V1.2.0.301 to 1.7.2.14 in the samples) with
two rows per device:

    | DEV    NAME                 | FW VER            | BUS-ID      ECC           |
    | TEMP   Lpm   Pwr(Usage/Cap) | Mem      GCU Virt | DUsed       SN            |

``DUsed`` is the utilisation. What changes between versions, and is read by content: the power
cell (``105W  300W`` with no slash on 1.2, ``118W / 300W`` later, ``N/A`` on SR-IOV virtual
functions), the temperature (``39 C``, ``71℃`` with U+2103), the power-state word (Dpm
Sleep/Active, Lpm LP0/LP1), the rules (``|---|`` twice on older releases).

The default view prints the memory *size* only, not what is used. The enrichment
``efsmi -q -d TEMP,MEMORY,USAGE`` (key/value ``DEV ID n`` blocks) gives the used memory: older
drivers call it ``Mem Usage``, newer ``Used Size`` (next to ``Reserved Size``). A tool that
refuses it loses only VRAM used.

`parse_monitor` reads the dmon-like columnar view (``*Dev Pwr DTemp Sip DUsed ...``); it is not
run, because the capture does not show the command line that printed it.
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.collectors.dark_cards import block_cards
from gpusat_tui.collectors.tables import box_blocks, first_group, header_index
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardReading

TOOL = "efsmi"

_VERSION_RE = re.compile(r"EFSMI:?\s+V?(\d[\w.]*)")
_TEMP_RE = re.compile(r"^(-?\d+(?:\.\d+)?)\s*(?:C|℃|°C)(?=\s|$)")
_POWER_RE = re.compile(r"(\d+(?:\.\d+)?)\s*W\s*/?\s*(\d+(?:\.\d+)?)\s*W")
_POWER_ONE_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*W\b")
_MIB_RE = re.compile(r"(\d+(?:\.\d+)?)\s*MiB")
# "00:01:00.0" (efsmi prints a 2-digit domain) or a full "0000:01:00.0".
_BUS_RE = re.compile(r"^(?:[0-9A-Fa-f]{2,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")
_STATES = re.compile(r"^(?:Sleep|Active|Idle|LP\d+|DP\d+)$")


def _card(block: list[list[str]]) -> CardReading | None:
    first = block[0]
    head = first[0].split()
    if len(block) < 2 or len(first) < 3 or not head or not head[0].isdigit():
        return None
    second = block[1]
    left = second[0]
    temp = _TEMP_RE.match(left)
    power = _POWER_RE.search(left)
    watts = None if power else _POWER_ONE_RE.search(left)
    mem = _MIB_RE.search(second[1]) if len(second) > 1 else None
    right = second[2].split() if len(second) > 2 else []
    extras: dict[str, float | str | None] = {}
    state = next((t for t in left.split() if _STATES.match(t)), None)
    if state:
        extras["power_state"] = state
    if first[1]:
        extras["firmware"] = first[1]
    bus_tokens = first[2].split()
    if len(bus_tokens) > 1:
        extras["ecc"] = bus_tokens[1]
    virt = second[1].split()[1:] if len(second) > 1 else []
    if virt:
        extras["gcu_virt"] = " ".join(virt)
    if len(right) > 1:
        extras["sn"] = right[1]
    return CardReading(
        vendor="enflame",
        index=int(head[0]),
        name=" ".join(head[1:]) or None,
        bus_id=bus_tokens[0] if bus_tokens and _BUS_RE.match(bus_tokens[0]) else None,
        util_pct=num(right[0]) if right and right[0].endswith("%") else None,
        mem_total_mib=(num(mem.group(1)) or None) if mem else None,
        power_w=num(power.group(1)) if power else (num(watts.group(1)) if watts else None),
        power_cap_w=num(power.group(2)) if power else None,
        temp_c=num(temp.group(1)) if temp else None,
        extras=extras,
        tool=TOOL,
    )


def parse_default(text: str) -> ToolReading:
    """Parse plain ``efsmi`` into one card per device."""
    lines = strip_ansi(text).splitlines()
    header_at = header_index(lines, "DEV", "NAME", "|")
    if header_at is None:
        raise ParseError("efsmi: no device table ('DEV    NAME' header) found")
    cards, dark = block_cards(TOOL, box_blocks(lines, header_at + 1), _card)
    if not cards:
        raise ParseError("efsmi: the device table has no device rows")
    return ToolReading(cards=cards, version=first_group(_VERSION_RE, lines), notes=dark)


_DEV_RE = re.compile(r"^\s*DEV ID\s+(\d+)\s*$")
_KV_RE = re.compile(r"^\s*([A-Za-z][\w ()/]*?)\s*:\s*(.*?)\s*$")


def parse_query(text: str) -> ToolReading:
    """Parse ``efsmi -q [-d ...]``: ``DEV ID n`` blocks of ``key : value`` lines."""
    blocks: list[tuple[int, dict[str, str]]] = []
    for line in strip_ansi(text).splitlines():
        dev = _DEV_RE.match(line)
        if dev:
            blocks.append((int(dev.group(1)), {}))
            continue
        pair = _KV_RE.match(line)
        if pair and blocks:
            blocks[-1][1].setdefault(pair.group(1), pair.group(2))
    cards: list[CardReading] = []
    for index, kv in blocks:
        total = num(kv.get("Total Size", kv.get("Mem Size")))
        used = num(kv.get("Used Size", kv.get("Mem Usage")))
        temp = kv.get("GCU Temp")
        util = kv.get("GCU Usage")
        if total is None and used is None and temp is None and util is None:
            continue  # an elided block ("... same structure")
        extras: dict[str, float | str | None] = {}
        if "Reserved Size" in kv:
            extras["reserved_mib"] = num(kv["Reserved Size"])
        cards.append(
            CardReading(
                vendor="enflame",
                index=index,
                name=kv.get("Dev Name") or None,
                uuid=kv.get("Dev UUID") or None,
                util_pct=num(util),
                mem_used_mib=used,
                mem_total_mib=total or None,
                power_w=num(kv.get("Cur Power")),
                power_cap_w=num(kv.get("Power Capa")),
                temp_c=num(temp),
                extras=extras,
                tool=TOOL,
            )
        )
    if not cards:
        raise ParseError("efsmi -q: no 'DEV ID n' block with figures found")
    return ToolReading(cards=cards)


def parse_monitor(text: str) -> ToolReading:
    """Parse the dmon-like columnar view: ``*Dev Pwr DTemp Sip DUsed Dpm MUsed Mem ...``.

    ``DUsed`` is the utilisation (as in the table), ``Sip`` goes to extras, ``MUsed`` (%) is the
    memory percentage and ``Mem`` the size in MiB: the view prints no used MiB, and none is
    made up from the percentage.
    """
    names: list[str] | None = None
    cards: list[CardReading] = []
    for line in strip_ansi(text).splitlines():
        tokens = line.split()
        if not tokens:
            continue
        if tokens[0] == "*Dev":
            names = [t.lower() for t in tokens[1:]]
            continue
        if names is None or not tokens[0].isdigit() or len(tokens) != len(names) + 1:
            continue
        value = dict(zip(names, tokens[1:], strict=True))
        cards.append(
            CardReading(
                vendor="enflame",
                index=int(tokens[0]),
                util_pct=num(value.get("dused")),
                mem_total_mib=num(value.get("mem")) or None,
                mem_pct=num(value.get("mused")),
                power_w=num(value.get("pwr")),
                temp_c=num(value.get("dtemp")),
                extras={"sip_pct": num(value.get("sip")), "power_state": value.get("dpm")},
                tool=TOOL,
            )
        )
    if not cards:
        raise ParseError("efsmi monitor view: no '*Dev' header with device rows found")
    return ToolReading(cards=cards)


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="enflame",
        names=("efsmi",),
        search_dirs=("/usr/bin", "/usr/local/bin"),
        queries=(
            Query(name="default", args=(), parse=parse_default),
            Query(
                name="query",
                args=("-q", "-d", "TEMP,MEMORY,USAGE"),
                parse=parse_query,
                optional=True,
            ),
        ),
    ),
)
