"""A fake ``pynvml`` module driven by scenarios, in the style of gpustat's NVML tests.

`FakeNvml(gpus).module()` is a module that looks like nvidia-ml-py to the collector: the real
package's constants, error classes (``NVMLError(NVML_ERROR_GPU_IS_LOST)`` is an
``NVMLError_GpuIsLost``, as in the real one) and ctypes structs (``c_nvmlGpmMetricsGet_t``), with
every ``nvml*`` function replaced by one that answers from `FakeGpu` figures. A test changes
``fake.gpus`` (or a GPU's fields) between polls, as a real card's figures change.

GPM is simulated the way the hardware counts: every ``nvmlGpmSampleGet`` advances the device's
clock by one second and adds ``rate * 1 s`` to a per-metric counter, the rate being the GPU's
``gpm`` figures at that moment; ``nvmlGpmMetricsGet(sample1, sample2)`` divides the counter
difference by the time difference. So a reader that compared the wrong pair of samples, or
slept between two fresh ones, gets a different figure than the test expects.

``binding="old"``: an nvidia-ml-py from before GPM and the clocks-event rename (no ``nvmlGpm*``,
only ``nvmlDeviceGetCurrentClocksThrottleReasons``).
"""

from __future__ import annotations

import ctypes
from collections import Counter
from dataclasses import dataclass, field
from types import ModuleType, SimpleNamespace
from typing import Any

import pynvml as _real

_MIB = 1024 * 1024

#: Error names a scenario may use -> the real NVML_ERROR_* code.
ERRORS = {
    "NotSupported": _real.NVML_ERROR_NOT_SUPPORTED,
    "NoPermission": _real.NVML_ERROR_NO_PERMISSION,
    "GpuIsLost": _real.NVML_ERROR_GPU_IS_LOST,
    "Unknown": _real.NVML_ERROR_UNKNOWN,
    "NotFound": _real.NVML_ERROR_NOT_FOUND,
    "FunctionNotFound": _real.NVML_ERROR_FUNCTION_NOT_FOUND,
    "LibraryNotFound": _real.NVML_ERROR_LIBRARY_NOT_FOUND,
    "DriverNotLoaded": _real.NVML_ERROR_DRIVER_NOT_LOADED,
}

#: GPM figure names a scenario uses (the collector's extras names, plus the duty cycle).
GPM_IDS = {
    "graphics_util": _real.NVML_GPM_METRIC_GRAPHICS_UTIL,
    "sm_active_pct": _real.NVML_GPM_METRIC_SM_UTIL,
    "sm_occupancy_pct": _real.NVML_GPM_METRIC_SM_OCCUPANCY,
    "tensor_active_pct": _real.NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    "dram_active_pct": _real.NVML_GPM_METRIC_DRAM_BW_UTIL,
    "fp16_active_pct": _real.NVML_GPM_METRIC_FP16_UTIL,
    "fp32_active_pct": _real.NVML_GPM_METRIC_FP32_UTIL,
    "fp64_active_pct": _real.NVML_GPM_METRIC_FP64_UTIL,
}
_BY_ID = {v: k for k, v in GPM_IDS.items()}
_NOT_MIG = 0xFFFFFFFF


def nvml_error(name: str) -> Exception:
    return _real.NVMLError(ERRORS[name])  # type: ignore[no-any-return]


@dataclass
class FakeMig:
    """One MIG device of a GPU."""

    mig_index: int
    gpu_instance_id: int
    compute_instance_id: int = 0
    name: str = "NVIDIA H200 MIG 1g.18gb"
    uuid: str = ""
    mem_used_mib: float = 0.0
    mem_total_mib: float = 16384.0
    gpm: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.uuid:
            self.uuid = f"MIG-{self.gpu_instance_id:08x}-0000-4000-8000-{self.mig_index:012x}"


@dataclass
class FakeProc:
    pid: int
    used_mib: float | None = 1024.0
    gpu_instance_id: int = _NOT_MIG
    compute_instance_id: int = _NOT_MIG


