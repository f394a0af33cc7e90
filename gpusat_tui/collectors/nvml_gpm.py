"""NVIDIA GPM (GPU Performance Monitoring) counters through nvidia-ml-py: SM activity, not a
duty cycle.

GPU-Util is the share of time *any* kernel ran: one tiny kernel, or an NCCL all-reduce spinning
while a rank waits for a straggler, reads 100 %. Since Hopper, NVML gives what DCGM's profiler
gives: the share of SMs busy, warp occupancy, tensor-pipe and DRAM-bandwidth use. A GPM figure
is a rate between two samples, so each device keeps two sample buffers and uses them in turn:
every poll takes one sample and computes the figures against the previous poll's. The poller
never sleeps for it; the cost is that the first poll of a device has no figures (the discovery
probe takes that first sample).

Untested on real hardware: built from nvidia-ml-py's ``pynvml.py`` and NVML's documentation,
tested against a fake pynvml (``tests/fakes/pynvml.py``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from types import ModuleType
from typing import Any

#: extras name (agreed, an interface) -> the pynvml constant of its GPM metric.
GPM_EXTRAS: dict[str, str] = {
    "sm_active_pct": "NVML_GPM_METRIC_SM_UTIL",
    "sm_occupancy_pct": "NVML_GPM_METRIC_SM_OCCUPANCY",
    "tensor_active_pct": "NVML_GPM_METRIC_ANY_TENSOR_UTIL",
    "dram_active_pct": "NVML_GPM_METRIC_DRAM_BW_UTIL",
    "fp16_active_pct": "NVML_GPM_METRIC_FP16_UTIL",
    "fp32_active_pct": "NVML_GPM_METRIC_FP32_UTIL",
    "fp64_active_pct": "NVML_GPM_METRIC_FP64_UTIL",
}
#: GPM's own duty cycle: the utilisation of a MIG instance, which NVML's plain
#: utilisation call does not give. Not an extra: it becomes the instance's ``util_pct``.
GRAPHICS_UTIL = "NVML_GPM_METRIC_GRAPHICS_UTIL"
#: Fallback ids (nvidia-ml-py 12.535's values) for bindings that name them differently.
_DEFAULT_IDS = {
    GRAPHICS_UTIL: 1, "NVML_GPM_METRIC_SM_UTIL": 2, "NVML_GPM_METRIC_SM_OCCUPANCY": 3,
    "NVML_GPM_METRIC_ANY_TENSOR_UTIL": 5, "NVML_GPM_METRIC_DRAM_BW_UTIL": 10,
    "NVML_GPM_METRIC_FP64_UTIL": 11, "NVML_GPM_METRIC_FP32_UTIL": 12,
    "NVML_GPM_METRIC_FP16_UTIL": 13,
}
#: The functions a binding must have for GPM (nvidia-ml-py 12.535 and newer).
REQUIRED = (
    "nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleGet", "nvmlGpmMetricsGet",
    "c_nvmlGpmMetricsGet_t",
)
#: A percentage this far past 100 is a broken counter, not rounding: dropped.
_SLACK = 5.0


def binding_has_gpm(nvml: ModuleType) -> bool:
    """Does this nvidia-ml-py have the GPM functions at all?"""
    return all(hasattr(nvml, name) for name in REQUIRED)


def device_supports_gpm(nvml: ModuleType, handle: Any) -> bool:
    """``nvmlGpmQueryDeviceSupport``; raises NVMLError (NotSupported, NoPermission...)."""
    support = nvml.nvmlGpmQueryDeviceSupport(handle)
    return bool(getattr(support, "isSupportedDevice", 0))


def _metric_ids(nvml: ModuleType) -> list[tuple[str, int]]:
    names = [GRAPHICS_UTIL, *GPM_EXTRAS.values()]
    return [(name, int(getattr(nvml, name, _DEFAULT_IDS[name]))) for name in names]


class GpmSampler:
    """Two GPM sample buffers of one device (or one MIG instance), used in turn.

    ``take(sample)`` fills a buffer: ``nvmlGpmSampleGet(handle, s)`` for a whole GPU,
    ``nvmlGpmMigSampleGet(parent, gpu_instance_id, s)`` for a MIG instance. Allocation happens
    once; an NVMLError from alloc is the caller's (it decides "no GPM here").
    """

    def __init__(self, nvml: ModuleType, take: Callable[[Any], Any]) -> None:
        self._nvml = nvml
        self._take = take
        self._samples = [nvml.nvmlGpmSampleAlloc(), nvml.nvmlGpmSampleAlloc()]
        self._current = 0
        self._primed = False
        self._ids = _metric_ids(nvml)
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = getattr(nvml, "NVML_GPM_METRICS_GET_VERSION", 1)
        request.numMetrics = len(self._ids)
        for slot, (_, metric_id) in enumerate(self._ids):
            request.metrics[slot].metricId = metric_id
        self._request = request

    def read(self) -> dict[str, float]:
        """Take a sample; return the figures since the previous one ({} on the first call).

        Raises NVMLError when the sample cannot be taken (the caller decides what it means);
        then the next call starts afresh, since its previous sample is no longer one interval
        old. A metric NVML refuses (per-metric status) or one out of range is left out.
        """
        nvml = self._nvml
        sample = self._samples[self._current]
        try:
            self._take(sample)
        except Exception:
            self._primed = False
            raise
        previous = self._samples[1 - self._current]
        self._current = 1 - self._current
        if not self._primed:
            self._primed = True
            return {}
        request = self._request
        request.sample1 = previous
        request.sample2 = sample
        nvml.nvmlGpmMetricsGet(request)
        success = getattr(nvml, "NVML_SUCCESS", 0)
        values: dict[str, float] = {}
        for slot, (name, _) in enumerate(self._ids):
            metric = request.metrics[slot]
            if metric.nvmlReturn != success:
                continue
            value = float(metric.value)
            if not math.isfinite(value) or value < -_SLACK or value > 100.0 + _SLACK:
                continue
            values[name] = min(100.0, max(0.0, value))
        return values

    def close(self) -> None:
        """Free both buffers (NVML keeps them until then)."""
        free = getattr(self._nvml, "nvmlGpmSampleFree", None)
        for sample in self._samples:
            if free is not None:
                # Freeing after the GPU is gone: nothing left to do.
                with contextlib.suppress(Exception):
                    free(sample)
        self._samples = []


def as_extras(values: dict[str, float]) -> dict[str, float | str | None]:
    """Figures from `GpmSampler.read` -> the card's agreed extras names."""
    return {extra: values[const] for extra, const in GPM_EXTRAS.items() if const in values}
