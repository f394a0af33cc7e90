"""NVML collector against a scenario-driven fake pynvml (tests/fakes/pynvml.py).

Covers what the issue lists: GPM supported / not supported / permission denied, throttle-reason
bit masks, MIG on and off, a GPU lost mid-run, NVMLError_Unknown, an old nvidia-ml-py without
the GPM functions; plus the cost rules (static fields once, processes on the enrichment
schedule). None of it has run on a real GPU.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from gpusat_tui.collectors import nvidia_smi_table, nvml
from gpusat_tui.collectors.nvidia_throttle import parse_mask, reason_names
from gpusat_tui.errors import ToolFailed, ToolMissing
from gpusat_tui.model import CardReading, split_reasons
from gpusat_tui.sources.polling.live import LiveSource
from tests.collector_helpers import read_sample, samples_dir
from tests.fakes.pynvml import FakeGpu, FakeMig, FakeNvml, FakeProc

GPM_ALL = {
    "graphics_util": 99.0, "sm_active_pct": 38.0, "sm_occupancy_pct": 21.0,
    "tensor_active_pct": 22.0, "dram_active_pct": 47.0, "fp16_active_pct": 3.0,
    "fp32_active_pct": 11.0, "fp64_active_pct": 0.0,
}
GPM_EXTRAS = {k: v for k, v in GPM_ALL.items() if k != "graphics_util"}


@pytest.fixture
def install(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def put(fake: FakeNvml) -> FakeNvml:
        monkeypatch.setitem(sys.modules, "pynvml", fake.module())
        nvml.reset()
        return fake

    yield put
    nvml.reset()


def reader(**kwargs: Any) -> nvml.NvmlReader:
    return nvml.NvmlReader(**kwargs)


def figures(card: CardReading) -> tuple[Any, ...]:
    return (card.id, card.name, card.util_pct, card.mem_used_mib, card.mem_total_mib,
            card.power_w, card.power_cap_w, card.temp_c, card.uuid, card.bus_id, card.tool)


# --- plain figures and the cost rules -------------------------------------------------------


def test_normal_values(install: Any) -> None:
    install(FakeNvml([FakeGpu(procs=[FakeProc(4242, 100 * 1024.0)])]))
    r = reader()()
    assert r.version == "570.124.06"
    assert [figures(c) for c in r.cards] == [
        ("nvidia:0", "NVIDIA H200", 97.0, 122880.0, 144384.0, 612.5, 700.0, 63.0,
         "GPU-11111111-2222-3333-4444-555555555555", "00000000:18:00.0", "nvml")
    ]
    assert r.cards[0].extras == {"throttle": ""}
    assert [(p.pid, p.card_id, p.mem_used_mib) for p in r.processes] == [
        (4242, "nvidia:0", 102400.0)
    ]


def test_static_fields_read_once_and_refreshed_rarely(install: Any) -> None:
    fake = install(FakeNvml([FakeGpu(), FakeGpu(uuid="GPU-2")]))
    read = reader(static_every=10)
    for _ in range(10):
        read()
    static = ("nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetPciInfo",
              "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetMigMode",
              "nvmlGpmQueryDeviceSupport", "nvmlDeviceGetCount")
    assert {name: fake.calls[name] for name in static} == {
        name: (1 if name == "nvmlDeviceGetCount" else 2) for name in static
    }
    assert fake.calls["nvmlDeviceGetMemoryInfo"] == 20  # dynamic: every poll, every card
    fake.gpus[0].cap_w = 500.0  # nvidia-smi -pl 500
    read()  # the 11th poll rescans
    assert fake.calls["nvmlDeviceGetName"] == 4
    assert read().cards[0].power_cap_w == 500.0


def test_process_list_only_on_the_enrichment_schedule(install: Any) -> None:
    fake = install(FakeNvml([FakeGpu(procs=[FakeProc(11)])]))
    read = reader(enrich_every=5)
    seen = [[p.pid for p in read().processes] for _ in range(3)]
    fake.gpus[0].procs = [FakeProc(11), FakeProc(12)]
    seen += [[p.pid for p in read().processes] for _ in range(3)]
    assert fake.calls["nvmlDeviceGetComputeRunningProcesses"] == 2  # polls 1 and 6
    assert seen == [[11], [11], [11], [11], [11], [11, 12]]


# --- GPM -------------------------------------------------------------------------------------


def test_gpm_figures_come_from_consecutive_polls(install: Any) -> None:
    fake = install(FakeNvml([FakeGpu(gpm=dict(GPM_ALL))]))
    read = reader()
    first = read().cards[0]
    assert not {k for k in first.extras if k.endswith("_active_pct")}  # one sample: no rate yet
    second = read().cards[0]
    assert {k: second.extras[k] for k in GPM_EXTRAS} == GPM_EXTRAS
    # The next figure covers only the last interval, not the whole run since the first sample.
    fake.gpus[0].gpm = {**GPM_ALL, "sm_active_pct": 90.0, "tensor_active_pct": 70.0}
    third = read().cards[0]
    assert (third.extras["sm_active_pct"], third.extras["tensor_active_pct"]) == (90.0, 70.0)
    assert fake.calls["nvmlGpmSampleAlloc"] == 2  # two buffers, allocated once, used in turn
    assert fake.calls["nvmlGpmSampleGet"] == 3 and fake.calls["nvmlGpmMetricsGet"] == 2


def test_gpm_absurd_figure_is_dropped_and_rounding_clamped(install: Any) -> None:
    fake = install(FakeNvml([FakeGpu(gpm={"sm_active_pct": 100.4, "tensor_active_pct": 250.0})]))
    read = reader()
    read()
    extras = read().cards[0].extras
    assert extras["sm_active_pct"] == 100.0 and "tensor_active_pct" not in extras
    del fake


@pytest.mark.parametrize(
    ("support", "words"),
    [
        ("no", "not supported: Hopper and newer only"),
        ("NotSupported", "not supported"),
        ("NoPermission", "no permission"),
        ("FunctionNotFound", "driver too old"),
    ],
)
def test_gpm_unavailable_is_quietly_absent_with_one_note(
    install: Any, support: str, words: str
) -> None:
    install(FakeNvml([FakeGpu(gpm=dict(GPM_ALL), gpm_support=support)]))
    read = reader()
    readings = [read() for _ in range(4)]
    assert all(
        not any(k.endswith("_active_pct") for k in r.cards[0].extras) for r in readings
    )
    notes = [n for r in readings for n in r.notes]
    assert len(notes) == 1 and "GPU0" in notes[0] and words in notes[0], notes
    assert readings[-1].cards[0].util_pct == 97.0  # the card itself is read as before


def test_gpm_sample_refused_by_a_sandbox_is_one_note_and_no_crash(install: Any) -> None:
    gpu = FakeGpu(gpm=dict(GPM_ALL), errors={"nvmlGpmSampleGet": "NoPermission"})
    install(FakeNvml([gpu]))
    read = reader()
    readings = [read() for _ in range(3)]
    notes = [n for r in readings for n in r.notes]
    assert notes == ["nvml: GPM sample of GPU0 refused (no permission: profiling counters "
                     "are restricted here)"]
    assert all("sm_active_pct" not in r.cards[0].extras for r in readings)
    gpu.errors.clear()  # the sandbox lets go: figures resume after one fresh sample
    read()
    assert read().cards[0].extras["sm_active_pct"] == 38.0


def test_old_binding_without_gpm_or_event_reasons(install: Any) -> None:
    fake = install(FakeNvml([FakeGpu(gpm=dict(GPM_ALL), reasons=0x4)], binding="old"))
    read = reader()
    readings = [read() for _ in range(3)]
    assert readings[-1].cards[0].extras == {"throttle": "power-cap"}  # ThrottleReasons fallback
    notes = [n for r in readings for n in r.notes]
    assert len(notes) == 1 and "no GPM functions" in notes[0]
    assert fake.calls["nvmlDeviceGetCurrentClocksThrottleReasons"] == 3


# --- throttle reasons ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mask", "names"),
    [
        (0x0, ""),
        (0x1, "idle"),
        (0x4, "power-cap"),
        (0x44, "power-cap,hw-thermal"),
        (0x8 | 0x80, "hw-slowdown,hw-power-brake"),
        (0x10 | 0x20, "sync-boost,sw-thermal"),
        (0x2, "app-clocks"),
        (0x100, ""),  # display clock setting: says nothing about training
        (0xFFF, "idle,app-clocks,power-cap,hw-slowdown,sync-boost,sw-thermal,hw-thermal,"
                "hw-power-brake"),
    ],
)
def test_throttle_bit_masks(install: Any, mask: int, names: str) -> None:
    install(FakeNvml([FakeGpu(reasons=mask)]))
    assert reader()().cards[0].extras["throttle"] == names
    assert reason_names(mask) == names
    assert split_reasons(names) == ([] if not names else names.split(","))


def test_throttle_not_supported_is_absent_not_empty(install: Any) -> None:
    install(FakeNvml([FakeGpu(errors={"nvmlDeviceGetCurrentClocksEventReasons": "NotSupported"})]))
    assert "throttle" not in reader()().cards[0].extras


@pytest.mark.parametrize(
    ("cell", "mask"),
    [("0x0000000000000004", 4), ("0x0000000000000044", 0x44), ("[N/A]", None),
     ("[Not Supported]", None), ("12", 12), ("0xZZ", None), ("", None), (None, None)],
)
def test_parse_mask(cell: str | None, mask: int | None) -> None:
    assert parse_mask(cell) == mask


# --- MIG -------------------------------------------------------------------------------------


def a30_mig() -> FakeGpu:
    """The layout of samples/smi/nvidia/nvidia-smi-A30-MIG-1x2g.12gb-2x1g.6gb-535.183.01.txt."""
    return FakeGpu(
        name="NVIDIA A30", uuid="GPU-a30", bus_id="00000000:0B:00.0", mem_used_mib=50.0,
        mem_total_mib=24576.0, power_w=32.0, cap_w=165.0, temp_c=47, gpm_support="no",
        mig=[
            FakeMig(0, 2, name="NVIDIA A30 MIG 2g.12gb", mem_used_mib=25.0, mem_total_mib=11968.0),
            FakeMig(1, 3, name="NVIDIA A30 MIG 1g.6gb", mem_used_mib=12.0, mem_total_mib=5952.0),
            FakeMig(2, 4, name="NVIDIA A30 MIG 1g.6gb", mem_used_mib=12.0, mem_total_mib=5952.0),
        ],
    )


def test_mig_instances_are_cards_and_the_whole_gpu_stays(install: Any) -> None:
    gpu = a30_mig()
    gpu.procs = [FakeProc(501, 20.0, gpu_instance_id=3, compute_instance_id=0)]
    install(FakeNvml([gpu]))
    r = reader()()
    assert [(c.id, c.util_pct, c.mem_used_mib, c.mem_total_mib, c.power_w, c.temp_c)
            for c in r.cards] == [
        ("nvidia:0", None, 50.0, 24576.0, 32.0, 47.0),
        ("nvidia:0/mig0", None, 25.0, 11968.0, None, None),
        ("nvidia:0/mig1", None, 12.0, 5952.0, None, None),
        ("nvidia:0/mig2", None, 12.0, 5952.0, None, None),
    ]
    assert r.cards[0].extras["mig"] == "Enabled" and r.cards[0].extras["mig_devices"] == 3.0
    assert [(c.extras["mig_gi"], c.name) for c in r.cards[1:]] == [
        (2.0, "NVIDIA A30 MIG 2g.12gb"), (3.0, "NVIDIA A30 MIG 1g.6gb"),
        (4.0, "NVIDIA A30 MIG 1g.6gb"),
    ]
    assert r.cards[2].uuid.startswith("MIG-")  # what CUDA_VISIBLE_DEVICES names
    assert [(p.pid, p.card_id) for p in r.processes] == [(501, "nvidia:0/mig1")]


def test_mig_parses_the_same_way_as_the_nvidia_smi_table_sample(install: Any) -> None:
    install(FakeNvml([a30_mig()]))
    via_nvml = reader()().cards
    table = nvidia_smi_table.parse_table(
        read_sample(samples_dir("nvidia"), "nvidia-smi-A30-MIG-1x2g.12gb-2x1g.6gb-535.183.01.txt")
    ).cards

    def same(c: CardReading) -> tuple[Any, ...]:
        return (c.id, c.instance, c.util_pct, c.mem_used_mib, c.mem_total_mib, c.power_w,
                c.power_cap_w, c.temp_c, c.bus_id, c.extras.get("mig_gi"),
                c.extras.get("mig_ci"), c.extras.get("mig_devices"))

    assert [same(c) for c in via_nvml] == [same(c) for c in table]


def test_mig_instance_utilisation_and_sm_activity_from_gpm(install: Any) -> None:
    gpu = a30_mig()
    gpu.gpm_support = "yes"
    gpu.mig[1].gpm = dict(GPM_ALL)  # type: ignore[index]
    fake = install(FakeNvml([gpu]))
    read = reader()
    read()
    cards = {c.id: c for c in read().cards}
    assert cards["nvidia:0/mig1"].util_pct == 99.0
    assert cards["nvidia:0/mig1"].extras["sm_active_pct"] == 38.0
    assert cards["nvidia:0/mig0"].util_pct == 0.0 or cards["nvidia:0/mig0"].util_pct is None
    assert fake.calls["nvmlGpmMigSampleGet"] == 6  # 3 instances x 2 polls


def test_mig_off_keeps_the_old_ids(install: Any) -> None:
    install(FakeNvml([FakeGpu(), FakeGpu(uuid="GPU-2")]))
    r = reader()()
    assert [(c.id, c.instance) for c in r.cards] == [("nvidia:0", None), ("nvidia:1", None)]
    assert all("mig" not in c.extras for c in r.cards)


def test_mig_layout_change_shows_after_the_static_refresh(install: Any) -> None:
    fake = install(FakeNvml([a30_mig()]))
    read = reader(static_every=3)
    assert len(read().cards) == 4
    fake.gpus[0].mig = fake.gpus[0].mig[:1]
    assert len(read().cards) == 4 and len(read().cards) == 4
    assert [c.id for c in read().cards] == ["nvidia:0", "nvidia:0/mig0"]


# --- failures --------------------------------------------------------------------------------


def test_gpu_lost_mid_run_drops_that_card_keeps_the_others_and_rescans(install: Any) -> None:
    fake = install(FakeNvml([FakeGpu(), FakeGpu(uuid="GPU-2", gpm=dict(GPM_ALL))]))
    read = reader()
    assert [c.id for c in read().cards] == ["nvidia:0", "nvidia:1"]
    fake.gpus[1].handle_error = "GpuIsLost"  # fell off the bus
    lost = read()
    assert [c.id for c in lost.cards] == ["nvidia:0"]
    assert len(lost.notes) == 1 and "GPU lost (GPU1" in lost.notes[0]
    count_before = fake.calls["nvmlDeviceGetCount"]
    again = read()  # rescans: GPU1's handle fails now, said once
    assert fake.calls["nvmlDeviceGetCount"] == count_before + 1
    assert [c.id for c in again.cards] == ["nvidia:0"]
    assert [n for n in again.notes if "GPU1" in n] == ["nvml skipped GPU1: GPU is lost"]
    assert read().notes == []


def test_the_only_gpu_lost_is_an_error(install: Any) -> None:
    fake = install(FakeNvml([FakeGpu()]))
    read = reader()
    read()
    fake.gpus[0].handle_error = "GpuIsLost"
    with pytest.raises(ToolFailed, match="GPU0"):
        read()
    with pytest.raises(ToolFailed, match="GPU0"):
        read()


def test_every_handle_failing_is_an_error(install: Any) -> None:
    install(FakeNvml([FakeGpu(handle_error="GpuIsLost")]))
    with pytest.raises(ToolFailed, match="GPU0"):
        reader()()


def test_unknown_error_on_a_field_is_no_figure(install: Any) -> None:
    install(FakeNvml([FakeGpu(errors={"nvmlDeviceGetPowerUsage": "Unknown",
                                      "nvmlDeviceGetTemperature": "Unknown"})]))
    (card,) = reader()().cards
    assert (card.power_w, card.temp_c, card.util_pct) == (None, None, 97.0)


def test_unknown_error_counting_devices_is_a_failure(install: Any) -> None:
    fake = install(FakeNvml([FakeGpu()]))
    fake.count_error = "Unknown"
    with pytest.raises(ToolFailed, match="cannot count devices"):
        reader()()


def test_not_supported_fields_are_none(install: Any) -> None:
    gpu = FakeGpu(errors={name: "NotSupported" for name in (
        "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetTemperature")},
        procs=[FakeProc(7, None)])
    install(FakeNvml([gpu]))
    r = reader()()
    assert figures(r.cards[0])[2:8] == (None, 122880.0, 144384.0, None, None, None)
    assert [(p.pid, p.mem_used_mib) for p in r.processes] == [(7, None)]


def test_library_not_found_is_tool_missing(install: Any) -> None:
    install(FakeNvml([FakeGpu()], init_error="LibraryNotFound"))
    with pytest.raises(ToolMissing, match="NVML library did not load"):
        nvml.read_nvml()


def test_package_missing_is_tool_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    nvml.reset()
    with pytest.raises(ToolMissing, match="nvidia-ml-py"):
        nvml.read_nvml()
    nvml.reset()


def test_real_library_absent_here_is_tool_missing_or_reads() -> None:
    """On this CI machine (no NVIDIA driver) the real pynvml must give ToolMissing, not crash."""
    nvml.reset()
    try:
        reading = nvml.read_nvml()
    except ToolMissing as exc:
        assert "nvml" in str(exc)
    else:  # a machine with a GPU: real cards with real figures
        assert reading.cards and all(c.tool == "nvml" for c in reading.cards)
    finally:
        nvml.reset()


def test_init_cached(install: Any) -> None:
    fake = install(FakeNvml([FakeGpu()]))
    nvml.read_nvml()
    nvml.read_nvml()
    reader()()
    assert fake.calls["nvmlInit"] == 1


def test_spec() -> None:
    (spec,) = nvml.SPECS
    assert (spec.tool, spec.vendor, spec.group, spec.priority, spec.names) == (
        "nvml", "nvidia", "nvidia", 0, ()
    )
    assert spec.reader is nvml.read_nvml and spec.new_reader is nvml.NvmlReader


# --- through the live source -----------------------------------------------------------------


def test_live_source_gets_its_own_reader_primed_by_discovery(install: Any) -> None:
    fake = install(FakeNvml([FakeGpu(gpm=dict(GPM_ALL), gpm_support="yes"),
                             FakeGpu(uuid="GPU-old", gpm_support="no")]))
    (spec,) = nvml.SPECS
    src = LiveSource(specs=[spec], process_monitor=None, enrich_every=3)
    src._monitor_loaded = True  # no process monitor in this test

    async def run() -> list[Any]:
        frames = [await src.poll_once() for _ in range(4)]
        await src.aclose()
        return frames

    frames = asyncio.run(run())
    # Discovery took the first GPM sample: the very first frame has SM activity.
    assert frames[0].cards[0].extras["sm_active_pct"] == 38.0
    assert "sm_active_pct" not in frames[0].cards[1].extras
    gpm_notes = [n for f in frames for n in f.notes if "GPM" in n]
    assert len(gpm_notes) == 1 and "GPU1" in gpm_notes[0], gpm_notes
    # Probe + 4 polls = 5 reads; enrich_every=3: process lists on reads 1 and 4.
    assert fake.calls["nvmlDeviceGetComputeRunningProcesses"] == 2 * 2


def test_closing_the_live_source_frees_the_gpm_buffers(install: Any) -> None:
    fake = install(FakeNvml([FakeGpu(gpm=dict(GPM_ALL))]))
    (spec,) = nvml.SPECS
    src = LiveSource(specs=[spec], process_monitor=None)
    src._monitor_loaded = True

    async def run() -> None:
        await src.poll_once()
        await src.aclose()

    asyncio.run(run())
    assert fake.calls["nvmlGpmSampleAlloc"] == 2 and fake.calls["nvmlGpmSampleFree"] == 2


def test_close_never_waits_for_a_read_in_flight(install: Any) -> None:
    install(FakeNvml([FakeGpu()]))
    read = reader()
    read()
    with read._lock:  # a read stuck in its thread
        assert read.close() is False
    assert read.close() is True
