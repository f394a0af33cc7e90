"""NVIDIA Jetson ``tegrastats``: every captured sample, every line, exact figures."""

from __future__ import annotations

from typing import Any

import pytest

from gpusat_tui.collectors import tegrastats
from gpusat_tui.collectors.tegrastats import parse_tegrastats
from tests.collector_helpers import (
    sample_reader,
)

read = sample_reader("jetson")


def lines_of(name: str) -> list[str]:
    return [ln for ln in read(name).splitlines() if ln.strip()]


def figures(text: str) -> tuple[Any, ...]:
    """(util, used MiB, total MiB, power W, cap, temp, extras) of the one card."""
    reading = parse_tegrastats(text)
    assert len(reading.cards) == 1
    c = reading.cards[0]
    assert (c.vendor, c.index, c.tool, c.stale_s) == ("jetson", 0, "tegrastats", None)
    return (c.util_pct, c.mem_used_mib, c.mem_total_mib, c.power_w, c.power_cap_w, c.temp_c,
            c.extras)


ORIN_SOC = {"power_rail": "VDD_GPU_SOC", "power_scope": "gpu+soc"}


def test_agx_orin_32gb_jetpack6_two_idle_lines() -> None:
    name = "tegrastats-AGX-Orin-32GB-JP6-2lines-idle-cores-off.txt"
    first, second = lines_of(name)
    assert figures(first) == (0.0, 1313.0, 30697.0, 1.995, None, None,
                              {"tj_c": 43.343, **ORIN_SOC, "board_power_w": 2.524})
    assert figures(second) == (0.0, 1313.0, 30697.0, 1.995, None, None,
                               {"tj_c": 42.875, **ORIN_SOC, "board_power_w": 2.524})
    # The whole capture reads as its newest line.
    assert figures(read(name)) == figures(second)
    assert parse_tegrastats(first).cards[0].mem_pct == pytest.approx(100 * 1313 / 30697)


def test_agx_orin_64gb_jetpack6_0_has_no_gpu_temperature() -> None:
    text = read("tegrastats-AGX-Orin-64GB-JetPack6.0-idle-no-gpu-temp.txt")
    assert figures(text) == (0.0, 7517.0, 62841.0, 2.388, None, None,
                             {"tj_c": 45.625, **ORIN_SOC, "board_power_w": 3.824})


def test_agx_orin_r36_4_4_encoder_busy_gpu_idle_three_lines() -> None:
    lines = lines_of("tegrastats-AGX-Orin-64GB-R36.4.4-3lines-NVENC-load-GPU-idle.txt")
    expected = [(18207.0, 3.0, 52.562, 4.707), (18202.0, 3.0, 52.343, 4.607),
                (18203.0, 2.0, 52.156, 4.707)]
    assert len(lines) == 3
    for line, (used, emc, tj, board) in zip(lines, expected, strict=True):
        # GR3D_FREQ 0%@[0,0]: the GPU idles (clock 0) while NVENC works at 78-79 %.
        assert figures(line) == (0.0, used, 62841.0, 2.412, None, None, {
            "gpu_clock_mhz": 0.0, "emc_pct": emc, "tj_c": tj, **ORIN_SOC,
            "board_power_w": board,
        })


def test_agx_orin_negative_cpu_rail_does_not_touch_the_gpu_figures() -> None:
    text = read("tegrastats-AGX-Orin-64GB-negative-VDD_CPU_CV-minus398mW.txt")
    assert figures(text) == (0.0, 10239.0, 62841.0, 1.592, None, None,
                             {"tj_c": 37.5, **ORIN_SOC, "board_power_w": 2.624})


def test_negative_gpu_rail_is_no_figure() -> None:
    text = read("tegrastats-AGX-Orin-64GB-negative-VDD_CPU_CV-minus398mW.txt").replace(
        "VDD_GPU_SOC 1592mW/1592mW", "VDD_GPU_SOC -12mW/-12mW"
    )
    assert figures(text)[3] is None


