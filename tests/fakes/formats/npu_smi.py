"""Fake ``npu-smi`` output in the real format.

``render`` prints ``npu-smi info`` with the column widths of the 24.1.rc2.1 capture
(samples/smi/ascend/npu-smi-info-910B2-8npu-procs-vllm-24.1.rc2.1.txt): one chip per NPU,
HBM-Usage as the VRAM, Memory-Usage 0/0. ``npu-smi info`` prints no power cap, so a card's
``power_cap_w`` never shows. ``render_usages`` prints ``npu-smi info -t usages -i N -c C`` in the
tab-indented layout of Huawei's documentation, using ``FakeCard.extras`` (``aicpu_pct``,
``ctrlcpu_pct``, ``hbm_bw_pct``) where given.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.fakes import FakeCard, FakeProcess

VERSION = "24.1.rc2.1"
RULE = "+" + "-" * 27 + "+" + "-" * 15 + "+" + "-" * 52 + "+"
DOUBLE = "+" + "=" * 27 + "+" + "=" * 15 + "+" + "=" * 52 + "+"
USAGE = (
    "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type> [Options...]\n\n"
    "Commands:\n"
    "       watch          Show all device's status in scrolling format\n"
    "       -h, --help     Show this help text and exit\n"
    "       -t type        Show information for type\n"
)


def _n(value: float | None, decimals: int = 0, na: str = "-") -> str:
    if value is None:
        return na
    return f"{value:.{decimals}f}" if decimals else str(round(value))


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """``npu-smi info`` for these cards (card index = NPU id, one chip each)."""
    lines = [
        "+" + "-" * 96 + "+",
        "| " + f"npu-smi {VERSION}".ljust(33) + f"Version: {VERSION}".ljust(62) + "|",
        RULE,
        "| NPU   Name                | Health        | Power(W)    Temp(C)           "
        "Hugepages-Usage(page)|",
        "| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  "
        "HBM-Usage(MB)        |",
        DOUBLE,
    ]
    for card in cards:
        bus = f"0000:{(card.index * 16 + 1) % 256:02X}:00.0"
        lines.append(
            f"| {card.index:<6}{card.name:<20}| {'OK':<14}| {_n(card.power_w, 1):<12}"
            f"{_n(card.temp_c):<18}{'0':<5}/ {'0':<14}|"
        )
        lines.append(
            f"| {0:<26}| {bus:<14}| {_n(card.util_pct):<12}{'0':<5}/ {'0':<11}"
            f"{_n(card.mem_used_mib):<5}/ {_n(card.mem_total_mib):<14}|"
        )
        lines.append(DOUBLE)
    lines += [
        RULE,
        "| NPU     Chip              | Process id    | Process name             "
        "| Process memory(MB)      |",
        DOUBLE,
    ]
    for card in cards:
        mine = [p for p in processes if p.card_index == card.index]
        if not mine:
            lines.append("| " + f"No running processes found in NPU {card.index}".ljust(95) + "|")
            lines.append(DOUBLE)
        for proc in mine:
            lines.append(
                f"| {card.index:<8}{0:<18}| {proc.pid:<14}| {proc.name:<25}"
                f"| {_n(proc.mem_mib):<24}|"
            )
            lines.append(DOUBLE)
    return "\n".join(lines) + "\n"


def render_usages(card: FakeCard) -> str:
    """``npu-smi info -t usages -i N -c C`` for one chip (no NPU ID / Chip ID lines)."""
    extras = card.extras
    pct = None
    if card.mem_used_mib is not None and card.mem_total_mib:
        pct = 100.0 * card.mem_used_mib / card.mem_total_mib
    rows = [
        ("HBM Capacity(MB)", _n(card.mem_total_mib, na="NA")),
        ("HBM Usage Rate(%)", _n(pct, na="NA")),
        ("Aicore Usage Rate(%)", _n(card.util_pct, na="NA")),
        ("Aicpu Usage Rate(%)", _n(extras.get("aicpu_pct", 0.0))),
        ("Ctrlcpu Usage Rate(%)", _n(extras.get("ctrlcpu_pct", 0.0))),
        ("HBM Bandwidth Usage Rate(%)", _n(extras.get("hbm_bw_pct", 0.0))),
    ]
    return "".join(f"\t{label:<31}: {value}\n" for label, value in rows)


def render_for_args(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """What npu-smi prints for ``args``: ``info``, ``info -t usages -i N -c 0``; else usage."""
    args = tuple(args)
    if args == ("info",):
        return render(cards, processes)
    if len(args) == 7 and args[:5] == ("info", "-t", "usages", "-i", args[4]) and args[5] == "-c":
        card = next((c for c in cards if str(c.index) == args[4]), None)
        if card is not None and args[6] == "0":
            return render_usages(card)
        return "Error: the device id or chip id is invalid.\n"
    return USAGE
