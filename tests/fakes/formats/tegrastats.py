"""Fake ``tegrastats`` lines in the JetPack 7 layout (template: the AGX Orin R39.2 sample).

`render_line(card)`: one line, one record. The GPU rail is ``VDD_GPU`` (a GPU-only rail, as on
Thor), so the rendered power is the card's own; RAM is the shared RAM.
"""

from __future__ import annotations

from tests.fakes import FakeCard


def render_line(card: FakeCard, stamp: str = "07-25-2026 09:08:28") -> str:
    used = 0 if card.mem_used_mib is None else round(card.mem_used_mib)
    total = 0 if card.mem_total_mib is None else round(card.mem_total_mib)
    util = "" if card.util_pct is None else f"{card.util_pct:.0f}%"
    mw = 0 if card.power_w is None else round(card.power_w * 1000)
    temp = "" if card.temp_c is None else f" gpu@{card.temp_c:.3f}C/{card.temp_c:.3f}C"
    return (
        f"{stamp} RAM {used}/{total}MB (lfb 1x2MB) CPU [23%@2201,10%@2201,4%@2201,14%@2201] "
        f"EMC_FREQ 3%@3199 GR3D_FREQ {util}@[1300,1300] NVENC0 off NVDEC0 off VIC off APE 174 "
        f"cpu@52.968C/52.968C{temp} VDD_GPU {mw}mW/{mw}mW/{mw}mW "
        "VDD_CPU_CV 3268mW/3268mW/3268mW VIN_SYS_5V0 5500mW/5500mW/5500mW"
    )
