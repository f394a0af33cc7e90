"""The range every figure of a probe file can have; what lies outside is no figure.

Like `gpusat_tui.model.FIGURE_BOUNDS` for the cards: a probe file is written by a process the
monitor does not control, so ``1e308``, a negative rate or a share of 400 % is dropped (made
null) with a note, never averaged into a verdict or passed into ``check --json``. The bounds
are wide on purpose (a day per step, a petabyte per second is not refused for being unusual),
so only what cannot be is refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from gpusat_tui.model import PCT_OVERSHOOT

__all__ = ["ALLOC_BOUNDS", "PROBE_BOUNDS", "bound_probe_figures"]

_DAY_S = 86_400.0
#: Above any device memory made (as `FIGURE_BOUNDS`' 16 TiB).
_DEVICE_BYTES = 16.0 * 2**40

#: Key of a probe file (layout 1) -> (lowest, highest) possible value.
PROBE_BOUNDS: dict[str, tuple[float, float]] = {
    "t": (0.0, 1e11),                     # a Unix time, as a Frame's t
    "elapsed_s": (0.0, 1e9),              # about 30 years
    "interval_s": (0.0, _DAY_S),
    "data_wait_s": (0.0, 1e9),
    "data_wait_pct": (0.0, 100.0),        # up to PCT_OVERSHOOT over is rounding: clamped
    "step_ms": (0.0, _DAY_S * 1000.0),
    "batches_per_s": (0.0, 1e7),
    "samples_per_s": (0.0, 1e10),
    "batches": (0.0, 1e15),
    "steps": (0.0, 1e15),
    "batch_size": (0.0, 1e9),
    "rank": (0.0, 2**24),
    "local_rank": (0.0, 2**24),
    "world_size": (1.0, 2**24),
    "device_index": (0.0, 4096.0),
    "stack_hz": (0.0, 1000.0),
    "stack_samples": (0.0, 1e15),
    "stack_still_s": (0.0, 1e9),
}
#: Keys of the file's ``alloc`` object -> bounds.
ALLOC_BOUNDS: dict[str, tuple[float, float]] = {
    "allocated_bytes": (0.0, _DEVICE_BYTES),
    "reserved_bytes": (0.0, _DEVICE_BYTES),
    "inactive_split_bytes": (0.0, _DEVICE_BYTES),
    "alloc_retries": (0.0, 1e15),
    "ooms": (0.0, 1e15),
}
_PCT_KEYS = frozenset({"data_wait_pct"})


def _outside(value: Any, low: float, high: float) -> bool:
    """True for a number that cannot be (non-finite, or out of range). Other types are left to
    the reader, which treats a wrong type as unknown."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return True
    return not low <= value <= high  # an int too big for a float compares exactly


def _bounded(
    doc: Mapping[str, Any], bounds: Mapping[str, tuple[float, float]], prefix: str,
    rejected: dict[str, Any],
) -> dict[str, Any]:
    out = dict(doc)
    for key, (low, high) in bounds.items():
        value = out.get(key)
        if key in _PCT_KEYS and not _outside(value, low, high + PCT_OVERSHOOT) and (
            isinstance(value, (int, float)) and value > high
        ):
            out[key] = high  # rounding in the probe's clock: clamped
            continue
        if _outside(value, low, high):
            rejected[prefix + key] = value
            out[key] = None
    return out


def bound_probe_figures(doc: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the document with impossible figures made null, {key: the value refused}).

    ``alloc`` figures are named ``alloc.<key>``. Never raises.
    """
    rejected: dict[str, Any] = {}
    out = _bounded(doc, PROBE_BOUNDS, "", rejected)
    alloc = out.get("alloc")
    if isinstance(alloc, dict):
        out["alloc"] = _bounded(alloc, ALLOC_BOUNDS, "alloc.", rejected)
    return out, rejected
