"""The static side of the NVML reader: one GPU's fields that do not change between polls
(name, UUID, bus id, power cap, MIG layout), and the guarded field call every read uses.

`get_field` turns NotSupported, NoPermission, Unknown and a function an older nvidia-ml-py
lacks into "no figure" (None); a lost GPU (``NVMLError_GpuIsLost``) raises `GpuLost` so the
reader can drop that card and enumerate the devices again. Untested on real hardware.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from gpusat_tui.collectors import nvml_gpm


def text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value)


class GpuLost(Exception):
    """The device answered GpuIsLost: it fell off the bus; skip it and rescan."""


def is_lost(nvml: ModuleType, exc: BaseException) -> bool:
    lost_cls = getattr(nvml, "NVMLError_GpuIsLost", None)
    if isinstance(lost_cls, type) and isinstance(exc, lost_cls):
        return True
    return getattr(exc, "value", None) == getattr(nvml, "NVML_ERROR_GPU_IS_LOST", 15)


def get_field(nvml: ModuleType, name: str, *args: Any) -> Any:
    """One NVML field by function name; NotSupported, NoPermission, Unknown, or a function an
    older nvidia-ml-py lacks all mean "no figure". A lost GPU raises `GpuLost`."""
    fn = getattr(nvml, name, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except nvml.NVMLError as exc:
        if is_lost(nvml, exc):
            raise GpuLost(f"{name}: {exc}") from exc
        return None


@dataclass
class Instance:
    """One MIG device of a GPU (static part)."""

    mig_index: int
    handle: Any
    gpu_instance_id: int | None
    compute_instance_id: int | None
    name: str | None
    uuid: str | None
    gpm: nvml_gpm.GpmSampler | None = None


@dataclass
class Device:
    """One GPU's static fields, read once (see `STATIC_REFRESH_POLLS`)."""

    index: int
    handle: Any
    name: str | None
    uuid: str | None
    bus_id: str | None
    cap_w: float | None
    mig: bool
    instances: list[Instance] = field(default_factory=list)
    gpm: nvml_gpm.GpmSampler | None = None


def read_device(nvml: ModuleType, index: int, handle: Any) -> Device:
    """A GPU's static fields (and MIG layout). Raises NVMLError or `GpuLost`."""
    pci = get_field(nvml, "nvmlDeviceGetPciInfo", handle)
    cap_mw = get_field(nvml, "nvmlDeviceGetEnforcedPowerLimit", handle)
    mig_mode = get_field(nvml, "nvmlDeviceGetMigMode", handle)
    device = Device(
        index=index,
        handle=handle,
        name=text(get_field(nvml, "nvmlDeviceGetName", handle)),
        uuid=text(get_field(nvml, "nvmlDeviceGetUUID", handle)),
        bus_id=text(getattr(pci, "busId", None)) if pci is not None else None,
        cap_w=cap_mw / 1000.0 if cap_mw is not None else None,
        mig=mig_mode is not None and mig_mode[0] == 1,
    )
    if device.mig:
        device.instances = mig_instances(nvml, handle)
    return device


def mig_instances(nvml: ModuleType, handle: Any) -> list[Instance]:
    """The MIG devices of a GPU in MIG mode, by MIG device index."""
    count = get_field(nvml, "nvmlDeviceGetMaxMigDeviceCount", handle) or 0
    instances: list[Instance] = []
    for mig_index in range(int(count)):
        # NotFound for a slot with no MIG device configured: skipped.
        mig = get_field(nvml, "nvmlDeviceGetMigDeviceHandleByIndex", handle, mig_index)
        if mig is None:
            continue
        gi = get_field(nvml, "nvmlDeviceGetGpuInstanceId", mig)
        ci = get_field(nvml, "nvmlDeviceGetComputeInstanceId", mig)
        instances.append(
            Instance(
                mig_index=mig_index,
                handle=mig,
                gpu_instance_id=int(gi) if gi is not None else None,
                compute_instance_id=int(ci) if ci is not None else None,
                name=text(get_field(nvml, "nvmlDeviceGetName", mig)),
                uuid=text(get_field(nvml, "nvmlDeviceGetUUID", mig)),
            )
        )
    return instances


def close_gpm(device: Device) -> None:
    """Free the GPM buffers of a GPU and its MIG instances."""
    for sampler in [device.gpm, *(i.gpm for i in device.instances)]:
        if sampler is not None:
            sampler.close()
    device.gpm = None
    for inst in device.instances:
        inst.gpm = None


def gpm_refusal(nvml: ModuleType, exc: BaseException) -> str:
    """Plain words for why GPM said no."""
    for cls_name, words in (
        ("NVMLError_NoPermission", "no permission: profiling counters are restricted here"),
        ("NVMLError_NotSupported", "not supported"),
        ("NVMLError_FunctionNotFound", "the driver's NVML has no GPM (driver too old)"),
        ("NVMLError_InUse", "the counters are in use by another profiler"),
    ):
        cls = getattr(nvml, cls_name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return words
    return str(exc) or type(exc).__name__
