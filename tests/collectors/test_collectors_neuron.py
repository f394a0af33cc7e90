"""AWS Neuron ``neuron-monitor`` and ``neuron-ls``: every captured sample, every card, exact
figures. A card is a NeuronCore (what a rank uses), indexed by its global NeuronCore id."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpusat_tui.collectors import neuron_ls, neuron_monitor
from gpusat_tui.collectors.neuron_ls import NOTE, parse_neuron_ls
from gpusat_tui.collectors.neuron_monitor import parse_neuron_monitor
from gpusat_tui.errors import ParseError
from tests.collector_helpers import (
    assert_every_truncation_parses_or_is_refused,
    process_rows,
    read_sample,
    samples_dir,
)

SAMPLES = samples_dir("neuron")
MONITOR = "neuron-monitor-inf2.xlarge-1runtime-89pct-trimmed.json.txt"


def read(name: str) -> str:
    return read_sample(SAMPLES, name)


def figures(cards: Any) -> list[tuple[Any, ...]]:
    return [(c.index, c.name, c.bus_id, c.util_pct, c.mem_used_mib, c.mem_total_mib, c.power_w,
             c.power_cap_w, c.temp_c) for c in cards]


# --- neuron-monitor --------------------------------------------------------------------------


def test_monitor_inf2_one_runtime_on_two_cores_89_pct() -> None:
    reading = parse_neuron_monitor(read(MONITOR))
    name = "inferentia2 NeuronCore-v2"
    # 32 GiB device, 2 NeuronCores: 16 GiB per core. The runtime holds 141649980 bytes over
    # its two cores: not split (that would invent figures), kept in extras.
    assert figures(reading.cards) == [
        (0, name, None, 89.40087251059674, None, 16384.0, None, None, None),
        (1, name, None, 0.0, None, 16384.0, None, None, None),
    ]
    runtime_mib = 141649980 / 1048576
    assert [c.extras for c in reading.cards] == [
        {"device": 0.0, "effective_flops": 875590474948.0, "runtime_device_mib": runtime_mib},
        {"device": 0.0, "effective_flops": 0.0, "runtime_device_mib": runtime_mib},
    ]
    assert all((c.vendor, c.tool) == ("neuron", "neuron-monitor") for c in reading.cards)
    assert process_rows(reading.processes) == [(2199, "neuron:0", None, None),
                                               (2199, "neuron:1", None, None)]
    assert reading.notes == []


def report_with(runtimes: list[dict[str, Any]], **hw: Any) -> str:
    base = json.loads(read(MONITOR))
    base["neuron_runtime_data"] = runtimes
    base["neuron_hardware_info"].update(hw)
    return json.dumps(base)


def runtime(pid: int, cores: dict[str, float], used: dict[str, Any]) -> dict[str, Any]:
    return {"pid": pid, "report": {
        "neuroncore_counters": {"neuroncores_in_use": {
            c: {"neuroncore_utilization": u, "effective_flops": 0} for c, u in cores.items()
        }},
        "memory_used": {"neuron_runtime_used_bytes": used},
    }}


def test_monitor_ranks_on_their_own_cores_get_their_memory() -> None:
    # Two DDP ranks, one core each (the standard neuron_device key), on a 2-device box.
    text = report_with(
        [runtime(11, {"2": 95.0}, {"host": 1, "neuron_device": 2 * 1048576}),
         runtime(12, {"3": 40.5}, {"host": 1, "neuron_device": 3 * 1048576})],
        neuron_device_count=2,
    )
    reading = parse_neuron_monitor(text)
    assert [(c.index, c.util_pct, c.mem_used_mib, c.extras["device"]) for c in reading.cards] == [
        (2, 95.0, 2.0, 1.0), (3, 40.5, 3.0, 1.0),
    ]
    assert process_rows(reading.processes) == [(11, "neuron:2", None, None),
                                               (12, "neuron:3", None, None)]


def test_monitor_per_core_breakdown_is_summed_per_core() -> None:
    breakdown = {"neuroncore_memory_usage": {
        "0": {"constants": 1048576, "model_code": 1048576, "tensors": 2 * 1048576},
        "1": {"constants": 1048576, "tensors": None},
    }}
    text = report_with([runtime(7, {"0": 50.0, "1": 60.0},
                                {"neuron_device": 99, "usage_breakdown": breakdown})])
    reading = parse_neuron_monitor(text)
    assert [(c.index, c.mem_used_mib) for c in reading.cards] == [(0, 4.0), (1, 1.0)]
    assert "runtime_device_mib" not in reading.cards[0].extras


def test_monitor_with_no_runtime_lists_no_card_and_says_why() -> None:
    reading = parse_neuron_monitor(report_with([]))
    assert reading.cards == [] and "no Neuron runtime is running" in reading.notes[0]


def test_monitor_reads_the_newest_report_and_skips_a_torn_line() -> None:
    older = report_with([runtime(1, {"0": 10.0}, {})])
    newer = report_with([runtime(1, {"0": 20.0}, {})])
    reading = parse_neuron_monitor(older + "\n" + newer + "\n" + newer[:40] + "\n")
    assert [c.util_pct for c in reading.cards] == [20.0]


def test_monitor_runtime_error_is_a_note_and_odd_values_are_no_figures() -> None:
    odd = runtime(5, {"0": "high", "x": 3.0}, {"neuron_device": True})  # type: ignore[dict-item]
    odd["error"] = "\x1b[31mruntime crashed\x1b[0m"
    reading = parse_neuron_monitor(report_with([odd, "junk"]))  # type: ignore[list-item]
    assert [(c.index, c.util_pct, c.mem_used_mib) for c in reading.cards] == [(0, None, None)]
    assert reading.notes[0] == "neuron-monitor: runtime 5: runtime crashed"


@pytest.mark.parametrize("text", ["", "[]", '{"other": 1}', "neuron-monitor: not found",
                                  '{"neuron_runtime_data": ['])
def test_monitor_refuses_what_is_not_a_report(text: str) -> None:
    with pytest.raises(ParseError):
        parse_neuron_monitor(text)


def test_monitor_spec_streams_with_a_config_at_the_poll_interval() -> None:
    (spec,) = neuron_monitor.SPECS
    assert spec.stream is not None and spec.stream.args == ("-c", "{config}")
    config = json.loads(spec.stream.config or "")
    assert config["period"] == "{interval_s}s"
    assert spec.stream.min_period_s == 1.0 and (spec.group, spec.priority) == ("neuron", 0)


# --- neuron-ls -------------------------------------------------------------------------------


def ls_figures(name: str) -> list[tuple[Any, ...]]:
    reading = parse_neuron_ls(read(name))
    assert reading.notes == [NOTE]
    assert all((c.vendor, c.tool, c.util_pct, c.power_w, c.temp_c) ==
               ("neuron", "neuron-ls", None, None, None) for c in reading.cards)
    return [(c.index, c.bus_id, c.mem_total_mib, c.extras["device"]) for c in reading.cards]


TRN2_BUS = ["cc", "b5", "b6", "cb", "6f", "58", "59", "6e", "9b", "84", "85", "9a", "f8", "e1",
            "e2", "f7"]


def test_ls_inf1_old_layout_memory_channels() -> None:
    assert ls_figures("neuron-ls-inf1-old-layout-memory-channels-docker.txt") == [
        (core, "0000:00:1f.0", 2048.0, 0.0) for core in range(4)  # 2 x 4096 MB over 4 cores
    ]


def test_ls_inf2_four_columns() -> None:
    assert ls_figures("neuron-ls-inf2-1dev-4col-quickstart.txt") == [
        (0, "00:1e.0", 16384.0, 0.0), (1, "00:1e.0", 16384.0, 0.0),
    ]


def test_ls_trn1_2xlarge_core_ids_and_numa_minus_one() -> None:
    assert ls_figures("neuron-ls-trn1.2xlarge-1dev-numa-minus1.txt") == [
        (0, "0000:00:1e.0", 16384.0, 0.0), (1, "0000:00:1e.0", 16384.0, 0.0),
    ]


def test_ls_trn1_32xlarge_table_then_topology_diagram() -> None:
    bus = ["10:1c.0", "10:1d.0", "a0:1c.0", "a0:1d.0", "20:1b.0", "20:1c.0", "90:1b.0",
           "90:1c.0", "20:1d.0", "20:1e.0", "90:1d.0", "90:1e.0", "10:1e.0", "10:1b.0",
           "a0:1e.0", "a0:1b.0"]
    assert ls_figures("neuron-ls-trn1.32xlarge-16dev-topology-diagram.txt") == [
        (2 * d + i, bus[d], 16384.0, float(d)) for d in range(16) for i in range(2)
    ]


def test_ls_trn2_core_id_ranges() -> None:
    assert ls_figures("neuron-ls-trn2n.48xlarge-16dev-core-ids-numa.txt") == [
        (4 * d + i, f"0000:{TRN2_BUS[d]}:00.0", 24576.0, float(d))
        for d in range(16) for i in range(4)  # 96 GB (GiB) over 4 cores
    ]
    assert parse_neuron_ls(read("neuron-ls-trn2n.48xlarge-16dev-core-ids-numa.txt")).processes \
        == []


def test_ls_wide_lists_the_process_on_every_core_of_each_device() -> None:
    name = "neuron-ls-wide-trn2n.48xlarge-16dev-pid-command-truncated.txt"
    assert ls_figures(name) == [
        (4 * d + i, f"{TRN2_BUS[d]}:00.0", 24576.0, float(d)) for d in range(16) for i in range(4)
    ]
    command = "neuron-bench exec --run-as-cc-neff --warmup none --fixed-instance-count 64 --..."
    assert process_rows(parse_neuron_ls(read(name)).processes) == [
        (268911, f"neuron:{core}", command, None) for core in range(64)
    ]


def test_ls_show_all_procs_continuation_rows_and_itself_left_out() -> None:
    name = "neuron-ls-show-all-procs-trn2n.48xlarge-two-rows-per-device.txt"
    assert ls_figures(name) == [
        (4 * d + i, f"{TRN2_BUS[d]}:00.0", 24576.0, float(d)) for d in range(16) for i in range(4)
    ]
    assert process_rows(parse_neuron_ls(read(name)).processes) == [
        (268911, f"neuron:{core}", "neuron-bench exec --run-as-cc-neff --...", None)
        for core in range(64)
    ]


@pytest.mark.parametrize("text", ["", "neuron-ls: command not found",
                                  "+---+\n| A |\n+---+\n| 1 |\n+---+\n",
                                  "+--+\n| NEURON | NEURON |\n| DEVICE | CORES |\n+--+\n+--+\n"])
def test_ls_refuses_what_is_not_its_table(text: str) -> None:
    with pytest.raises(ParseError):
        parse_neuron_ls(text)


def test_ls_spec_is_the_fallback_of_the_neuron_group() -> None:
    (spec,) = neuron_ls.SPECS
    assert (spec.group, spec.priority, spec.stream) == ("neuron", 1, None)


# --- every sample cut anywhere (a neuron-monitor report parses only whole) -----------------------


def test_every_truncation_parses_or_is_refused() -> None:
    for path in sorted(SAMPLES.iterdir()):
        monitor = "monitor" in path.name
        parse = parse_neuron_monitor if monitor else parse_neuron_ls
        # A neuron-monitor report is one JSON line: only the whole of it parses.
        text = path.read_text() if monitor else path.read_text()[:1500]
        assert_every_truncation_parses_or_is_refused(text, [parse], "neuron")
