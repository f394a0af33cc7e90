"""NVIDIA through NVML (the ``nvidia-ml-py`` package, imported as ``pynvml``).

NVML is read in-process: no subprocess per poll, so it is the cheapest NVIDIA reader and comes
first in the "nvidia" group. When the library cannot load (no driver, a container without
``libnvidia-ml.so``) the reader raises `ToolMissing` and the group falls back to nvidia-smi
quietly. Every per-field call is guarded: a field a card does not support (power on some
consumer cards, utilisation under MIG) is ``None``, never an exception.

What a poll costs (see ``benchmarks/bench_nvml.py``): the fields that change (utilisation,
memory, power, temperature, clock-event reasons, GPM) are read every poll; the static ones
(name, UUID, bus id, power cap, MIG layout, GPM support) once and again every
`STATIC_REFRESH_POLLS` polls or after a GPU was lost; the process list, NVML's slowest call,
on one poll in ``enrich_every`` (the live source's setting), its last answer standing in.

MIG: each MIG instance is a card of its own (``nvidia:0/mig1``: MIG device 1 of GPU 0) with its
memory and, where GPM answers, its utilisation and SM activity; the whole-GPU card stays for
power, temperature and throttling. The static side lives in `nvml_devices`, the GPM sampling in
`nvml_gpm`. Untested on real hardware (MIG, GPM, throttle reasons):
built from nvidia-ml-py's ``pynvml.py`` and tested against a fake pynvml.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

from gpusat_tui.collectors import nvml_gpm
from gpusat_tui.collectors.base import ToolReading, ToolSpec
from gpusat_tui.collectors.nvidia_throttle import reason_names
from gpusat_tui.collectors.nvml_devices import (
    Device,
    GpuLost,
    Instance,
    close_gpm,
    get_field,
    gpm_refusal,
    is_lost,
    read_device,
    text,
)
from gpusat_tui.errors import ToolFailed, ToolMissing
from gpusat_tui.model import CardProcess, CardReading

_lock = threading.Lock()
#: The initialised pynvml module, once nvmlInit succeeded (init is not free: do it once).
_nvml: ModuleType | None = None

_MIB = 1024 * 1024
#: Static fields (name, UUID, bus id, power cap, MIG layout) are read again after this many
#: polls: a cap changed with ``nvidia-smi -pl`` or a new MIG layout shows within a minute.
STATIC_REFRESH_POLLS = 60
#: Process lists are read on one poll in this many unless the source says otherwise.
DEFAULT_ENRICH_EVERY = 5
#: NVML's "not a MIG process" instance id.
_NO_INSTANCE = 0xFFFFFFFF


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
        module: ModuleType = pynvml
        _nvml = module
        return module


def reset() -> None:
    """Forget the initialised library and the default reader (tests; a reloaded driver)."""
    global _nvml, _default_reader
    with _lock:
        _nvml = None
        _default_reader = None


class NvmlReader:
    """Reads every NVIDIA device through NVML; one instance per live source (it keeps the
    static fields, the GPM samples of the previous poll and the last process list).

    ``enrich_every``: the process list is read on one poll in this many.
    """

    def __init__(
        self,
        enrich_every: int = DEFAULT_ENRICH_EVERY,
        static_every: int = STATIC_REFRESH_POLLS,
        load: Callable[[], ModuleType] = _load,
    ) -> None:
        self.enrich_every = max(1, int(enrich_every))
        self.static_every = max(1, int(static_every))
        self._load = load
        self._devices: list[Device] | None = None
        self._scan_notes: list[str] = []
        #: Devices the last scan could not get a handle for.
        self._skipped: list[str] = []
        self._polls_since_scan = 0
        self._process_wait = 0
        self._processes: list[CardProcess] = []
        self._version: str | None = None
        #: Notes already said this session: each is said once.
        self._said: set[str] = set()
        self._lock = threading.Lock()

    # --- static part -----------------------------------------------------------------------

    def _scan(self, nvml: ModuleType) -> None:
        """Enumerate devices and read their static fields (and MIG layout, GPM support)."""
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as exc:  # loaded but broken (driver gone): a failure, not absence
            raise ToolFailed(f"nvml: cannot count devices ({exc})") from exc
        old = {d.uuid: d for d in self._devices or [] if d.uuid}
        self._version = text(get_field(nvml, "nvmlSystemGetDriverVersion"))
        devices: list[Device] = []
        notes: list[str] = []
        gpm_missing: list[str] = []
        skipped: list[str] = []
        for index in range(count):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                device = read_device(nvml, index, handle)
            except (nvml.NVMLError, GpuLost) as exc:
                skipped.append(f"GPU{index}: {exc}")
                continue
            previous = old.pop(device.uuid, None) if device.uuid else None
            self._attach_gpm(nvml, device, previous, gpm_missing, notes)
            devices.append(device)
        for gone in old.values():
            close_gpm(gone)
        if gpm_missing:
            notes.append(
                "nvml: no GPM counters (SM/tensor activity) on "
                + "; ".join(gpm_missing)
                + ": verdicts use GPU-Util, a duty cycle"
            )
        notes.extend(f"nvml skipped {what}" for what in skipped)
        self._devices = devices
        self._skipped = skipped
        self._scan_notes = notes
        self._polls_since_scan = 0

    def _attach_gpm(
        self, nvml: ModuleType, device: Device, previous: Device | None, missing: list[str],
        notes: list[str],
    ) -> None:
        """GPM samplers for the device and its MIG instances, kept across rescans."""
        label = f"GPU{device.index}"
        if not nvml_gpm.binding_has_gpm(nvml):
            notes.append(
                "nvml: this nvidia-ml-py has no GPM functions (SM/tensor activity); "
                "nvidia-ml-py 12.535 or newer reads them on Hopper and newer GPUs"
            )
            return
        same_layout = previous is not None and [
            (i.mig_index, i.gpu_instance_id) for i in previous.instances
        ] == [(i.mig_index, i.gpu_instance_id) for i in device.instances]
        if previous is not None and previous.gpm is not None and same_layout:
            device.gpm = previous.gpm
            for new, old in zip(device.instances, previous.instances, strict=True):
                new.gpm = old.gpm
            return
        if previous is not None:
            close_gpm(previous)
        try:
            if not nvml_gpm.device_supports_gpm(nvml, device.handle):
                missing.append(f"{label} (not supported: Hopper and newer only)")
                return
            if device.mig:
                for inst in device.instances:
                    if inst.gpu_instance_id is not None and hasattr(nvml, "nvmlGpmMigSampleGet"):
                        inst.gpm = nvml_gpm.GpmSampler(nvml, _mig_take(nvml, device, inst))
            device.gpm = nvml_gpm.GpmSampler(nvml, _gpu_take(nvml, device.handle))
        except nvml.NVMLError as exc:
            close_gpm(device)
            missing.append(f"{label} ({gpm_refusal(nvml, exc)})")

    # --- per poll ----------------------------------------------------------------------------

    def __call__(self) -> ToolReading:
        with self._lock:  # a timed-out poll's thread may still be running
            return self._read()

    def _read(self) -> ToolReading:
        nvml = self._load()
        if self._devices is None or self._polls_since_scan >= self.static_every:
            self._scan(nvml)
        assert self._devices is not None
        self._polls_since_scan += 1
        reading = ToolReading(version=self._version)
        notes = list(self._scan_notes)
        self._scan_notes = []
        lost: list[str] = []
        for device in self._devices:
            try:
                reading.cards.extend(self._dynamic(nvml, device, notes))
            except GpuLost as exc:
                lost.append(f"GPU{device.index}: {exc}")
        if lost:
            notes.extend(f"nvml: GPU lost ({what}); reading the devices again" for what in lost)
            self._devices = None  # rescan next poll: indices may have moved
            self._process_wait = 0
            if not reading.cards:
                raise ToolFailed("nvml: no device could be read (" + "; ".join(lost) + ")")
        if self._process_wait <= 0:
            self._processes = self._read_processes(nvml)
            self._process_wait = self.enrich_every - 1
        else:
            self._process_wait -= 1
        live_ids = {c.id for c in reading.cards}
        reading.processes = [p for p in self._processes if p.card_id in live_ids]
        if not reading.cards and self._skipped:
            raise ToolFailed("nvml: no device could be read (" + "; ".join(self._skipped) + ")")
        reading.notes = [n for n in notes if self._first_time(n)]
        return reading

    def _dynamic(self, nvml: ModuleType, device: Device, notes: list[str]) -> list[CardReading]:
        handle = device.handle
        util = get_field(nvml, "nvmlDeviceGetUtilizationRates", handle)
        mem = get_field(nvml, "nvmlDeviceGetMemoryInfo", handle)
        power_mw = get_field(nvml, "nvmlDeviceGetPowerUsage", handle)
        sensor = getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
        temp = get_field(nvml, "nvmlDeviceGetTemperature", handle, sensor)
        extras: dict[str, float | str | None] = {}
        reasons = get_field(nvml, "nvmlDeviceGetCurrentClocksEventReasons", handle)
        if reasons is None and not hasattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons"):
            reasons = get_field(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", handle)
        if isinstance(reasons, int):
            extras["throttle"] = reason_names(reasons)
        if device.mig:
            extras["mig"] = "Enabled"
            extras["mig_devices"] = float(len(device.instances))
        extras.update(self._gpm(nvml, device.gpm, f"GPU{device.index}", notes))
        card = CardReading(
            vendor="nvidia",
            index=device.index,
            name=device.name,
            uuid=device.uuid,
            bus_id=device.bus_id,
            # Under MIG the whole-GPU utilisation is NotSupported: None, not 0.
            util_pct=getattr(util, "gpu", None) if util is not None else None,
            mem_used_mib=mem.used / _MIB if mem is not None else None,
            mem_total_mib=mem.total / _MIB if mem is not None else None,
            power_w=power_mw / 1000.0 if power_mw is not None else None,
            power_cap_w=device.cap_w,
            temp_c=temp,
            extras=extras,
            tool="nvml",
        )
        cards = [card]
        for inst in device.instances:
            cards.append(self._instance_card(nvml, device, inst, notes))
        return cards

    def _instance_card(
        self, nvml: ModuleType, device: Device, inst: Instance, notes: list[str]
    ) -> CardReading:
        mem = get_field(nvml, "nvmlDeviceGetMemoryInfo", inst.handle)
        label = f"GPU{device.index}/mig{inst.mig_index}"
        figures = self._gpm_values(nvml, inst.gpm, label, notes)
        extras: dict[str, float | str | None] = nvml_gpm.as_extras(figures)
        if inst.gpu_instance_id is not None:
            extras["mig_gi"] = float(inst.gpu_instance_id)
        if inst.compute_instance_id is not None:
            extras["mig_ci"] = float(inst.compute_instance_id)
        return CardReading(
            vendor="nvidia",
            index=device.index,
            instance=f"mig{inst.mig_index}",
            name=inst.name,
            uuid=inst.uuid,
            bus_id=device.bus_id,
            # NVML gives no per-instance utilisation; GPM's duty cycle stands in where it answers.
            util_pct=figures.get(nvml_gpm.GRAPHICS_UTIL),
            mem_used_mib=mem.used / _MIB if mem is not None else None,
            mem_total_mib=mem.total / _MIB if mem is not None else None,
            extras=extras,
            tool="nvml",
        )

    def _gpm(
        self, nvml: ModuleType, sampler: nvml_gpm.GpmSampler | None, label: str,
        notes: list[str],
    ) -> dict[str, float | str | None]:
        return nvml_gpm.as_extras(self._gpm_values(nvml, sampler, label, notes))

    def _gpm_values(
        self, nvml: ModuleType, sampler: nvml_gpm.GpmSampler | None, label: str,
        notes: list[str],
    ) -> dict[str, float]:
        if sampler is None:
            return {}
        try:
            return sampler.read()
        except nvml.NVMLError as exc:
            if is_lost(nvml, exc):
                raise GpuLost(f"GPM sample: {exc}") from exc
            notes.append(f"nvml: GPM sample of {label} refused ({gpm_refusal(nvml, exc)})")
            return {}

    def _read_processes(self, nvml: ModuleType) -> list[CardProcess]:
        processes: list[CardProcess] = []
        for device in self._devices or []:
            by_gi = {
                i.gpu_instance_id: i for i in device.instances if i.gpu_instance_id is not None
            }
            try:
                listed = get_field(nvml, "nvmlDeviceGetComputeRunningProcesses", device.handle)
            except GpuLost:
                continue
            parent_id = f"nvidia:{device.index}"
            for proc in listed or []:
                used = getattr(proc, "usedGpuMemory", None)
                gi = getattr(proc, "gpuInstanceId", _NO_INSTANCE)
                inst = by_gi.get(gi) if gi != _NO_INSTANCE else None
                processes.append(
                    CardProcess(
                        pid=int(proc.pid),
                        card_id=f"{parent_id}/mig{inst.mig_index}" if inst else parent_id,
                        # usedGpuMemory is None when the driver cannot say (WDDM, some MIG).
                        mem_used_mib=used / _MIB if isinstance(used, int) else None,
                    )
                )
        return processes

    # --- notes -------------------------------------------------------------------------------

    def _first_time(self, note: str) -> bool:
        if note in self._said:
            return False
        self._said.add(note)
        return True

    def close(self) -> bool:
        """Free the GPM sample buffers. Never waits: a read still running in its thread (a
        wedged driver) keeps them, and False says so."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            for device in self._devices or []:
                close_gpm(device)
            self._devices = None
            return True
        finally:
            self._lock.release()


def _gpu_take(nvml: ModuleType, handle: Any) -> Callable[[Any], Any]:
    def take(sample: Any) -> Any:
        return nvml.nvmlGpmSampleGet(handle, sample)

    return take


def _mig_take(nvml: ModuleType, device: Device, inst: Instance) -> Callable[[Any], Any]:
    def take(sample: Any) -> Any:
        return nvml.nvmlGpmMigSampleGet(device.handle, inst.gpu_instance_id, sample)

    return take


_default_reader: NvmlReader | None = None


def read_nvml() -> ToolReading:
    """Read every NVIDIA device through NVML with the module's default reader. Raises
    ToolMissing when NVML is absent, ToolFailed when no device could be read.

    A device whose handle cannot be had (GPU fallen off the bus) is skipped, like nvidia-smi
    does; the others are still read.
    """
    global _default_reader
    with _lock:
        if _default_reader is None:
            _default_reader = NvmlReader()
        reader = _default_reader
    return reader()


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool="nvml",
        vendor="nvidia",
        names=(),
        group="nvidia",
        priority=0,
        reader=read_nvml,
        new_reader=NvmlReader,
    ),
)
