"""``gpusat-tui check --json`` end to end against fake *streaming* tools, one per new family
(tegrastats, neuron-monitor), neuron-ls (calls), and nvidia-smi's ``-lms`` loop mode.

Each family is run twice: a fake replaying a real capture as it was printed (static capture),
and a fake whose records follow a scenario of moving figures. A stream's records do not line up
with the polls, so a scenario test checks what cannot depend on timing: every figure seen is a
scenario figure, the last one is the scenario's last, and the totals are exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from gpusat_tui.collectors import all_specs
from gpusat_tui.collectors.base import ToolSpec
from gpusat_tui.collectors.nvidia_smi import (
    QUERY_GPU_ARGS,
    QUERY_GPU_EVENT_ARGS,
    QUERY_GPU_THROTTLE_ARGS,
)
from tests.collector_helpers import read_sample, samples_dir
from tests.commands.test_check import check_json, stats
from tests.conftest import leftover_processes
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import neuron_monitor as nm_fmt
from tests.fakes.formats import nvidia_smi as nv_fmt
from tests.fakes.formats import tegrastats as tg_fmt
from tests.fakes.stream import Run, write_dispatch, write_fake_stream
from tests.fakes.tool import FakeBin, Step

ARGS = ("--duration", "2", "--interval", "0.5")


def card_of(report: dict[str, Any], card_id: str) -> dict[str, Any]:
    return next(c for c in report["cards"] if c["id"] == card_id)


def assert_series(got: dict[str, Any], values: Sequence[float]) -> None:
    """A STATS block over some of ``values`` (which ones depends on timing), ending on the last."""
    assert got["last"] == pytest.approx(values[-1])
    assert min(values) - 1e-9 <= got["min"] <= got["max"] <= max(values) + 1e-9
    assert got["min"] - 1e-9 <= got["mean"] <= got["max"] + 1e-9


def done_cleanly(fake_bin: FakeBin, report: dict[str, Any]) -> None:
    assert report["errors"] == []
    assert leftover_processes(fake_bin.dir, grace=1.0) == []


# --- Jetson ----------------------------------------------------------------------------------


def test_tegrastats_capture(fake_bin: FakeBin) -> None:
    text = read_sample(samples_dir("jetson"),
                       "tegrastats-AGX-Orin-JetPack7.2-R39.2-GR3D-util-at-GPC-array.txt")
    fake = write_fake_stream(fake_bin.dir / "tegrastats", [Run(records=[text], period=0.3)])
    report = check_json(fake_bin, *ARGS)
    assert [c["id"] for c in report["cards"]] == ["jetson:0"]
    card = report["cards"][0]
    assert card["util_pct"] == stats([12.0])
    assert card["mem_used_mib"] == stats([20642.0]) and card["mem_total_mib"] == 62817.0
    assert card["power_w"] == stats([5.139]) and card["power_cap_w"] is None
    assert card["temp_c"] == stats([47.625])
    assert 3 <= report["samples"] <= 5
    assert fake.starts() == 1 and fake.argv() == ["--interval 500"]
    done_cleanly(fake_bin, report)


def test_tegrastats_scenario(fake_bin: FakeBin) -> None:
    utils, used, power = [10.0, 60.0, 95.0], [2000.0, 5000.0, 7000.0], [3.0, 9.5, 14.0]
    cards = [FakeCard(index=0, util_pct=utils[i], mem_used_mib=used[i], mem_total_mib=30697.0,
                      power_w=power[i], temp_c=50.0 + i) for i in range(3)]
    write_fake_stream(fake_bin.dir / "tegrastats",
                      [Run(records=[tg_fmt.render_line(c) for c in cards], period=0.3)])
    report = check_json(fake_bin, *ARGS)
    card = card_of(report, "jetson:0")
    assert_series(card["util_pct"], utils)
    assert_series(card["mem_used_mib"], used)
    assert_series(card["power_w"], power)
    assert_series(card["temp_c"], [50.0, 51.0, 52.0])
    assert card["mem_total_mib"] == 30697.0
    done_cleanly(fake_bin, report)


# --- AWS Neuron ------------------------------------------------------------------------------


def test_neuron_monitor_capture(fake_bin: FakeBin) -> None:
    text = read_sample(samples_dir("neuron"),
                       "neuron-monitor-inf2.xlarge-1runtime-89pct-trimmed.json.txt")
    fake = write_fake_stream(fake_bin.dir / "neuron-monitor", [Run(records=[text], period=0.3)])
    report = check_json(fake_bin, *ARGS)
    assert [c["id"] for c in report["cards"]] == ["neuron:0", "neuron:1"]
    assert [c["name"] for c in report["cards"]] == ["inferentia2 NeuronCore-v2"] * 2
    core0, core1 = report["cards"]
    assert core0["util_pct"] == stats([89.40087251059674])
    assert core1["util_pct"] == stats([0.0])
    assert core0["mem_total_mib"] == core1["mem_total_mib"] == 16384.0
    assert core0["mem_used_mib"] == stats([])  # two cores, one runtime total: not split
    # It was given a configuration asking for a report every second (its shortest period).
    (argv,) = fake.argv()
    assert argv.startswith("-c ") and argv.endswith("config.json")
    assert '"period": "1s"' in (fake.arg_file(1) or "")
    done_cleanly(fake_bin, report)


def test_neuron_monitor_scenario_one_card_per_core_a_rank_uses(fake_bin: FakeBin) -> None:
    steps = [[10.0, 20.0], [50.0, 55.0], [90.0, 85.0]]
    procs = [FakeProcess(pid=4101, name="python", card_index=1),
             FakeProcess(pid=4102, name="python", card_index=2)]
    records = []
    for util1, util2 in steps:
        cards = [FakeCard(index=i, util_pct=u, mem_used_mib=1000.0 * i, mem_total_mib=16384.0)
                 for i, u in ((0, 0.0), (1, util1), (2, util2), (3, 0.0))]
        records.append(nm_fmt.render_report(cards, procs))
    write_fake_stream(fake_bin.dir / "neuron-monitor", [Run(records=records, period=0.3)])
    report = check_json(fake_bin, *ARGS)
    # Cores 0 and 3 run no rank: not cards.
    assert [c["id"] for c in report["cards"]] == ["neuron:1", "neuron:2"]
    assert_series(card_of(report, "neuron:1")["util_pct"], [s[0] for s in steps])
    assert_series(card_of(report, "neuron:2")["util_pct"], [s[1] for s in steps])
    assert card_of(report, "neuron:2")["mem_used_mib"] == stats([2000.0])
    assert card_of(report, "neuron:1")["mem_total_mib"] == 16384.0
    done_cleanly(fake_bin, report)


def neuron_ls_spec() -> ToolSpec:
    return next(s for s in all_specs() if s.tool == "neuron-ls")


def test_neuron_ls_capture_when_neuron_monitor_is_absent(fake_bin: FakeBin) -> None:
    text = read_sample(samples_dir("neuron"), "neuron-ls-trn1.2xlarge-1dev-numa-minus1.txt")
    fake_bin.add("neuron-ls", lambda args, cards, procs: text, [[]],
                 arg_lists=[(), ("--show-all-procs",)])
    report = check_json(fake_bin, *ARGS)
    assert [c["id"] for c in report["cards"]] == ["neuron:0", "neuron:1"]
    for card in report["cards"]:
        assert card["mem_total_mib"] == 16384.0 and card["util_pct"] == stats([])
        assert card["verdict"]["kind"] == "unknown"
    assert any("neuron-ls shows no utilisation" in n for n in report["notes"])
    done_cleanly(fake_bin, report)


def test_neuron_ls_scenario(fake_bin: FakeBin) -> None:
    cards = [FakeCard(index=i, mem_total_mib=8192.0 * (1 + i // 2)) for i in range(4)]
    procs = [FakeProcess(pid=5000 + i, name="torchrun", card_index=i) for i in (0, 2)]
    tool = fake_bin.add_for_spec(neuron_ls_spec(), [Step(cards=cards, processes=procs)])
    report = check_json(fake_bin, *ARGS)
    assert [c["id"] for c in report["cards"]] == [f"neuron:{i}" for i in range(4)]
    # Each device's memory over its two cores (the fake prints whole GB per device).
    assert [c["mem_total_mib"] for c in report["cards"]] == [8192.0, 8192.0, 16384.0, 16384.0]
    assert tool.calls(()) == report["samples"] and tool.calls(("--show-all-procs",)) == 1
    done_cleanly(fake_bin, report)


# --- nvidia-smi -lms -------------------------------------------------------------------------


def test_nvidia_smi_loop_mode_is_read_as_a_stream(fake_bin: FakeBin) -> None:
    steps = [[FakeCard(index=i, util_pct=u + i, mem_used_mib=1000.0 * (i + 1),
                       mem_total_mib=81920.0, power_w=200.0 + u, power_cap_w=700.0,
                       temp_c=60.0, extras={"throttle_mask": 0x4 * i}) for i in range(2)]
             for u in (10.0, 50.0, 90.0)]
    records = [nv_fmt.render_for_args(QUERY_GPU_EVENT_ARGS, cards, ()) for cards in steps]
    stream = write_fake_stream(fake_bin.dir / "nvidia-smi-loop", [Run(records=records,
                                                                      period=0.3)])
    spec = next(s for s in all_specs() if s.tool == "nvidia-smi")
    calls = fake_bin.add_for_spec(spec, [steps[-1]], name="nvidia-smi-calls")
    write_dispatch(fake_bin.dir / "nvidia-smi", "-lms", stream.path, calls.path)
    report = check_json(fake_bin, *ARGS)
    assert [c["id"] for c in report["cards"]] == ["nvidia:0", "nvidia:1"]
    for i, card in enumerate(report["cards"]):
        assert_series(card["util_pct"], [10.0 + i, 50.0 + i, 90.0 + i])
        assert_series(card["power_w"], [210.0, 250.0, 290.0])
        assert card["mem_used_mib"] == stats([1000.0 * (i + 1)])
        assert card["power_cap_w"] == 700.0 and card["mem_total_mib"] == 81920.0
    # The stream asks what the call asks: the clock-event reasons too.
    assert [c["throttle"] for c in report["cards"]] == [{}, {"power-cap": report["samples"]}]
    assert stream.starts() == 1 and stream.argv()[0].endswith("-lms 500")
    assert "clocks_event_reasons.active" in stream.argv()[0]
    # One child for the figures; only the process list is still called (every 5th poll).
    assert calls.calls(QUERY_GPU_ARGS) == calls.calls(QUERY_GPU_EVENT_ARGS) == 0
    assert 1 <= calls.calls() <= 2
    assert not any("calling it every poll" in n for n in report["notes"])
    done_cleanly(fake_bin, report)


def test_nvidia_smi_fake_plays_its_loop_mode_in_one_process(fake_bin: FakeBin) -> None:
    """The fake with ``loop_flag="-lms"`` (the benchmarks' fake) is one process printing one
    sample per period, as the real tool does: read as the stream, its figures never called."""
    steps = [[FakeCard(index=i, util_pct=u + i, mem_used_mib=1000.0 * (i + 1),
                       mem_total_mib=81920.0, power_w=200.0 + u, power_cap_w=700.0,
                       temp_c=60.0) for i in range(2)] for u in (10.0, 50.0, 90.0)]
    spec = next(s for s in all_specs() if s.tool == "nvidia-smi")
    tool = fake_bin.add_for_spec(spec, steps, loop_flag="-lms")
    report = check_json(fake_bin, *ARGS)
    assert [c["id"] for c in report["cards"]] == ["nvidia:0", "nvidia:1"]
    for i, card in enumerate(report["cards"]):
        assert_series(card["util_pct"], [10.0 + i, 50.0 + i, 90.0 + i])
        assert card["power_cap_w"] == 700.0 and card["mem_total_mib"] == 81920.0
    assert tool.loop_starts() == 1 and tool.loop_starts(QUERY_GPU_EVENT_ARGS) == 1
    assert tool.calls(QUERY_GPU_ARGS) == tool.calls(QUERY_GPU_EVENT_ARGS) == 0
    assert 1 <= tool.calls() <= 2  # the process list, every 5th poll
    assert not any("calling it every poll" in n for n in report["notes"])
    done_cleanly(fake_bin, report)


def test_nvidia_smi_loop_on_a_driver_without_the_reason_field_falls_back_to_calls(
    fake_bin: FakeBin,
) -> None:
    """A pre-535 driver refuses the event-reason field in its loop mode too (exit 2 before any
    record): the tool is called every poll, and the call's fallback chain takes the old name."""
    card = FakeCard(index=0, util_pct=40.0, mem_total_mib=81920.0, power_w=690.0,
                    power_cap_w=700.0, extras={"throttle_mask": 0x4})
    refused = Step(cards=(card,), mode="fail", exit_code=2, only_args="clocks_event_reasons",
                   stderr='Field "clocks_event_reasons.active" is not a valid field to query.')
    spec = next(s for s in all_specs() if s.tool == "nvidia-smi")
    tool = fake_bin.add_for_spec(spec, [refused], loop_flag="-lms")
    report = check_json(fake_bin, *ARGS)
    assert [c["id"] for c in report["cards"]] == ["nvidia:0"]
    assert report["cards"][0]["throttle"] == {"power-cap": report["samples"]}
    assert tool.loop_starts() == tool.loop_starts(QUERY_GPU_EVENT_ARGS) == 1
    assert tool.calls(QUERY_GPU_EVENT_ARGS) == 1
    assert tool.calls(QUERY_GPU_THROTTLE_ARGS) == report["samples"]
    assert any("ended before its first record" in n and "calling it every poll" in n
               for n in report["notes"])
    assert any(n.endswith("using query-gpu-throttle-reasons") for n in report["notes"])
    done_cleanly(fake_bin, report)
