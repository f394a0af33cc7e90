"""NVIDIA nvidia-smi parsers on every captured sample (NVML: test_collectors_nvml.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gpusat_tui.collectors import nvidia_smi, nvidia_smi_table
from gpusat_tui.collectors.base import resolve_process_cards
from gpusat_tui.errors import ParseError
from tests.collector_helpers import (
    card_figures,
    process_rows,
    sample_reader,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import nvidia_smi as fake
from tests.fakes.tool import Step

sample = sample_reader("nvidia")

Row = tuple[Any, ...]


# --- default table --------------------------------------------------------------------------

V100 = "Tesla V100-PCIE..."
GPU1_NOTE = "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error"


def test_table_8xv100_old_79col_mem_full_idle() -> None:
    r = nvidia_smi_table.parse_table(
        sample("nvidia-smi-8xV100-PCIE-470.129.06-procs-mem-full-idle.txt"))
    assert r.version == "470.129.06"
    assert card_figures(r.cards) == [
        (0, V100, 0.0, 0.0, 32510.0, 25.0, 250.0, 30.0),
        (1, V100, 0.0, 0.0, 32510.0, 25.0, 250.0, 29.0),
        (2, V100, 0.0, 27068.0, 32510.0, 35.0, 250.0, 31.0),
        (3, V100, 0.0, 0.0, 32510.0, 23.0, 250.0, 29.0),
        (4, V100, 0.0, 0.0, 32510.0, 25.0, 250.0, 29.0),
        (5, V100, 0.0, 32323.0, 32510.0, 35.0, 250.0, 32.0),
        (6, V100, 0.0, 2165.0, 32510.0, 35.0, 250.0, 31.0),
        (7, V100, 0.0, 0.0, 32510.0, 24.0, 250.0, 30.0),
    ]
    assert [c.bus_id for c in r.cards][:2] == ["00000000:1B:00.0", "00000000:1C:00.0"]
    assert r.cards[5].mem_pct == pytest.approx(100 * 32323 / 32510)
    assert all(c.tool == "nvidia-smi" and c.vendor == "nvidia" and c.extras == {} for c in r.cards)
    assert process_rows(r.processes) == [
        (88420, "nvidia:2", "python", 27064.0),
        (230331, "nvidia:5", "python", 32319.0),
        (618979, "nvidia:6", "python", 2161.0),
    ]


def test_table_kmd_header_gpu1_missing_with_stderr_line() -> None:
    r = nvidia_smi_table.parse_table(
        sample("nvidia-smi-4xRTXPRO6000-610.57.04-KMD-UMD-header-GPU1-UnknownError-gap.txt")
    )
    name = "NVIDIA RTX PRO 6000 Blac..."
    assert r.version == "610.57.04"
    assert card_figures(r.cards) == [
        (0, name, 100.0, 88450.0, 97887.0, 299.0, 300.0, 87.0),
        (2, name, 100.0, 88450.0, 97887.0, 298.0, 300.0, 86.0),
        (3, name, 0.0, 10.0, 97887.0, 6.0, 300.0, 33.0),
    ]
    assert [c.bus_id for c in r.cards] == [
        "00000000:16:00.0", "00000000:AC:00.0", "00000000:CA:00.0"
    ]
    assert process_rows(r.processes) == [
        (6194, "nvidia:0", "VLLM::Worker_TP1", 88438.0),
        (6193, "nvidia:2", "VLLM::Worker_TP0", 88438.0),
    ]
    assert r.notes == [GPU1_NOTE]


MIG_2G = ("mig0", 2.0, 25.0, 11968.0, 28.0)
MIG_1G = (12.0, 5952.0, 14.0)


@pytest.mark.parametrize(
    ("name", "version", "power", "instances"),
    [
        ("nvidia-smi-A30-MIG-1x2g.12gb-2x1g.6gb-535.183.01.txt", "535.183.01", 32.0,
         [MIG_2G, ("mig1", 3.0, *MIG_1G), ("mig2", 4.0, *MIG_1G)]),
        ("nvidia-smi-A30-MIG-4x1g.6gb-535.274.02.txt", "535.274.02", 78.0,
         [(f"mig{n}", gi, *MIG_1G) for n, gi in enumerate((3.0, 4.0, 5.0, 6.0))]),
    ],
)
def test_table_mig_instances_are_cards_whole_gpu_util_na(
    name: str, version: str, power: float, instances: list[tuple[Any, ...]]
) -> None:
    r = nvidia_smi_table.parse_table(sample(name))
    assert r.version == version
    gpu, *migs = r.cards
    assert card_figures([gpu]) == [(0, "NVIDIA A30", None, 50.0, 24576.0, power, 165.0, 47.0)]
    assert gpu.id == "nvidia:0"
    assert gpu.extras == {"mig": "Enabled", "mig_devices": float(len(instances))}
    assert [
        (c.instance, c.extras["mig_gi"], c.mem_used_mib, c.mem_total_mib, c.extras["sm_count"])
        for c in migs
    ] == instances
    assert [c.id for c in migs] == [f"nvidia:0/{i[0]}" for i in instances]
    # The whole GPU keeps power and temperature; an instance has only its memory.
    assert all((c.util_pct, c.power_w, c.temp_c, c.bus_id) == (None, None, None, gpu.bus_id)
               for c in migs)
    assert r.processes == []


def test_table_mig_process_goes_to_its_gpu_instance() -> None:
    rows = (
        "|    0    3    0      41234      C   python" + " " * 37 + "1180MiB |\n"
        "|    0  N/A  N/A      41235      C   python" + " " * 38 + "200MiB |"
    )
    text = sample("nvidia-smi-A30-MIG-1x2g.12gb-2x1g.6gb-535.183.01.txt").replace(
        "|  No running processes found" + " " * 59 + "|", rows
    )
    r = nvidia_smi_table.parse_table(text)
    assert process_rows(r.processes) == [
        (41234, "nvidia:0/mig1", "python", 1180.0), (41235, "nvidia:0", "python", 200.0)
    ]


def test_table_59x_new_border_truncated() -> None:
    r = nvidia_smi_table.parse_table(
        sample("nvidia-smi-RTX2060-595.71.05-new-border-truncated.txt"))
    assert r.version == "595.71.05"
    assert card_figures(r.cards) == [
        (0, "NVIDIA GeForce RTX 2060", 7.0, 712.0, 6144.0, 65.0, 170.0, 53.0)
    ]
    assert r.cards[0].bus_id == "00000000:07:00.0"
    assert r.processes == []


def test_table_err_power_fragment() -> None:
    r = nvidia_smi_table.parse_table(sample("nvidia-smi-V100-ERR-power-fragment-truncated.txt"))
    assert r.version is None
    assert card_figures(r.cards) == [(1, V100, 0.0, 593.0, 16160.0, None, 250.0, 29.0)]
    assert r.cards[0].bus_id == "00008ED0:00:00.0"


@pytest.mark.parametrize(
    "text",
    ["", "garbage\nmore garbage\n", "Failed to initialize NVML: Driver/library version mismatch\n",
     "+-----+\n| GPU  Name |\n", "|   0  Tesla V100  On   | 00000000:1B:00.0 Off |"],
)
def test_table_garbage_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        nvidia_smi_table.parse_table(text)


def test_table_no_devices_is_empty_not_error() -> None:
    r = nvidia_smi_table.parse_table("No devices were found\n")
    assert r.cards == [] and r.notes == ["nvidia-smi: No devices were found"]


def test_table_truncated_mid_block_keeps_what_it_saw() -> None:
    text = sample("nvidia-smi-8xV100-PCIE-470.129.06-procs-mem-full-idle.txt")
    cut = "\n".join(text.splitlines()[:13])  # GPU 0 complete, GPU 1 header line only
    r = nvidia_smi_table.parse_table(cut)
    assert card_figures(r.cards) == [
        (0, V100, 0.0, 0.0, 32510.0, 25.0, 250.0, 30.0),
        (1, V100, None, None, None, None, None, None),
    ]


# --- csv queries ---------------------------------------------------------------------------

H200 = [
    ("GPU-a44622e3-2296-6285-0a86-84d0f6c67900", 130013.0, 100.0),
    ("GPU-4f31bb83-f8dc-d0af-029e-bc4356e6afeb", 130053.0, 100.0),
    ("GPU-4e9e74b7-4977-f04d-3af3-ccfe5f570e90", 105851.0, 100.0),
    ("GPU-02dbe542-8a6f-11a4-7c2a-486b7d4e9092", 129993.0, 100.0),
    ("GPU-cb449822-5571-be90-8303-e7558da3ea66", 106091.0, 100.0),
    ("GPU-8e137fa6-c3d9-6980-7733-0d8df296756e", 105851.0, 100.0),
    ("GPU-d9337494-6060-1440-039f-4654245b5764", 106139.0, 100.0),
    ("GPU-28780eb0-24d5-1f13-59b8-ae5c23617a72", 58071.0, 0.0),
]


def test_query_gpu_header_with_units_8xh200() -> None:
    r = nvidia_smi.parse_query_gpu(sample("query-gpu-csv-8xH200-uuid-mem-util-100pct.txt"))
    assert [(c.index, c.uuid, c.mem_used_mib, c.util_pct) for c in r.cards] == [
        (i, uuid, used, util) for i, (uuid, used, util) in enumerate(H200)
    ]
    assert {c.mem_total_mib for c in r.cards} == {143771.0}
    assert {(c.name, c.power_w, c.power_cap_w, c.temp_c) for c in r.cards} == {
        (None, None, None, None)
    }


def test_query_gpu_not_supported_noheader() -> None:
    fields = (
        "name", "utilization.gpu", "utilization.memory", "temperature.gpu", "power.draw",
        "power.limit", "fan.speed", "pstate", "clocks.current.graphics",
        "clocks.current.memory", "power.max_limit", "power.default_limit",
    )
    r = nvidia_smi.parse_query_gpu(
        sample("query-gpu-csv-noheader-GTX770-NotSupported.txt"), fields
    )
    assert card_figures(r.cards) == [
        (0, "GeForce GTX 770", None, None, None, None, None, 52.0)
    ]


def test_query_gpu_nounits_header_keeps_brackets_unknown_error() -> None:
    r = nvidia_smi.parse_query_gpu(
        sample("query-gpu-csv-nounits-RTX2080Ti-UnknownError-win442.txt")
    )
    assert card_figures(r.cards) == [
        (0, "GeForce RTX 2080 Ti", 100.0, None, None, 228.82, 210.0, 56.0)
    ]


def test_query_gpu_our_fields_with_na_and_stderr_line() -> None:
    text = (
        "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error\n"
        "0, NVIDIA H200, GPU-aaaa, 00000000:18:00.0, 97, 130013, 143771, 651.32, 700.00, 61\n"
        "2, NVIDIA H200, GPU-cccc, 00000000:2A:00.0, [N/A], [N/A], 143771, ERR!, [Not Supported]"
        ", [Unknown Error]\n"
    )
    r = nvidia_smi.parse_query_gpu(text)
    assert card_figures(r.cards) == [
        (0, "NVIDIA H200", 97.0, 130013.0, 143771.0, 651.32, 700.0, 61.0),
        (2, "NVIDIA H200", None, None, 143771.0, None, None, None),
    ]
    assert [(c.uuid, c.bus_id) for c in r.cards] == [
        ("GPU-aaaa", "00000000:18:00.0"), ("GPU-cccc", "00000000:2A:00.0")
    ]
    assert r.notes == [GPU1_NOTE]


@pytest.mark.parametrize(
    "text",
    [
        "",
        'Field "pci.bus_idd" is not a valid field to query.\n',
        "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n",
        "0, NVIDIA H200, GPU-aaaa\n",  # truncated row
    ],
)
def test_query_gpu_refused_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        nvidia_smi.parse_query_gpu(text)


def test_compute_apps_8xh200_not_found_name() -> None:
    r = nvidia_smi.parse_compute_apps(sample("query-compute-apps-csv-8xH200-NotFound-procname.txt"))
    assert process_rows(r.processes) == [
        (1328667, f"uuid:{H200[0][0]}", "/usr/local/bin/python3.10", 130004.0),
        (1328668, f"uuid:{H200[1][0]}", "/usr/local/bin/python3.10", 130044.0),
        (1425258, f"uuid:{H200[2][0]}", "python3", 105842.0),
        (1328669, f"uuid:{H200[3][0]}", "/usr/local/bin/python3.10", 129984.0),
        (1425259, f"uuid:{H200[4][0]}", "python3", 105842.0),
        (1425260, f"uuid:{H200[5][0]}", "python3", 105842.0),
        (1425261, f"uuid:{H200[6][0]}", "python3", 105842.0),
        (1758887, f"uuid:{H200[7][0]}", None, 58060.0),
    ]
    # Mapped onto the cards of the 8xH200 --query-gpu sample (same machine, same UUIDs).
    cards = nvidia_smi.parse_query_gpu(
        sample("query-gpu-csv-8xH200-uuid-mem-util-100pct.txt")
    ).cards
    assert [p.card_id for p in resolve_process_cards(cards, r.processes)] == [
        f"nvidia:{i}" for i in range(8)
    ]


def test_compute_apps_other_field_lists() -> None:
    with_header = nvidia_smi.parse_compute_apps(
        sample("query-compute-apps-csv-timestamp-RTX3090.txt")
    )
    no_header = nvidia_smi.parse_compute_apps(
        sample("query-compute-apps-csv-noheader-nounits-RTX3090.txt"),
        ("timestamp", "gpu_name", "pid", "process_name", "used_memory"),
    )
    expected = [(1106871, "uuid:?", "/app/llama-server", 23342.0)]
    assert process_rows(with_header.processes) == expected
    assert process_rows(no_header.processes) == expected


def test_compute_apps_name_with_commas() -> None:
    text = "00000000:18:00.0, 4242, python train.py --gpus=0,1, 1024\n"
    r = nvidia_smi.parse_compute_apps(text)
    assert process_rows(r.processes) == [
        (4242, "bus:00000000:18:00.0", "python train.py --gpus=0, 1", 1024.0)
    ]


def test_compute_apps_empty_is_no_processes() -> None:
    assert nvidia_smi.parse_compute_apps("").processes == []
    assert nvidia_smi.parse_compute_apps("No running processes found\n").processes == []


# --- spec and fakes ------------------------------------------------------------------------


def test_spec_shape() -> None:
    (spec,) = nvidia_smi.SPECS
    required, apps = spec.queries
    assert (spec.tool, spec.vendor, spec.group, spec.priority) == (
        "nvidia-smi", "nvidia", "nvidia", 1
    )
    base = (
        "--query-gpu=index,name,uuid,pci.bus_id,utilization.gpu,memory.used,memory.total,"
        "power.draw,power.limit,temperature.gpu"
    )
    chain = [required]
    while chain[-1].fallback is not None:
        chain.append(chain[-1].fallback)
    assert [(q.name, q.args) for q in chain] == [
        ("query-gpu", (base + ",clocks_event_reasons.active", "--format=csv,noheader,nounits")),
        ("query-gpu-throttle-reasons",
         (base + ",clocks_throttle_reasons.active", "--format=csv,noheader,nounits")),
        ("query-gpu-no-reasons", (base, "--format=csv,noheader,nounits")),
        ("table", ()),
    ]
    assert not any(q.optional for q in chain) and chain[-1].parse is nvidia_smi_table.parse_table
    assert apps.optional and apps.args == (
        "--query-compute-apps=gpu_bus_id,pid,process_name,used_gpu_memory",
        "--format=csv,noheader,nounits",
    )
    assert "/usr/lib/wsl/lib" in spec.search_dirs


FAKE_CARDS = [
    FakeCard(0, name="NVIDIA H200", util_pct=97, mem_used_mib=130013, mem_total_mib=143771,
             power_w=651, power_cap_w=700, temp_c=61),
    FakeCard(1, name="NVIDIA H200", util_pct=None, mem_used_mib=None, power_w=None,
             temp_c=None, extras={"mig": "Enabled"}),
    FakeCard(3, name="NVIDIA A30", util_pct=0, mem_used_mib=12, mem_total_mib=24576,
             power_w=32, power_cap_w=165, temp_c=47),
]
FAKE_PROCS = [FakeProcess(4242, "python", 0, 130004), FakeProcess(4243, "pt_worker", 3, 10)]
EXPECTED = [
    (0, "NVIDIA H200", 97.0, 130013.0, 143771.0, 651.0, 700.0, 61.0),
    (1, "NVIDIA H200", None, None, 65536.0, None, 300.0, None),
    (3, "NVIDIA A30", 0.0, 12.0, 24576.0, 32.0, 165.0, 47.0),
]


def test_fake_table_round_trip() -> None:
    r = nvidia_smi_table.parse_table(fake.render(FAKE_CARDS, FAKE_PROCS))
    assert card_figures(r.cards) == EXPECTED
    assert r.cards[1].extras == {"mig": "Enabled"}
    assert process_rows(r.processes) == [
        (4242, "nvidia:0", "python", 130004.0), (4243, "nvidia:3", "pt_worker", 10.0)
    ]
    assert {len(line) for line in fake.render([FakeCard(0)]).splitlines()[1:]} == {89}


def test_fake_csv_and_apps_round_trip_through_spec_args() -> None:
    (spec,) = nvidia_smi.SPECS
    required, apps = spec.queries
    cards = required.parse(fake.render_for_args(required.args, FAKE_CARDS, FAKE_PROCS)).cards
    assert card_figures(cards) == EXPECTED
    assert [c.uuid for c in cards] == [fake.fake_uuid(i) for i in (0, 1, 3)]
    processes = apps.parse(fake.render_for_args(apps.args, FAKE_CARDS, FAKE_PROCS)).processes
    assert process_rows(resolve_process_cards(cards, processes)) == [
        (4242, "nvidia:0", "python", 130004.0), (4243, "nvidia:3", "pt_worker", 10.0)
    ]
    with pytest.raises(ParseError):
        required.parse(fake.render_for_args(("--bogus",), FAKE_CARDS))


def test_table_fallback_plus_compute_apps_gives_each_process_once() -> None:
    """In table mode both the table and --query-compute-apps list the processes: bus ids map
    the latter onto the table's cards and `resolve_process_cards` keeps one of each."""
    (spec,) = nvidia_smi.SPECS
    required, apps = spec.queries
    while required.fallback is not None:
        required = required.fallback
    table = required.parse(fake.render_for_args((), FAKE_CARDS, FAKE_PROCS))
    extra = apps.parse(fake.render_for_args(apps.args, FAKE_CARDS, FAKE_PROCS))
    assert [p.card_id for p in extra.processes] == ["bus:00000000:10:00.0", "bus:00000000:13:00.0"]
    merged = resolve_process_cards(table.cards, [*table.processes, *extra.processes])
    assert process_rows(merged) == [
        (4242, "nvidia:0", "python", 130004.0), (4243, "nvidia:3", "pt_worker", 10.0)
    ]