@dataclass
class FakeGpu:
    """One GPU as NVML sees it. ``errors`` maps a function name to the error it raises
    (``{"nvmlDeviceGetPowerUsage": "NotSupported"}``); ``handle_error`` makes the handle fail."""

    name: str = "NVIDIA H200"
    uuid: str = "GPU-11111111-2222-3333-4444-555555555555"
    bus_id: str = "00000000:18:00.0"
    util_pct: int = 97
    mem_used_mib: float = 120 * 1024.0
    mem_total_mib: float = 141 * 1024.0
    power_w: float = 612.5
    cap_w: float = 700.0
    temp_c: int = 63
    reasons: int = 0
    mig: list[FakeMig] | None = None
    gpm: dict[str, float] = field(default_factory=dict)
    #: "yes", "no" (pre-Hopper: isSupportedDevice 0) or an error name.
    gpm_support: str = "yes"
    procs: list[FakeProc] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    handle_error: str | None = None


@dataclass
class _Sample:
    key: tuple[int, int]  # (gpu index, gpu instance id or -1)
    t: float
    counters: dict[str, float]


class FakeNvml:
    """Scenario state plus the module built from it. ``calls`` counts every nvml* call."""

    def __init__(
        self, gpus: list[FakeGpu], binding: str = "new", init_error: str | None = None,
        driver: str = "570.124.06",
    ) -> None:
        self.gpus = gpus
        self.binding = binding
        self.init_error = init_error
        self.driver = driver
        self.count_error: str | None = None
        self.calls: Counter[str] = Counter()
        self._buffers: list[Any] = []
        self._samples: dict[int, _Sample] = {}
        self._clock: dict[tuple[int, int], float] = {}
        self._counters: dict[tuple[int, int], dict[str, float]] = {}

    # --- helpers ---------------------------------------------------------------------------

    def _gpu(self, handle: Any) -> FakeGpu:
        index = handle.index
        if index >= len(self.gpus):
            raise nvml_error("GpuIsLost")
        return self.gpus[index]

    def _check(self, fn: str, handle: Any) -> FakeGpu:
        self.calls[fn] += 1
        gpu = self._gpu(handle)
        if gpu.handle_error == "GpuIsLost":
            raise nvml_error("GpuIsLost")
        if fn in gpu.errors:
            raise nvml_error(gpu.errors[fn])
        return gpu

    def _mig(self, handle: Any) -> FakeMig:
        gpu = self._gpu(handle)
        for mig in gpu.mig or []:
            if mig.mig_index == handle.mig:
                return mig
        raise nvml_error("NotFound")

    def _take(self, key: tuple[int, int], rates: dict[str, float], sample: Any) -> None:
        t = self._clock.get(key, 0.0) + 1.0
        self._clock[key] = t
        counters = self._counters.setdefault(key, {})
        for name, rate in rates.items():
            counters[name] = counters.get(name, 0.0) + rate * 1.0
        address = ctypes.cast(sample, ctypes.c_void_p).value
        assert address is not None, "GPM sample not allocated"
        self._samples[address] = _Sample(key, t, dict(counters))

    # --- the module ------------------------------------------------------------------------

    def module(self) -> ModuleType:
        mod = ModuleType("pynvml")
        for name in dir(_real):
            value = getattr(_real, name)
            if not (name.startswith("nvml") and callable(value)):
                setattr(mod, name, value)
        fake = self

        def handle_fn(fn: str, getter: Any) -> Any:
            def call(handle: Any, *args: Any) -> Any:
                if getattr(handle, "mig", None) is not None:
                    fake.calls[fn] += 1
                    return getter(None, fake._mig(handle), *args)
                gpu = fake._check(fn, handle)
                return getter(gpu, None, *args)

            return call

        def init() -> None:
            fake.calls["nvmlInit"] += 1
            if fake.init_error:
                raise nvml_error(fake.init_error)

        def count() -> int:
            fake.calls["nvmlDeviceGetCount"] += 1
            if fake.count_error:
                raise nvml_error(fake.count_error)
            return len(fake.gpus)

        def handle_by_index(index: int) -> Any:
            fake.calls["nvmlDeviceGetHandleByIndex"] += 1
            if index >= len(fake.gpus):
                raise nvml_error("GpuIsLost")
            error = fake.gpus[index].handle_error
            if error:
                raise nvml_error(error)
            return SimpleNamespace(index=index, mig=None)

        def mem(gpu: FakeGpu | None, mig: FakeMig | None) -> Any:
            src = gpu or mig
            assert src is not None
            return SimpleNamespace(
                used=int(src.mem_used_mib * _MIB), total=int(src.mem_total_mib * _MIB),
                free=int((src.mem_total_mib - src.mem_used_mib) * _MIB),
            )

        def util(gpu: FakeGpu | None, mig: FakeMig | None) -> Any:
            if gpu is None or gpu.mig is not None:
                raise nvml_error("NotSupported")  # NVML has no utilisation under MIG
            return SimpleNamespace(gpu=gpu.util_pct, memory=10)

        def mig_mode(gpu: FakeGpu | None, mig: FakeMig | None) -> Any:
            assert gpu is not None
            on = 1 if gpu.mig is not None else 0
            return [on, on]

        def max_mig(gpu: FakeGpu | None, mig: FakeMig | None) -> int:
            assert gpu is not None
            return 7 if gpu.mig is not None else 0

        def mig_handle(handle: Any, index: int) -> Any:
            fake.calls["nvmlDeviceGetMigDeviceHandleByIndex"] += 1
            gpu = fake._gpu(handle)
            if gpu.mig is None or all(m.mig_index != index for m in gpu.mig):
                raise nvml_error("NotFound")
            return SimpleNamespace(index=handle.index, mig=index)

        def procs(gpu: FakeGpu | None, mig: FakeMig | None) -> list[Any]:
            assert gpu is not None
            return [
                SimpleNamespace(
                    pid=p.pid,
                    usedGpuMemory=int(p.used_mib * _MIB) if p.used_mib is not None else None,
                    gpuInstanceId=p.gpu_instance_id, computeInstanceId=p.compute_instance_id,
                )
                for p in gpu.procs
            ]

        def gpm_support(handle: Any) -> Any:
            fake.calls["nvmlGpmQueryDeviceSupport"] += 1
            gpu = fake._gpu(handle)
            if gpu.gpm_support not in ("yes", "no"):
                raise nvml_error(gpu.gpm_support)
            return SimpleNamespace(version=1, isSupportedDevice=int(gpu.gpm_support == "yes"))

        def sample_alloc() -> Any:
            fake.calls["nvmlGpmSampleAlloc"] += 1
            buffer = (ctypes.c_char * 16)()
            fake._buffers.append(buffer)
            return ctypes.cast(buffer, _real.c_nvmlGpmSample_t)

        def sample_free(sample: Any) -> None:
            fake.calls["nvmlGpmSampleFree"] += 1

        def sample_get(handle: Any, sample: Any) -> Any:
            gpu = fake._check("nvmlGpmSampleGet", handle)
            if gpu.gpm_support != "yes":
                raise nvml_error("NotSupported")
            fake._take((handle.index, -1), gpu.gpm, sample)
            return sample

        def mig_sample_get(handle: Any, gi: int, sample: Any) -> Any:
            gpu = fake._check("nvmlGpmMigSampleGet", handle)
            mig = next((m for m in gpu.mig or [] if m.gpu_instance_id == gi), None)
            if mig is None:
                raise nvml_error("NotFound")
            fake._take((handle.index, gi), mig.gpm, sample)
            return sample

        def metrics_get(request: Any) -> Any:
            fake.calls["nvmlGpmMetricsGet"] += 1
            assert request.version == _real.NVML_GPM_METRICS_GET_VERSION
            first = fake._samples[ctypes.cast(request.sample1, ctypes.c_void_p).value]
            second = fake._samples[ctypes.cast(request.sample2, ctypes.c_void_p).value]
            assert first.key == second.key, "samples of two different devices compared"
            dt = second.t - first.t
            for slot in range(request.numMetrics):
                metric = request.metrics[slot]
                name = _BY_ID.get(metric.metricId)
                if name is None or name not in second.counters or dt <= 0:
                    metric.nvmlReturn = _real.NVML_ERROR_NOT_SUPPORTED
                    continue
                metric.value = (second.counters[name] - first.counters.get(name, 0.0)) / dt
                metric.nvmlReturn = _real.NVML_SUCCESS
            return request

        def driver_version() -> str:
            fake.calls["nvmlSystemGetDriverVersion"] += 1
            return fake.driver

        functions: dict[str, Any] = {
            "nvmlInit": init,
            "nvmlShutdown": lambda: None,
            "nvmlDeviceGetCount": count,
            "nvmlSystemGetDriverVersion": driver_version,
            "nvmlDeviceGetHandleByIndex": handle_by_index,
            "nvmlDeviceGetName": handle_fn(
                "nvmlDeviceGetName", lambda g, m: (g or m).name  # type: ignore[union-attr]
            ),
            "nvmlDeviceGetUUID": handle_fn(
                "nvmlDeviceGetUUID", lambda g, m: (g or m).uuid  # type: ignore[union-attr]
            ),
            "nvmlDeviceGetPciInfo": handle_fn(
                "nvmlDeviceGetPciInfo", lambda g, m: SimpleNamespace(busId=g.bus_id)
            ),
            "nvmlDeviceGetUtilizationRates": handle_fn("nvmlDeviceGetUtilizationRates", util),
            "nvmlDeviceGetMemoryInfo": handle_fn("nvmlDeviceGetMemoryInfo", mem),
            "nvmlDeviceGetPowerUsage": handle_fn(
                "nvmlDeviceGetPowerUsage", lambda g, m: int(g.power_w * 1000)
            ),
            "nvmlDeviceGetEnforcedPowerLimit": handle_fn(
                "nvmlDeviceGetEnforcedPowerLimit", lambda g, m: int(g.cap_w * 1000)
            ),
            "nvmlDeviceGetTemperature": handle_fn(
                "nvmlDeviceGetTemperature", lambda g, m, sensor: g.temp_c
            ),
            "nvmlDeviceGetMigMode": handle_fn("nvmlDeviceGetMigMode", mig_mode),
            "nvmlDeviceGetMaxMigDeviceCount": handle_fn("nvmlDeviceGetMaxMigDeviceCount", max_mig),
            "nvmlDeviceGetMigDeviceHandleByIndex": mig_handle,
            "nvmlDeviceGetGpuInstanceId": handle_fn(
                "nvmlDeviceGetGpuInstanceId", lambda g, m: m.gpu_instance_id
            ),
            "nvmlDeviceGetComputeInstanceId": handle_fn(
                "nvmlDeviceGetComputeInstanceId", lambda g, m: m.compute_instance_id
            ),
            "nvmlDeviceGetComputeRunningProcesses": handle_fn(
                "nvmlDeviceGetComputeRunningProcesses", procs
            ),
            "nvmlDeviceGetCurrentClocksThrottleReasons": handle_fn(
                "nvmlDeviceGetCurrentClocksThrottleReasons", lambda g, m: g.reasons
            ),
            "nvmlDeviceGetCurrentClocksEventReasons": handle_fn(
                "nvmlDeviceGetCurrentClocksEventReasons", lambda g, m: g.reasons
            ),
            "nvmlGpmQueryDeviceSupport": gpm_support,
            "nvmlGpmSampleAlloc": sample_alloc,
            "nvmlGpmSampleFree": sample_free,
            "nvmlGpmSampleGet": sample_get,
            "nvmlGpmMigSampleGet": mig_sample_get,
            "nvmlGpmMetricsGet": metrics_get,
        }
        if self.binding == "old":
            for name in list(functions):
                if name.startswith("nvmlGpm") or name == "nvmlDeviceGetCurrentClocksEventReasons":
                    del functions[name]
            for name in ("c_nvmlGpmMetricsGet_t", "NVML_GPM_METRICS_GET_VERSION"):
                if hasattr(mod, name):
                    delattr(mod, name)
        for name, fn in functions.items():
            setattr(mod, name, fn)
        return mod
