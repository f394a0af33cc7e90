"""Which card a probe's trainer computes on: `tie_card`.

The trainer names its device as its framework numbers it (``cuda:1``), after the visibility
variables renumbered the devices (``CUDA_VISIBLE_DEVICES``, ROCm's chain, Ascend's ...); the
tool numbers them physically. The probe file carries the trainer's device and environment, so
the tie is by device index where that maps back exactly, else by the tool's process table,
else a guess by local rank (said as a guess).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from gpusat_tui.model import CardProcess, CardReading

__all__ = ["DEVICE_VENDORS", "VISIBLE_CHAIN", "tie_card"]

#: Device type (and ROCm build) as the trainer's framework names it -> vendors it can be.
DEVICE_VENDORS: dict[tuple[str, bool], tuple[str, ...]] = {
    ("cuda", False): ("nvidia",),
    ("cuda", True): ("amd", "hygon"),
    ("npu", False): ("ascend",),
    ("mlu", False): ("cambricon",),
    ("musa", False): ("mthreads",),
    ("xpu", False): ("kunlunxin", "intel"),
}

#: Per vendor: the visibility variables that renumber devices, closest to the process first
#: (ROCm: HIP_VISIBLE_DEVICES, or CUDA_VISIBLE_DEVICES as its alias, picks among the devices
#: ROCR_VISIBLE_DEVICES left).
VISIBLE_CHAIN: dict[str, tuple[tuple[str, ...], ...]] = {
    "nvidia": (("CUDA_VISIBLE_DEVICES",),),
    "amd": (("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"), ("ROCR_VISIBLE_DEVICES",)),
    "hygon": (("HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"), ("ROCR_VISIBLE_DEVICES",)),
    "ascend": (("ASCEND_RT_VISIBLE_DEVICES",),),
    "cambricon": (("MLU_VISIBLE_DEVICES",),),
    "mthreads": (("MUSA_VISIBLE_DEVICES",),),
    "kunlunxin": (("XPU_VISIBLE_DEVICES",),),
}


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _visible_entries(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


#: A device number in a visibility variable: ASCII digits, as CUDA reads it ("²" is no index).
_ENTRY_INDEX = re.compile(r"-?[0-9]{1,9}")


def _physical_index(
    index: int, vendor: str, env: Mapping[str, object], cards: Sequence[CardReading]
) -> tuple[int | None, bool]:
    """The tool's index of the card the trainer calls ``index``; (None, _) if out of range.

    The bool is True when the mapping is exact, False when it is a guess (an entry that is
    neither an index nor a UUID the tool printed, such as a MIG instance).
    """
    exact = True
    for names in VISIBLE_CHAIN.get(vendor, ()):
        value = next((v for n in names if isinstance(v := env.get(n), str)), None)
        if value is None:
            continue
        entries = _visible_entries(value)
        if index >= len(entries):
            return None, exact
        entry = entries[index]
        if _ENTRY_INDEX.fullmatch(entry):
            index = int(entry)
            continue
        by_uuid = [c for c in cards if c.uuid and c.uuid.lower().startswith(entry.lower())]
        if len(by_uuid) == 1:
            index = by_uuid[0].index
            continue
        exact = False  # MIG-..., a bus id, a partial UUID we cannot resolve: keep the index
    return index, exact


def tie_card(
    doc: Mapping[str, Any],
    cards: Sequence[CardReading],
    card_processes: Sequence[CardProcess],
) -> tuple[str | None, str | None]:
    """(card_id, tie) for one probe: by device index, else the tool's process table, else a
    guess by local rank (or the only card); (None, None) when nothing fits."""
    device_type = doc.get("device_type")
    index = _int(doc.get("device_index"))
    raw_env = doc.get("env")
    env: Mapping[str, object] = raw_env if isinstance(raw_env, dict) else {}
    if isinstance(device_type, str) and index is not None and index >= 0:
        vendors = DEVICE_VENDORS.get((device_type, bool(doc.get("hip"))), ())
        for vendor in vendors:
            mine = [c for c in cards if c.vendor == vendor]
            if not mine:
                continue
            physical, exact = _physical_index(index, vendor, env, mine)
            card = next((c for c in mine if c.index == physical), None)
            if card is None:
                break
            if vendor == "nvidia" and env.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
                # CUDA numbers fastest first; nvidia-smi by bus. Same models: same order.
                exact = exact and len({c.name for c in mine}) <= 1
            return card.id, ("device" if exact else "guess")
    pid = doc.get("pid")
    listed = next((p.card_id for p in card_processes if p.pid == pid and p.card_id), None)
    if listed is not None:
        return listed, "tool"
    if not cards:
        return None, None
    local = _int(doc.get("local_rank"))
    ordered = sorted(cards, key=lambda c: (c.vendor, c.index))
    if len(ordered) == 1:
        return ordered[0].id, "guess"
    if local is not None and 0 <= local < len(ordered) and len({c.vendor for c in ordered}) == 1:
        return ordered[local].id, "guess"
    return None, None
