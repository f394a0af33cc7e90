"""Tenstorrent cards (Wormhole, Blackhole) through ``tt-smi -s``. UNTESTED AGAINST A FULL SNAPSHOT.

Only fragments of real ``tt-smi -s`` snapshots are public (an issue's paste cut short, a test
constant trimmed to one chip); the parser is built from them and is marked ``untested=True``,
as Biren's is. Please report a full snapshot.

``tt-smi -s`` prints one JSON object: ``host_info``, ``host_sw_vers`` (tt-smi 3.0.4+) and a
``device_info`` list, one entry per chip, each with ``board_info`` (``board_type``, ``bus_id``),
``telemetry`` (strings, some with a leading space: ``"power": " 16.0"``, ``"asic_temperature":
"34.8"``, ``aiclk``, ``voltage``, ``current``, ``fan_speed``) and the raw ``smbus_telem``
registers as hex strings (``SMBUS_TX_`` prefixed on 2024 releases).

What this gives, and what it costs:

* **One card per ``device_info`` entry**, indexed by position (tt-smi's own device order).
* **Power** from ``telemetry.power``, else the ``TDP`` register (hex watts: ``0x10`` = 16 W, the
  same figure in the p300c fragment). **Temperature** from ``telemetry.asic_temperature``, else
  ``ASIC_TEMPERATURE`` (16.16 fixed point: ``0x22d522`` = 34.83 °C).
* **No utilisation and no device memory**: the snapshot has neither, so both stay None.
* **No power cap**: ``BOARD_POWER_LIMIT`` goes to ``extras["board_power_limit"]`` as the raw
  number, because no capture says its unit.
* A snapshot cut short (a pasted fragment, a tool killed mid-write) is read up to its last
  complete value, with a note; anything that is not such JSON is a ParseError.
"""

from __future__ import annotations

import json
from typing import Any

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec, num, strip_ansi
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardReading

TOOL = "tt-smi"


def _close_truncated(text: str) -> str | None:
    """``text`` cut after its last complete value and closed, or None when nothing is left.

    Walks the JSON once, tracking open brackets outside strings; the cut falls after the last
    point where a value ended (a ``,`` or a closing bracket), and the open brackets are closed
    in reverse order.
    """
    stack: list[str] = []
    in_string = escaped = False
    cut: tuple[int, list[str]] | None = None
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            cut = (i + 1, list(stack))
        elif ch == ",":
            cut = (i, list(stack))
    if cut is None:
        return None
    end, still_open = cut
    return text[:end] + "".join(reversed(still_open))


def _load(text: str) -> tuple[dict[str, Any], bool]:
    """The snapshot as a dict, and whether it had to be closed after a cut."""
    body = strip_ansi(text).strip()
    start = body.find("{")
    if start < 0:
        raise ParseError("tt-smi -s: no JSON object in the output")
    body = body[start:]
    try:
        data = json.loads(body)
        cut = False
    except json.JSONDecodeError:
        closed = _close_truncated(body)
        try:
            data = json.loads(closed) if closed else None
        except json.JSONDecodeError:
            data = None
        cut = True
    if not isinstance(data, dict):
        raise ParseError("tt-smi -s: the output is not a JSON snapshot object")
    return data, cut


def _smbus(registers: dict[str, Any], name: str) -> int | None:
    """A register by name (with or without the ``SMBUS_TX_`` prefix) as an int, or None."""
    for key in (name, f"SMBUS_TX_{name}"):
        value = registers.get(key)
        if isinstance(value, str):
            try:
                return int(value.strip(), 16)
            except ValueError:
                return None
    return None


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _section(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """``parent[key]`` when it is a JSON object, else an empty one."""
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def _figure(section: dict[str, Any], key: str) -> float | None:
    value = section.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return num(value) if isinstance(value, str) else None


def parse_snapshot(text: str) -> ToolReading:
    """Parse ``tt-smi -s`` (see the module docstring)."""
    data, cut = _load(text)
    devices = data.get("device_info")
    if not isinstance(devices, list) or not devices:
        raise ParseError("tt-smi -s: the snapshot has no 'device_info' list")
    cards: list[CardReading] = []
    for index, device in enumerate(devices):
        if not isinstance(device, dict):
            continue
        board = _section(device, "board_info")
        telemetry = _section(device, "telemetry")
        registers = _section(device, "smbus_telem")
        power = _figure(telemetry, "power")
        if power is None:
            tdp = _smbus(registers, "TDP")
            power = float(tdp & 0xFFFF) if tdp is not None else None
        temp = _figure(telemetry, "asic_temperature")
        if temp is None:
            raw = _smbus(registers, "ASIC_TEMPERATURE")
            temp = round(raw / 65536, 2) if raw else None
        extras: dict[str, float | str | None] = {"untested_parser": TOOL}
        for key, name in (("aiclk", "aiclk_mhz"), ("voltage", "voltage_v"),
                          ("current", "current_a"), ("fan_speed", "fan_pct")):
            value = _figure(telemetry, key)
            if value is not None:
                extras[name] = value
        limit = _smbus(registers, "BOARD_POWER_LIMIT")
        if limit is not None:
            extras["board_power_limit"] = float(limit)
        board_id = _text(registers.get("BOARD_ID"))
        if board_id:
            extras["board_id"] = board_id
        cards.append(
            CardReading(
                vendor="tenstorrent",
                index=index,
                name=_text(board.get("board_type")),
                bus_id=_text(board.get("bus_id")),
                power_w=power,
                temp_c=temp,
                extras=extras,
                tool=TOOL,
            )
        )
    if not cards:
        raise ParseError("tt-smi -s: 'device_info' holds no device")
    versions = _section(data, "host_sw_vers")
    notes = ["tt-smi -s output was cut short; read up to its last complete value"] if cut else []
    return ToolReading(cards=cards, version=_text(versions.get("tt_smi")), notes=notes)


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="tenstorrent",
        names=("tt-smi",),
        search_dirs=("/usr/local/bin", "/usr/bin"),
        queries=(Query(name="snapshot", args=("-s",), parse=parse_snapshot),),
        untested=True,
    ),
)
