"""Cambricon ``cnmon``: every captured sample, every card, exact figures."""

from __future__ import annotations

import pytest

from gpusat_tui.collectors import cnmon
from gpusat_tui.collectors.cnmon import parse_default
from gpusat_tui.model import CardProcess, CardReading
from tests.collector_helpers import (
    card_figures,
    sample_reader,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import cnmon as fake

read = sample_reader("cambricon")

#: (index, name, bus, util, used, total, power, cap, temp)
Row = tuple[int, str, str | None, float, float, float, float, float, float]


def check(cards: list[CardReading], rows: list[Row]) -> None:
    assert len(cards) == len(rows)
    for card, (index, name, bus, util, used, total, power, cap, temp) in zip(
        cards, rows, strict=True
    ):
        assert (card.vendor, card.tool) == ("cambricon", "cnmon")
        assert (card.index, card.name, card.bus_id) == (index, name, bus)
        assert card.util_pct == util
        assert (card.mem_used_mib, card.mem_total_mib) == (used, total)
        assert card.mem_pct == pytest.approx(100.0 * used / total)
        assert (card.power_w, card.power_cap_w, card.temp_c) == (power, cap, temp)


def test_mlu220_cnmon_1_16_fractional_power_vmemory() -> None:
    reading = parse_default(read("cnmon-MLU220-M2-1card-1.16.0.txt"))
    assert reading.version == "1.16.0"
    check(reading.cards, [(0, "MLU220-M2", None, 0.0, 967.0, 4096.0, 3.70, 8.25, 51.0)])
    extras = reading.cards[0].extras
    assert extras["firmware"] == "v1.1.1"
    assert extras["vmem_used_mib"] == 10240.0
    assert extras["vmem_total_mib"] == 1048576.0
    assert extras["fan_pct"] == 0.0
    assert reading.processes == []


def test_mlu370_x4_v5_10_10_misaligned_na_cell() -> None:
    reading = parse_default(read("cnmon-MLU370-X4-2card-v5.10.10-exclusive.txt"))
    assert reading.version == "5.10.10"
    check(reading.cards, [
        (0, "MLU370-X4", "0000:1B:00.0", 0.0, 0.0, 23308.0, 27.0, 150.0, 41.0),
        (1, "MLU370-X4", "0000:36:00.0", 0.0, 0.0, 23308.0, 27.0, 150.0, 41.0),
    ])
    assert [c.extras["compute_mode"] for c in reading.cards] == ["Exclusive", "Exclusive"]
    assert [c.extras["ecc_error"] for c in reading.cards] == ["N/A", "N/A"]
    assert reading.processes == []


def test_mlu370_x4_v4_20_three_cards() -> None:
    reading = parse_default(read("cnmon-MLU370-X4-3card-v4.20.11.txt"))
    assert reading.version == "4.20.11"
    check(reading.cards, [
        (0, "MLU370-X4", None, 0.0, 0.0, 23308.0, 30.0, 150.0, 32.0),
        (1, "MLU370-X4", None, 0.0, 0.0, 23308.0, 25.0, 150.0, 33.0),
        (2, "MLU370-X4", None, 0.0, 0.0, 23308.0, 26.0, 150.0, 30.0),
    ])
    assert reading.processes == []


def test_mlu370_x8_v5_10_13_no_timestamp_sriov_column() -> None:
    reading = parse_default(read("cnmon-MLU370-X8-2card-v5.10.13-SRIOV-col-no-timestamp.txt"))
    assert reading.version == "5.10.13"
    check(reading.cards, [
        (0, "MLU370-X8", "0000:39:00.0", 0.0, 0.0, 23374.0, 106.0, 250.0, 32.0),
        (1, "MLU370-X8", "0000:3D:00.0", 0.0, 0.0, 23374.0, 106.0, 250.0, 39.0),
    ])
    assert [(c.extras["sriov"], c.extras["compute_mode"]) for c in reading.cards] == [
        ("N/A", "Default"), ("N/A", "Default")]
    assert reading.processes == []


def test_na_power_util_temp_are_none() -> None:
    text = read("cnmon-MLU370-X4-3card-v4.20.11.txt")
    text = text.replace("|  0%   32C         30 W/ 150 W |", "|  0%   N/A        N/A W/ N/A W |")
    text = text.replace("| 0%          N/A       |", "| N/A         N/A       |", 1)
    card = parse_default(text).cards[0]
    assert (card.util_pct, card.power_w, card.power_cap_w, card.temp_c) == (
        None, None, None, None)
    assert card.mem_total_mib == 23308.0


def test_spec_shape() -> None:
    (spec,) = cnmon.SPECS
    assert (spec.tool, spec.vendor, spec.names) == ("cnmon", "cambricon", ("cnmon",))
    assert "/usr/local/neuware/bin" in spec.search_dirs
    assert [q.args for q in spec.queries] == [()]


def test_round_trip_through_fake_renderer() -> None:
    cards = [
        FakeCard(index=0, name="MLU370-X8", util_pct=93.0, mem_used_mib=20000.0,
                 mem_total_mib=23374.0, power_w=212.0, power_cap_w=250.0, temp_c=71.0),
        FakeCard(index=1, name="MLU220-M2", util_pct=5.0, mem_used_mib=967.0,
                 mem_total_mib=4096.0, power_w=3.7, power_cap_w=8.25, temp_c=51.0),
    ]
    procs = [FakeProcess(pid=777, name="python train.py", card_index=0, mem_mib=19000.0)]
    reading = parse_default(fake.render_for_args((), cards, procs))
    assert card_figures(reading.cards) == [
        (0, "MLU370-X8", 93.0, 20000.0, 23374.0, 212.0, 250.0, 71.0),
        (1, "MLU220-M2", 5.0, 967.0, 4096.0, 3.7, 8.25, 51.0),
    ]
    assert reading.processes == [
        CardProcess(pid=777, card_id="cambricon:0", name="python train.py", mem_used_mib=19000.0)
    ]
    assert parse_default(fake.render(cards)).processes == []


def test_ansi_codes_are_ignored() -> None:
    text = read("cnmon-MLU220-M2-1card-1.16.0.txt").replace(
        "| CNMON 1.16.0", "| \x1b[1;34mCNMON 1.16.0\x1b[0m", 1)
    reading = parse_default(text)
    assert reading.version == "1.16.0"
    assert [(c.index, c.power_w, c.power_cap_w) for c in reading.cards] == [(0, 3.7, 8.25)]


def test_v5_10_31_550w_redacted_memory_total_mode_column() -> None:
    reading = parse_default(
        read("cnmon-8xMLU-v5.10.31-550W-name-and-mem-total-REDACTED-xxxxx.txt"))
    assert reading.version == "5.10.31"
    powers = [105, 100, 100, 109, 107, 105, 102, 105]
    temps = [35, 34, 35, 34, 34, 33, 36, 33]
    # The capture's author replaced the memory size by "xxxxx": no total, no VRAM %.
    assert card_figures(reading.cards) == [
        (i, "MLUXXX-XX", 0.0, 0.0, None, powers[i], 550.0, temps[i]) for i in range(8)]
    assert all(c.mem_pct is None for c in reading.cards)
    assert [c.bus_id for c in reading.cards][:2] == ["0000:4F:00.0", "0000:53:00.0"]
    assert {(c.extras["sriov"], c.extras["compute_mode"]) for c in reading.cards} == {
        ("FULL", "Default")}  # the 5.10.31 "Mode" column