# --- clock-event reasons in the csv query, and an old driver refusing them -----------------


def test_query_gpu_reads_the_clock_event_mask() -> None:
    text = (
        "0, NVIDIA H200, GPU-a, 00000000:18:00.0, 100, 130013, 143771, 698.20, 700.00, 71,"
        " 0x0000000000000004\n"
        "1, NVIDIA H200, GPU-b, 00000000:2A:00.0, 97, 130013, 143771, 512.00, 700.00, 88,"
        " 0x0000000000000060\n"
        "2, NVIDIA H200, GPU-c, 00000000:3A:00.0, 0, 1, 143771, 80.00, 700.00, 30,"
        " 0x0000000000000001\n"
        "3, NVIDIA H200, GPU-d, 00000000:5D:00.0, 0, 1, 143771, 80.00, 700.00, 30, [N/A]\n"
    )
    cards = nvidia_smi.parse_query_gpu_event(text).cards
    assert [c.extras.get("throttle") for c in cards] == [
        "power-cap", "sw-thermal,hw-thermal", "idle", None
    ]
    old = nvidia_smi.parse_query_gpu_throttle(text.replace("0x0000000000000060", "0x8"))
    assert old.cards[1].extras["throttle"] == "hw-slowdown"


def _refusing(field: str | None, card: FakeCard) -> list[Step]:
    """Steps of an nvidia-smi that refuses csv queries naming ``field`` the way real drivers do."""
    if field is None:
        return [Step(cards=(card,))] * 3
    return [Step(cards=(card,), mode="fail", exit_code=2, only_args=field.split(".")[0],
                 stderr=f'Field "{field}" is not a valid field to query.')] * 3


