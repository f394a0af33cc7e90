"""Fake Intel ``xpu-smi`` (XPU Manager) output in the real formats.

``render``: the v2.0 default table of
samples/smi/intel/xpu-smi-v2.0-default-view-B580-1gpu-proc-row.txt (102 columns, Processes box).
``render_dump``: ``xpu-smi dump ... -m 0,1,2,3,4,5,18`` CSV like
samples/smi/intel/xpu-smi-dump-2xMax1100-m0-1-2-3-4-5-18-slurm-monitor.txt. ``render_discovery``
and ``render_stats``: one device's detail views (xpu-smi-v2.0-discovery-d0-..., xpu-smi-stats-...).
``render_v1_for_args`` is a 1.x tool: its help text for no args, so the live source falls back
to ``dump``.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusat_tui.collectors.intel_xpu_smi import DUMP_ARGS
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import NA, respond, whole
from tests.fakes.formats.xpu_smi import INTEL_HELP

RULE = "+" + "-" * 46 + "+" + "-" * 28 + "+" + "-" * 24 + "+"


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """Plain ``xpu-smi`` (v2.0)."""
    lines = [
        RULE,
        "|            Intel XPU-SMI v2.0    Driver: 9FF4708BCC22C0EE6FD801A    Level Zero: 1.27.0"
        "             |",
        RULE,
        "| GPU  Name                    Persistence-M   | Bus-Id            Disp.A   |   Volatile"
        " Uncorr. ECC |",
        "| Fan  Temp  Pwr:Usage/Cap                     | Memory-Usage               |   GPU-Util"
        "  Compute M. |",
        RULE,
    ]
    for c in cards:
        power = f"{whole(c.power_w, 'W')} / {whole(c.power_cap_w, 'W')}"
        mem = f"{whole(c.mem_used_mib, 'MiB')} / {whole(c.mem_total_mib, 'MiB')}"
        bus = f"0000:{3 + c.index:02x}:00.0"
        lines.append(f"| {c.index:>3}  {c.name[:22]:<22}  Off             | {bus}"
                     "      Off      |               Disabled |")
        lines.append(f"| N/A  {whole(c.temp_c, 'C'):>5}  {power:<36}| {mem:<27}| "
                     f"{whole(c.util_pct, '%'):>7}        Default |")
        lines.append(RULE)
    lines += [
        "",
        "+-------+-----------+--------+----------------+" + "-" * 54 + "+",
        "| Processes:".ljust(101) + "|",
        "|   GPU         PID    Type    Process Name                                         GPU"
        " Memory Usage |",
        "+-------+-----------+--------+----------------+" + "-" * 54 + "+",
    ]
    for p in processes:
        row = f"|  {p.card_index:>4}  {p.pid:>10}     C      {p.name[:40]:<40}"
        lines.append(row + f"{whole(p.mem_mib)} MiB |".rjust(101 - len(row) + 1))
    lines.append("+-------+-----------+--------+----------------+" + "-" * 54 + "+")
    return "\n".join(lines) + "\n"


def _two(value: float | None) -> str:
    return f" {NA}" if value is None else f"{value:.2f}"


def render_dump(cards: Sequence[FakeCard]) -> str:
    """``xpu-smi dump -d -1 -m 0,1,2,3,4,5,18 -i 1 -n 1``."""
    lines = [
        "Timestamp, DeviceId, GPU Utilization (%), GPU Power (W), GPU Frequency (MHz), "
        "GPU Core Temperature (Celsius Degree), GPU Memory Temperature (Celsius Degree), "
        "GPU Memory Utilization (%), GPU Memory Used (MiB)"
    ]
    for c in cards:
        pct = None if c.mem_used_mib is None or not c.mem_total_mib else (
            100 * c.mem_used_mib / c.mem_total_mib)
        lines.append(f"10:00:00.000, {c.index:>4}, {_two(c.util_pct)}, {_two(c.power_w)}, 1550, "
                     f"{_two(c.temp_c)},  N/A, {_two(pct)}, {_two(c.mem_used_mib)}")
    return "\n".join(lines) + "\n"


def _box(rows: list[tuple[str, str]]) -> str:
    rule = "+" + "-" * 11 + "+" + "-" * 86 + "+"
    out = [rule, "| Device ID | Device Information".ljust(98) + "|", rule]
    out += [f"| {a:<9} | {b:<84} |" for a, b in rows]
    out.append(rule)
    return "\n".join(out) + "\n"


def render_discovery(card: FakeCard) -> str:
    """``xpu-smi discovery -d N``."""
    size = NA if card.mem_total_mib is None else f"{card.mem_total_mib:.2f}"
    return _box([
        (str(card.index), "Device Type: GPU"),
        ("", f"Device Name: {card.name}"),
        ("", f"SOC UUID: 00000000-0000-0003-0000-{card.index:04x}e20b8086"),
        ("", ""),
        ("", f"PCI BDF Address: 0000:{3 + card.index:02x}:00.0"),
        ("", f"Memory Physical Size: {size} MiB"),
    ])


def render_stats(card: FakeCard) -> str:
    """``xpu-smi stats -d N`` (empty cells where there is no figure)."""
    rule = "+" + "-" * 29 + "+" + "-" * 68 + "+"

    def row(label: str, value: float | None) -> str:
        return f"| {label:<27} | {'' if value is None else whole(value):<66} |"

    return "\n".join([
        rule, row("Device ID", card.index), rule,
        row("GPU Utilization (%)", card.util_pct), rule,
        row("GPU Power (W)", card.power_w),
        row("GPU Core Temperature (C)", card.temp_c),
        row("GPU Memory Used (MiB)", card.mem_used_mib), rule,
    ]) + "\n"


def _per_card(args: Sequence[str], cards: Sequence[FakeCard]) -> str | None:
    if len(args) == 3 and args[1] == "-d" and args[0] in ("discovery", "stats"):
        card = next((c for c in cards if str(c.index) == args[2]), None)
        if card is not None:
            return render_discovery(card) if args[0] == "discovery" else render_stats(card)
    return None


def render_for_args(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """A v2.0 tool: its table, ``dump``, and the per-card views."""
    per_card = _per_card(args, cards)
    if per_card is not None:
        return per_card
    views = {(): lambda: render(cards, processes), DUMP_ARGS: lambda: render_dump(cards)}
    return respond(args, views, INTEL_HELP)


def render_v1_for_args(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """A 1.x tool: help text for no args (no table), ``dump`` and the per-card views."""
    if tuple(args) == ():
        return INTEL_HELP
    return render_for_args(args, cards, processes)
