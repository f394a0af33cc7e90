"""Fake ``npu-smi info watch`` samples (template: the 910 ``-i 2`` sample): the header, then one
row per chip, every cell left-justified to 12 columns. `render_sample(cards, header=True)`."""

from __future__ import annotations

from collections.abc import Sequence

from tests.fakes import FakeCard

HEADER = ("NpuID(Idx)  ChipId(Idx) Pwr(W)      Temp(C)     AI Core(%)  AI Cpu(%)   "
          "Ctrl Cpu(%) Memory(%)   Memory BW(%)")


def _cell(value: object) -> str:
    return f"{value!s:<12}"


def render_sample(cards: Sequence[FakeCard], header: bool = True) -> str:
    lines = [HEADER] if header else []
    for card in cards:
        mem = 0 if not card.mem_total_mib else round(100 * (card.mem_used_mib or 0)
                                                     / card.mem_total_mib)
        lines.append("".join(_cell(v) for v in (
            card.index, 0, f"{card.power_w or 0:.1f}", round(card.temp_c or 0),
            round(card.util_pct or 0), 0, 3, mem, 0,
        )))
    return "\n".join(lines) + "\n"