@pytest.mark.parametrize(
    ("refused_field", "used", "throttle"),
    [
        (None, None, "power-cap"),
        # A 4xx driver: knows the old name only.
        ("clocks_event_reasons.active", "query-gpu-throttle-reasons", "power-cap"),
        # Knows neither (the message names the old field: the no-reasons link is taken).
        ("clocks_throttle_reasons.active", "query-gpu-no-reasons", None),
    ],
)
def test_old_driver_refusing_the_reason_field_drops_it_and_keeps_the_cards(
    fake_bin: Any, refused_field: str | None, used: str | None, throttle: str | None,
) -> None:
    from gpusat_tui.sources.polling.live import LiveSource

    (spec,) = nvidia_smi.SPECS
    card = FakeCard(0, name="NVIDIA H200", util_pct=99, power_w=699, power_cap_w=700,
                    extras={"throttle_mask": 0x4})
    steps = _refusing(refused_field, card)
    if refused_field == "clocks_throttle_reasons.active":
        steps = [Step(cards=(card,), mode="fail", exit_code=2, only_args="reasons.active",
                      stderr=f'Field "{refused_field}" is not a valid field to query.')] * 3
    tool = fake_bin.add_for_spec(spec, steps)
    src = LiveSource(specs=[spec], path=fake_bin.path, process_monitor=None, interval=0.2)
    src._monitor_loaded = True

    async def run() -> list[Any]:
        frames = [await src.poll_once() for _ in range(3)]
        await src.aclose()
        return frames

    frames = asyncio.run(run())
    assert all([c.id for c in f.cards] == ["nvidia:0"] for f in frames)
    assert all(f.cards[0].util_pct == 99.0 and not f.errors for f in frames)
    assert all(f.cards[0].extras.get("throttle") == throttle for f in frames)
    notes = [n for f in frames for n in f.notes if "refused query-gpu" in n]
    if used is None:
        assert notes == []
    else:
        assert len(notes) == 1 and notes[0].endswith(f"using {used}"), notes
        # The refused argv is asked once, then never again.
        assert tool.calls(list(nvidia_smi.QUERY_GPU_EVENT_ARGS)) == 1


