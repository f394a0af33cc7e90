"""NVIDIA Jetson through ``tegrastats``: a line stream, one line per period, one integrated GPU.

``tegrastats --interval N`` prints a line every N ms until killed; there is no one-shot view, so
it is read only as a `Stream`. A line (JetPack 4 to 7 in the samples) holds, among others:

* ``RAM used/totalMB`` — the RAM the CPU and the GPU *share*: it is the card's memory here, so
  "memory full" on a Jetson means the whole board's RAM, not a VRAM of its own;
* ``GR3D_FREQ 12%@[1300,1300]`` (JetPack 7: util and one clock per GPC), ``GR3D_FREQ 0%@76``
  (util@MHz), ``GR3D_FREQ 0%`` (JetPack 6 idle: no clock), ``GR3D_FREQ @[0,0,0]`` (Thor:
  clock-gated, no util) or ``GR3D 0%@76`` (old L4T) — GR3D % is the utilisation. With no % and
  every clock at 0 the GPU is clock-gated: util 0 (a GPU with no clock does no work); with no %
  and a clock running, util is unknown;
* the GPU power rail, ``cur/avg`` or ``cur/avg/max`` in mW (``VDD_GPU_SOC`` on Orin, which
  also feeds the SoC: ``extras["power_scope"] = "gpu+soc"``; ``VDD_GPU`` on Thor; ``POM_5V_GPU``
  on Nano and ``VDD_SYS_GPU`` on TX2, printed without a unit; Xavier's ``GPU`` and NX's
  ``VDD_CPU_GPU_CV`` are taken from their documentation, not from a capture); the current
  value is the power, a negative one (a sensor offset at idle) none.
  The board's input rail goes to ``extras["board_power_w"]``. No power cap is printed;
* ``GPU@59C`` / ``gpu@47.625C/47.625C`` — the GPU temperature when the board has that zone
  (Orin on JetPack 6 has none: ``temp_c`` None, ``extras["tj_c"]`` holds the junction).

One card, index 0. Parsed from nine real captures; the stream (tegrastats' own buffering into a
pipe, ``--interval``) is untested on a real Jetson.
"""

from __future__ import annotations

import re

from gpusat_tui.collectors.base import Stream, ToolReading, ToolSpec, strip_ansi
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardReading

TOOL = "tegrastats"

#: Where one record starts: an optional timestamp, then the RAM figure every layout prints.
_RECORD_RE = re.compile(r"(?:\d\d-\d\d-\d{4} \d\d:\d\d:\d\d\s+)?\bRAM \d+/\d+")
_RAM_RE = re.compile(r"\bRAM (\d+)/(\d+)([kMG]B)")
_GR3D_RE = re.compile(r"\bGR3D(?:_FREQ)?\s+(?:(\d+(?:\.\d+)?)%)?(?:@\[?([\d,]+)\]?)?")
_EMC_RE = re.compile(r"\bEMC(?:_FREQ)?\s+(\d+(?:\.\d+)?)%")
_TEMP_RE = re.compile(r"\b([A-Za-z][\w]*)@(-?\d+(?:\.\d+)?)C\b")
#: ``NAME cur/avg[/max]`` with or without ``mW``.
_RAIL_RE = re.compile(r"\b([A-Z][A-Z0-9_]+) (-?\d+)(?:mW)?/(-?\d+)(?:mW)?(?:/(-?\d+)(?:mW)?)?")
#: GPU rails, best first, and what each one measures.
_GPU_RAILS = (
    ("VDD_GPU", "gpu"), ("POM_5V_GPU", "gpu"), ("VDD_SYS_GPU", "gpu"), ("GPU", "gpu"),
    ("VDD_GPU_SOC", "gpu+soc"), ("VDD_CPU_GPU_CV", "cpu+gpu+cv"),
)
_BOARD_RAILS = ("VIN_SYS_5V0", "POM_5V_IN", "VDD_IN")
_MIB = {"kB": 1 / 1024, "MB": 1.0, "GB": 1024.0}


def last_record(text: str) -> str:
    """The newest record of ``text``: tegrastats' lines, or one line its user wrapped."""
    text = strip_ansi(text)
    starts = [m.start() for m in _RECORD_RE.finditer(text)]
    if not starts:
        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "(empty)")
        raise ParseError(f"tegrastats: no 'RAM used/total' figure: {first[:80]!r}")
    return " ".join(text[starts[-1]:].split())


def parse_tegrastats(text: str) -> ToolReading:
    """One tegrastats record (the last one, when ``text`` holds several) -> the board's GPU."""
    record = last_record(text)
    ram = _RAM_RE.search(record)
    if ram is None:
        raise ParseError(f"tegrastats: unreadable RAM figure in {record[:80]!r}")
    scale = _MIB[ram.group(3)]
    used, total = float(ram.group(1)) * scale, float(ram.group(2)) * scale
    extras: dict[str, float | str | None] = {}
    util: float | None = None
    gr3d = _GR3D_RE.search(record)
    if gr3d is None:
        raise ParseError(f"tegrastats: no GR3D figure in {record[:80]!r}")
    clocks = [float(c) for c in (gr3d.group(2) or "").split(",") if c]
    if gr3d.group(1) is not None:
        util = float(gr3d.group(1))
    elif clocks and all(c == 0 for c in clocks):
        util = 0.0  # clock-gated
    if clocks:
        extras["gpu_clock_mhz"] = max(clocks)
    emc = _EMC_RE.search(record)
    if emc is not None:
        extras["emc_pct"] = float(emc.group(1))
    temps = {name.lower(): float(value) for name, value in _TEMP_RE.findall(record)}
    if "tj" in temps:
        extras["tj_c"] = temps["tj"]
    rails = {m.group(1): float(m.group(2)) for m in _RAIL_RE.finditer(record)}
    power: float | None = None
    for rail, scope in _GPU_RAILS:
        if rail in rails:
            milliwatts = rails[rail]
            # A negative reading is a sensor offset at idle, not a figure.
            power = milliwatts / 1000 if milliwatts >= 0 else None
            extras["power_rail"] = rail
            if scope != "gpu":
                extras["power_scope"] = scope
            break
    board = next((rails[r] for r in _BOARD_RAILS if r in rails), None)
    if board is not None and board >= 0:
        extras["board_power_w"] = board / 1000
    card = CardReading(
        vendor="jetson",
        index=0,
        util_pct=util,
        mem_used_mib=used,
        mem_total_mib=total,
        power_w=power,
        temp_c=temps.get("gpu"),
        extras=extras,
        tool=TOOL,
    )
    return ToolReading(cards=[card])


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="jetson",
        names=("tegrastats",),
        search_dirs=("/usr/bin", "/usr/sbin", "/home/nvidia", "/home/ubuntu"),
        stream=Stream(
            name="--interval",
            args=("--interval", "{interval_ms}"),
            parse=parse_tegrastats,
            min_period_s=0.1,
        ),
        untested=True,
    ),
)