def test_agx_orin_jetpack7_util_at_gpc_clock_array_and_cur_avg_max_rails() -> None:
    text = read("tegrastats-AGX-Orin-JetPack7.2-R39.2-GR3D-util-at-GPC-array.txt")
    assert figures(text) == (12.0, 20642.0, 62817.0, 5.139, None, 47.625, {
        "gpu_clock_mhz": 1300.0, "emc_pct": 3.0, **ORIN_SOC, "board_power_w": 5.5,
    })


def test_agx_thor_clock_gated_gpu_reads_as_zero_util() -> None:
    lines = lines_of("tegrastats-AGX-Thor-R38.4.0-3lines-GR3D-no-util.txt")
    expected = [(4208.0, 0.0, 34.5, 4.126), (4280.0, 0.0, 36.031, 4.327),
                (4309.0, 1.0, 34.468, 4.428)]
    assert len(lines) == 3
    for line, (used, emc, tj, board) in zip(lines, expected, strict=True):
        assert figures(line) == (0.0, used, 125773.0, 0.0, None, None, {
            "gpu_clock_mhz": 0.0, "emc_pct": emc, "tj_c": tj, "power_rail": "VDD_GPU",
            "board_power_w": board,
        })


def test_no_util_with_a_running_clock_is_unknown_not_zero() -> None:
    line = lines_of("tegrastats-AGX-Thor-R38.4.0-3lines-GR3D-no-util.txt")[0].replace(
        "GR3D_FREQ @[0,0,0]", "GR3D_FREQ @[0,900,0]"
    )
    util, *_, extras = figures(line)
    assert util is None and extras["gpu_clock_mhz"] == 900.0


def test_nano_l4t32_rails_without_units_and_iram_is_not_ram() -> None:
    text = read("tegrastats-Nano-L4T32-one-line.txt")
    assert figures(text) == (0.0, 1180.0, 3965.0, 0.0, None, 59.0, {
        "gpu_clock_mhz": 76.0, "emc_pct": 10.0, "power_rail": "POM_5V_GPU",
        "board_power_w": 4.52,
    })


def test_tx1_old_layout_gr3d_without_freq_suffix() -> None:
    text = read("tegrastats-TX1-old-L4T-GR3D-no-FREQ.txt")
    assert figures(text) == (0.0, 2350.0, 3983.0, None, None, None,
                             {"gpu_clock_mhz": 76.0, "emc_pct": 55.0})


def test_tx2_line_wrapped_by_its_author_reads_as_one_record() -> None:
    text = read("tegrastats-TX2-line-wrapped-by-author.txt")
    assert figures(text) == (0.0, 2007.0, 7852.0, 0.153, None, 34.5, {
        "gpu_clock_mhz": 114.0, "emc_pct": 16.0, "power_rail": "VDD_SYS_GPU",
        "board_power_w": 1.423,
    })


def test_busy_gpu_and_gigabyte_ram() -> None:
    line = "RAM 3/8GB (lfb 1x2MB) GR3D_FREQ 99%@1300 VDD_GPU 25000mW/24000mW GPU@61C"
    assert figures(line) == (99.0, 3072.0, 8192.0, 25.0, None, 61.0,
                             {"gpu_clock_mhz": 1300.0, "power_rail": "VDD_GPU"})


def test_escape_codes_are_stripped() -> None:
    text = "\x1b[1mRAM 1/2MB GR3D_FREQ 5%@76\x1b[0m"
    assert figures(text)[:3] == (5.0, 1.0, 2.0)


def test_the_spec_streams_with_the_poll_interval() -> None:
    (spec,) = tegrastats.SPECS
    assert spec.vendor == "jetson" and spec.queries == ()
    assert spec.stream is not None and spec.stream.args == ("--interval", "{interval_ms}")