def test_a_transient_failure_does_not_drop_the_reason_field(fake_bin: Any) -> None:
    """A failure that does not name the field (driver busy) falls back to the table as before,
    without trying the csv links meant for old drivers."""
    from gpusat_tui.sources.polling.live import LiveSource

    (spec,) = nvidia_smi.SPECS
    card = FakeCard(0, name="NVIDIA H200", util_pct=99)
    tool = fake_bin.add_for_spec(
        spec, [Step(cards=(card,), mode="fail", only_args="--query-gpu"), Step(cards=(card,))]
    )
    src = LiveSource(specs=[spec], path=fake_bin.path, process_monitor=None, interval=0.2)
    src._monitor_loaded = True

    async def run() -> Any:
        frame = await src.poll_once()
        await src.aclose()
        return frame

    frame = asyncio.run(run())
    assert [c.id for c in frame.cards] == ["nvidia:0"]
    assert tool.calls(list(nvidia_smi.QUERY_GPU_THROTTLE_ARGS)) == 0
    assert tool.calls(list(nvidia_smi.QUERY_GPU_ARGS)) == 0
    assert any(n.endswith("using table") for n in frame.notes)


# --- newer MIG samples --------------------------------------------------------------------------


def test_table_h100_mig_disabled_is_one_card_with_the_old_id() -> None:
    r = nvidia_smi_table.parse_table(
        sample("nvidia-smi-H100-80GB-HBM3-570.195.03-slurm-MIG-Disabled.txt")
    )
    assert card_figures(r.cards) == [
        (0, "NVIDIA H100 80GB HBM3", 0.0, 0.0, 81559.0, 104.0, 700.0, 34.0)
    ]
    assert [(c.id, c.instance, c.extras) for c in r.cards] == [
        ("nvidia:0", None, {"mig": "Disabled"})
    ]


