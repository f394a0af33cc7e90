"""NVIDIA through NVML (the ``nvidia-ml-py`` package, imported as ``pynvml``).

NVML is read in-process: no subprocess per poll, so it is the cheapest NVIDIA reader and comes
first in the "nvidia" group. When the library cannot load (no driver, a container without
``libnvidia-ml.so``) `read_nvml` raises `ToolMissing` and the group falls back to nvidia-smi
quietly. Every per-field call is guarded: a field a card does not support (power on some
consumer cards, utilisation under MIG) is ``None``, never an exception.
"""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

from gpusat_tui.collectors.base import ToolReading, ToolSpec
from gpusat_tui.errors import ToolFailed, ToolMissing
from gpusat_tui.model import CardProcess, CardReading

_lock = threading.Lock()
#: The initialised pynvml module, once nvmlInit succeeded (init is not free: do it once).
_nvml: ModuleType | None = None

_MIB = 1024 * 1024


def _load() -> ModuleType:
    """Import pynvml and call nvmlInit once; any failure means "no NVML here"."""
    global _nvml
    with _lock:
        if _nvml is not None:
            return _nvml
        try:
            import pynvml
        except ImportError as exc:  # the package itself is absent
            raise ToolMissing(f"nvml: Python package nvidia-ml-py not importable ({exc})") from exc
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, OSError...
            raise ToolMissing(f"nvml: NVML library did not load ({exc})") from exc
        _nvml = pynvml
        return pynvml


def reset() -> None:
    """Forget the initialised library (tests, or after the driver was reloaded)."""
    global _nvml
    with _lock:
        _nvml = None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value)


def _get(nvml: ModuleType, name: str, *args: Any) -> Any:
    """One NVML field by function name; NotSupported, NoPermission, GPU lost, or a function
    an older nvidia-ml-py lacks all mean "no figure"."""
    fn = getattr(nvml, name, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except nvml.NVMLError:
        return None


def _card(nvml: ModuleType, index: int, handle: Any) -> tuple[CardReading, list[CardProcess]]:
    util = _get(nvml, "nvmlDeviceGetUtilizationRates", handle)
    mem = _get(nvml, "nvmlDeviceGetMemoryInfo", handle)
    power_mw = _get(nvml, "nvmlDeviceGetPowerUsage", handle)
    cap_mw = _get(nvml, "nvmlDeviceGetEnforcedPowerLimit", handle)
    sensor = getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
    temp = _get(nvml, "nvmlDeviceGetTemperature", handle, sensor)
    pci = _get(nvml, "nvmlDeviceGetPciInfo", handle)
    mig = _get(nvml, "nvmlDeviceGetMigMode", handle)
    extras: dict[str, float | str | None] = {}
    if mig is not None and mig[0] == 1:
        extras["mig"] = "Enabled"
    card = CardReading(
        vendor="nvidia",
        index=index,
        name=_text(_get(nvml, "nvmlDeviceGetName", handle)),
        uuid=_text(_get(nvml, "nvmlDeviceGetUUID", handle)),
        bus_id=_text(getattr(pci, "busId", None)) if pci is not None else None,
        # Under MIG the whole-GPU utilisation is NotSupported: None, not 0.
        util_pct=getattr(util, "gpu", None) if util is not None else None,
        mem_used_mib=mem.used / _MIB if mem is not None else None,
        mem_total_mib=mem.total / _MIB if mem is not None else None,
        power_w=power_mw / 1000.0 if power_mw is not None else None,
        power_cap_w=cap_mw / 1000.0 if cap_mw is not None else None,
        temp_c=temp,
        extras=extras,
        tool="nvml",
    )
    processes: list[CardProcess] = []
    for proc in _get(nvml, "nvmlDeviceGetComputeRunningProcesses", handle) or []:
        used = getattr(proc, "usedGpuMemory", None)
        processes.append(
            CardProcess(
                pid=int(proc.pid),
                card_id=card.id,
                # usedGpuMemory is None when the driver cannot say (Windows WDDM, some MIG).
                mem_used_mib=used / _MIB if isinstance(used, int) else None,
            )
        )
    return card, processes


def read_nvml() -> ToolReading:
    """Read every NVIDIA device through NVML. Raises ToolMissing when NVML is absent.

    A device whose handle cannot be had (GPU fallen off the bus) is skipped, like nvidia-smi
    does; the others are still read. If no device at all could be read, that is an error.
    """
    nvml = _load()
    try:
        count = nvml.nvmlDeviceGetCount()
    except nvml.NVMLError as exc:  # loaded but broken (driver gone): a failure, not absence
        raise ToolFailed(f"nvml: cannot count devices ({exc})") from exc
    reading = ToolReading(version=_text(_get(nvml, "nvmlSystemGetDriverVersion")))
    failed: list[str] = []
    for index in range(count):
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except nvml.NVMLError as exc:
            failed.append(f"GPU{index}: {exc}")
            continue
        card, processes = _card(nvml, index, handle)
        reading.cards.append(card)
        reading.processes.extend(processes)
    reading.notes.extend(f"nvml skipped {what}" for what in failed)
    if failed and not reading.cards:
        raise ToolFailed("nvml: no device could be read (" + "; ".join(failed) + ")")
    return reading


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool="nvml",
        vendor="nvidia",
        names=(),
        group="nvidia",
        priority=0,
        reader=read_nvml,
    ),
)
