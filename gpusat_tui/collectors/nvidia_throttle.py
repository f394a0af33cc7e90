"""NVIDIA clock-event ("throttle") reasons: one bit mask, two readers.

NVML's ``nvmlDeviceGetCurrentClocksEventReasons`` (``...ThrottleReasons`` in older bindings) and
nvidia-smi's ``clocks_event_reasons.active`` (``clocks_throttle_reasons.active`` on older
drivers) give the same 64-bit mask. Both readers turn it into the card's ``extras["throttle"]``:
a comma-separated string of short names, in bit order, ``""`` when the mask was read and no
reason is active. The names are an interface (check --json, the dashboard, the verdict), kept
with the model (`model.THROTTLE_NAMES`).
"""

from __future__ import annotations

#: NVML bit -> short name. Display-clock setting (0x100) is left out: it says nothing about
#: training throughput. "thermal" (the ninth agreed name) is for sources that do not split
#: software and hardware thermal limits; NVIDIA always does.
REASON_BITS: tuple[tuple[int, str], ...] = (
    (0x0000000000000001, "idle"),
    (0x0000000000000002, "app-clocks"),
    (0x0000000000000004, "power-cap"),
    (0x0000000000000008, "hw-slowdown"),
    (0x0000000000000010, "sync-boost"),
    (0x0000000000000020, "sw-thermal"),
    (0x0000000000000040, "hw-thermal"),
    (0x0000000000000080, "hw-power-brake"),
)

def reason_names(mask: int) -> str:
    """``0x44`` -> ``"power-cap,hw-thermal"``; ``0`` -> ``""``."""
    return ",".join(name for bit, name in REASON_BITS if mask & bit)


def parse_mask(cell: str | None) -> int | None:
    """An nvidia-smi cell (``0x0000000000000004``, ``4``) -> mask; None for N/A or garbage."""
    if cell is None:
        return None
    text = cell.strip().lower()
    try:
        value = int(text, 16) if text.startswith("0x") else int(text)
    except ValueError:
        return None
    return value if 0 <= value < 1 << 64 else None