def test_nvml_reads_the_mig_layout_of_the_a100_xml_sample_the_same_way() -> None:
    """``nvidia-smi -q -x`` of an A100 with two MIG instances (not a format we parse): its
    figures drive the fake NVML, and the reader gives what that output shows, instance by
    instance (ids, GI/CI, memory), with the whole-GPU util N/A as nvidia-smi prints it."""
    import xml.etree.ElementTree as ET

    from gpusat_tui.collectors import nvml
    from tests.fakes.pynvml import FakeGpu, FakeMig, FakeNvml

    root = ET.fromstring(sample("nvidia-smi-q-x-A100-SXM4-40GB-MIG-2inst-510.47.03.xml.txt"))
    gpu = root.find("gpu")
    assert gpu is not None

    def mib(node: ET.Element | None, path: str) -> float:
        assert node is not None
        return float((node.findtext(path) or "").split()[0])

    migs = [
        FakeMig(int(m.findtext("index") or 0), int(m.findtext("gpu_instance_id") or 0),
                int(m.findtext("compute_instance_id") or 0),
                mem_used_mib=mib(m, "fb_memory_usage/used"),
                mem_total_mib=mib(m, "fb_memory_usage/total"))
        for m in gpu.iter("mig_device")
    ]
    fake = FakeNvml([FakeGpu(
        name=gpu.findtext("product_name") or "", bus_id=gpu.get("id") or "",
        mem_used_mib=mib(gpu, "fb_memory_usage/used"),
        mem_total_mib=mib(gpu, "fb_memory_usage/total"),
        power_w=mib(gpu, "power_readings/power_draw"),
        cap_w=mib(gpu, "power_readings/enforced_power_limit"),
        temp_c=int(mib(gpu, "temperature/gpu_temp")), gpm_support="no", mig=migs,
    )])
    cards = nvml.NvmlReader(load=fake.module)().cards
    assert gpu.findtext("utilization/gpu_util") == "N/A"
    assert [(c.id, c.util_pct, c.mem_used_mib, c.mem_total_mib, c.extras.get("mig_gi"),
             c.extras.get("mig_ci")) for c in cards] == [
        ("nvidia:0", None, 38.0, 40960.0, None, None),
        ("nvidia:0/mig0", None, 19.0, 19968.0, 1.0, 0.0),
        ("nvidia:0/mig1", None, mib(list(gpu.iter("mig_device"))[1], "fb_memory_usage/used"),
         19968.0, 2.0, 0.0),
    ]
    assert (cards[0].power_w, cards[0].power_cap_w) == (66.92, 400.0)
    # Every clock-event reason reads "Not Active" in the sample: an empty reason list.
    reasons = gpu.find("clocks_throttle_reasons")
    assert reasons is not None and {r.text.strip() for r in reasons if r.text} == {"Not Active"}
    assert cards[0].extras["throttle"] == ""
