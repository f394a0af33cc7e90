"""Huawei Ascend ``npu-smi``: every captured sample, every chip, exact figures."""

from __future__ import annotations

import pytest

from gpusat_tui.collectors import npu_smi
from gpusat_tui.collectors.base import card_args
from gpusat_tui.collectors.npu_smi import parse_info, parse_usages
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading
from tests.collector_helpers import (
    card_figures,
    process_rows,
    sample_reader,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import npu_smi as fake

read = sample_reader("ascend")

#: (index, name, bus, util, used, total, power, temp) per chip; cap is never in `npu-smi info`.
Row = tuple[int, str, str, float, float, float, float | None, float]


def check(cards: list[CardReading], rows: list[Row]) -> None:
    assert [c.index for c in cards] == [r[0] for r in rows]
    for card, (index, name, bus, util, used, total, power, temp) in zip(cards, rows, strict=True):
        assert card.vendor == "ascend"
        assert card.tool == "npu-smi"
        assert (card.index, card.name, card.bus_id) == (index, name, bus)
        assert card.util_pct == util
        assert (card.mem_used_mib, card.mem_total_mib) == (used, total)
        assert card.mem_pct == pytest.approx(100.0 * used / total)
        assert card.power_w == power
        assert card.power_cap_w is None
        assert card.temp_c == temp
        assert card.id == f"ascend:{index}"


def test_910a_old_narrow_layout_hbm_is_vram_ddr_in_extras() -> None:
    reading = parse_info(read("npu-smi-info-910A-2npu-21.0.4-paddle-doc.txt"))
    assert reading.version == "21.0.4"
    check(reading.cards, [
        (0, "910A", "0000:C1:00.0", 0.0, 1.0, 32768.0, 70.9, 42.0),
        (1, "910A", "0000:81:00.0", 0.0, 1.0, 32768.0, 67.2, 36.0),
    ])
    assert reading.cards[0].extras["ddr_used_mib"] == 839.0
    assert reading.cards[0].extras["ddr_total_mib"] == 15170.0
    assert reading.cards[1].extras["ddr_used_mib"] == 1274.0
    assert reading.cards[1].extras["ddr_total_mib"] == 15171.0
    assert reading.cards[0].extras["health"] == "OK"
    assert reading.processes == []


def test_310p3_truncated_no_hbm_memory_usage_is_vram_device_column_is_index() -> None:
    reading = parse_info(read("npu-smi-info-310P3-2dev-modelzoo-doc-truncated.txt"))
    assert reading.version is None  # the banner line was cut by the doc authors
    check(reading.cards, [
        (0, "310P3", "0000:82:00.0", 0.0, 1074.0, 21534.0, 15.8, 42.0),
        (1, "310P3", "0000:89:00.0", 0.0, 1070.0, 21534.0, 15.4, 43.0),
    ])
    assert "ddr_used_mib" not in reading.cards[0].extras
    assert reading.processes == []


def test_910b2_eight_npus_with_one_process_each() -> None:
    reading = parse_info(read("npu-smi-info-910B2-8npu-procs-vllm-24.1.rc2.1.txt"))
    assert reading.version == "24.1.rc2.1"
    buses = ["C1", "01", "C2", "02", "81", "41", "82", "42"]
    used = [33429, 33427, 33427, 33428, 33427, 33427, 33426, 33426]
    power = [92.0, 96.0, 93.5, 95.8, 92.6, 97.3, 92.3, 92.4]
    temp = [38, 38, 37, 38, 37, 38, 39, 37]
    check(reading.cards, [
        (i, "910B2", f"0000:{buses[i]}:00.0", 0.0, float(used[i]), 65536.0, power[i],
         float(temp[i]))
        for i in range(8)
    ])
    pids = [784778, 784779, 784780, 784784, 784785, 784786, 784787, 784788]
    assert reading.processes == [
        CardProcess(pid=pids[i], card_id=f"ascend:{i}", name="VLLMWorker_DP",
                    mem_used_mib=30113.0 if i == 6 else 30112.0)
        for i in range(8)
    ]


def test_910b2c_sixteen_npus_no_processes() -> None:
    reading = parse_info(read("npu-smi-info-910B2C-16npu-24.1.rc2.2.txt"))
    assert reading.version == "24.1.rc2.2"
    buses = ["5A", "19", "49", "39", "DA", "99", "B8", "C8",
             "59", "18", "48", "38", "D9", "98", "B9", "C9"]
    used = [3375, 3366, 3367, 3365, 3364, 3366, 3366, 3365,
            3360, 3365, 3364, 3363, 3366, 3364, 3364, 3363]
    power = [94.3, 100.3, 95.1, 92.7, 90.1, 96.9, 91.0, 101.1,
             92.8, 95.8, 91.3, 92.8, 93.7, 100.1, 88.1, 96.5]
    temp = [40, 43, 43, 40, 41, 43, 43, 44, 40, 41, 40, 41, 43, 43, 41, 42]
    check(reading.cards, [
        (i, "910B2C", f"0000:{buses[i]}:00.0", 0.0, float(used[i]), 65536.0, power[i],
         float(temp[i]))
        for i in range(16)
    ])
    assert reading.processes == []


def test_910prob_empty_line_before_process_table_hbm_nearly_full() -> None:
    reading = parse_info(read("npu-smi-info-910ProB-1npu-23.0.rc1-proc-hbm-full.txt"))
    assert reading.version == "23.0.rc1"
    check(reading.cards, [(0, "910ProB", "0000:C1:00.0", 0.0, 30711.0, 32768.0, 78.4, 33.0)])
    assert reading.cards[0].extras["ddr_used_mib"] == 1198.0
    assert reading.cards[0].extras["ddr_total_mib"] == 15137.0
    assert reading.processes == [
        CardProcess(pid=55115, card_id="ascend:0", name="python", mem_used_mib=30784.0)
    ]


def test_a3_two_chips_per_npu_are_two_cards_indexed_by_phy_id() -> None:
    reading = parse_info(read("npu-smi-info-A3-Ascend910-8npu-16chip-25.2.1.txt"))
    assert reading.version == "25.2.1"
    buses = ["9D", "9F", "99", "9B", "95", "97", "91", "93",
             "8D", "8F", "89", "8B", "85", "87", "81", "83"]
    used = [3112, 2887, 3123, 2884, 3110, 2885, 3109, 2883,
            3120, 2876, 3112, 2894, 3114, 2891, 3120, 2880]
    npu_power = [162.2, 167.3, 159.7, 161.3, 163.4, 170.4, 165.4, 168.7]
    temp = [36, 37, 36, 36, 37, 37, 36, 37, 36, 36, 36, 36, 38, 36, 36, 38]
    # Chip 0's row carries the whole module's power; chip 1's row prints "-".
    check(reading.cards, [
        (i, "Ascend910", f"0000:{buses[i]}:00.0", 0.0, float(used[i]), 65536.0,
         npu_power[i // 2] if i % 2 == 0 else None, float(temp[i]))
        for i in range(16)
    ])
    for i, card in enumerate(reading.cards):
        assert card.extras["npu_id"] == float(i // 2)
        assert card.extras["chip_id"] == float(i % 2)
        assert card.extras["power_scope"] == "npu"
        assert card.extras["npu_power_w"] == npu_power[i // 2]
    assert reading.processes == []


def test_usages_query_addresses_a3_chip_by_npu_and_chip_id() -> None:
    (spec,) = npu_smi.SPECS
    usages = next(q for q in spec.queries if q.name == "usages")
    assert usages.optional and usages.per_card
    card = parse_info(read("npu-smi-info-A3-Ascend910-8npu-16chip-25.2.1.txt")).cards[13]
    assert card.index == 13
    assert card_args(usages.args, card) == ("info", "-t", "usages", "-i", "6", "-c", "1")
    assert spec.names == ("npu-smi",)
    assert "/usr/local/Ascend/driver/tools" in spec.search_dirs


def test_usages_910_hbm_chip_id_last() -> None:
    reading = parse_usages(read("npu-smi-info-t-usages-910-32GB-HBM-23.0.5.txt"))
    (card,) = reading.cards
    assert card.index == -1  # unknown to the text; the live source sets it per call
    assert card.util_pct == 0.0
    assert card.mem_total_mib == 32768.0
    assert card.mem_pct == 0.0
    assert card.extras == {
        "ddr_capacity_mib": 13553.0, "ddr_pct": 6.0, "ddr_hugepages_total_pages": 0.0,
        "ddr_hugepages_pct": 0.0, "hbm_capacity_mib": 32768.0, "hbm_pct": 0.0,
        "aicore_pct": 0.0, "aicpu_pct": 0.0, "ctrlcpu_pct": 0.0, "ddr_bw_pct": 0.0,
        "hbm_bw_pct": 0.0, "chip_id": 0.0,
    }


def test_usages_310p_vectorcore_and_dvpp() -> None:
    (card,) = parse_usages(read("npu-smi-info-t-usages-310P-DVPP-vectorcore.txt")).cards
    assert card.util_pct == 0.0
    assert card.mem_total_mib == 21534.0
    assert card.mem_pct == 4.0
    assert card.extras["ctrlcpu_pct"] == 13.0
    assert card.extras["vectorcore_pct"] == 0.0
    assert card.extras["ddr_bw_pct"] == 51.0
    for engine in ("vdec", "vpc", "venc", "jpege", "jpegd"):
        assert card.extras[f"dvpp_{engine}_pct"] == 0.0
    assert card.extras["chip_id"] == 0.0


def test_usages_with_chip_id_first_splits_blocks() -> None:
    text = (
        "NPU ID                         : 0\nChip Count                     : 2\n\n"
        "Chip ID                        : 0\nAicore Usage Rate(%)           : 12\n"
        "Chip ID                        : 1\nAicore Usage Rate(%)           : 34\n"
    )
    cards = parse_usages(text).cards
    assert [(c.extras["chip_id"], c.util_pct) for c in cards] == [(0.0, 12.0), (1.0, 34.0)]


@pytest.mark.parametrize(
    "text",
    ["", "garbage\n\x00\x01", "Usage: npu-smi info <watch|proc|-h|-m|-l|-t type>\n",
     "dcmi model initialized failed, because the device is used. ret is -8020\n"],
)
def test_bad_info_output_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse_info(text)


def test_header_only_is_a_parse_error_and_usages_garbage_too() -> None:
    text = read("npu-smi-info-910B2-8npu-procs-vllm-24.1.rc2.1.txt").splitlines()[:6]
    with pytest.raises(ParseError, match="no NPU rows"):
        parse_info("\n".join(text))
    with pytest.raises(ParseError):
        parse_usages("Error: the device id or chip id is invalid.\n")


def test_truncated_after_line_one_keeps_power_and_temp() -> None:
    lines = read("npu-smi-info-910B2-8npu-procs-vllm-24.1.rc2.1.txt").splitlines()[:7]
    (card,) = parse_info("\n".join(lines)).cards
    assert (card.index, card.power_w, card.temp_c, card.util_pct) == (0, 92.0, 38.0, None)


def test_na_figures_are_none() -> None:
    text = read("npu-smi-info-910B2-8npu-procs-vllm-24.1.rc2.1.txt").replace(
        "| 92.0        38 ", "| NA          NA "
    ).replace("| 0           0    / 0          33429", "| -           0    / 0          NA   ")
    card = parse_info(text).cards[0]
    assert (card.power_w, card.temp_c, card.util_pct, card.mem_used_mib) == (
        None, None, None, None)
    assert card.mem_total_mib == 65536.0


def test_round_trip_through_fake_renderer() -> None:
    cards = [
        FakeCard(index=0, name="910B2", util_pct=87.0, mem_used_mib=60000.0,
                 mem_total_mib=65536.0, power_w=312.5, temp_c=61.0),
        FakeCard(index=1, name="910B2", util_pct=3.0, mem_used_mib=1200.0,
                 mem_total_mib=65536.0, power_w=None, temp_c=44.0),
    ]
    procs = [FakeProcess(pid=4242, name="python", card_index=1, mem_mib=1100.0)]
    reading = parse_info(fake.render_for_args(("info",), cards, procs))
    assert card_figures(reading.cards) == [
        (0, "910B2", 87.0, 60000.0, 65536.0, 312.5, None, 61.0),
        (1, "910B2", 3.0, 1200.0, 65536.0, None, None, 44.0),
    ]
    assert reading.processes == [
        CardProcess(pid=4242, card_id="ascend:1", name="python", mem_used_mib=1100.0)
    ]
    usages = parse_usages(fake.render_for_args(
        ("info", "-t", "usages", "-i", "0", "-c", "0"), cards))
    (card,) = usages.cards
    assert (card.util_pct, card.mem_total_mib, card.mem_pct) == (87.0, 65536.0, 92.0)
    assert card.extras["hbm_bw_pct"] == 0.0
    assert "Usage:" in fake.render_for_args(("info", "-t", "power"), cards)


def test_ansi_codes_around_the_table_are_ignored() -> None:
    text = read("npu-smi-info-910ProB-1npu-23.0.rc1-proc-hbm-full.txt")
    coloured = "\x1b[1m" + text.replace("| OK  ", "| \x1b[32mOK\x1b[0m  ", 1)
    (card,) = parse_info(coloured).cards
    assert (card.index, card.power_w, card.temp_c, card.mem_used_mib) == (0, 78.4, 33.0, 30711.0)
    assert card.extras["health"] == "OK"


# --- npu-smi 25.x ----------------------------------------------------------------------------


def test_25_2_910b3_glued_hbm_value_one_busy_npu() -> None:
    reading = parse_info(read("npu-smi-info-910B3-8npu-25.2.0-NPU4-25pct-proc-glued-HBM.txt"))
    assert reading.version == "25.2.0"
    used = [3407, 3398, 3400, 3400, 21784, 3400, 3401, 3413]
    power = [94.8, 90.5, 90.6, 98.8, 139.7, 95.8, 97.8, 90.8]
    temps = [36, 34, 33, 35, 45, 37, 38, 39]
    assert card_figures(reading.cards) == [
        (i, "910B3", 25.0 if i == 4 else 0.0, used[i], 65536.0, power[i], None, temps[i])
        for i in range(8)]
    assert reading.cards[4].bus_id == "0000:01:00.0"
    assert process_rows(reading.processes) == [(1601114, "ascend:4", "python", 18429.0)]


def test_25_3_a3_sixteen_chips_hbm_held_idle_empty_process_names() -> None:
    reading = parse_info(read(
        "npu-smi-info-A3-Ascend910-16chip-25.3.rc1-8chips-hbm-held-0pct-empty-proc-names.txt"))
    assert reading.version == "25.3.rc1"
    used = [3150, 2886, 3156, 2875, 3149, 2886, 3154, 2875,
            58072, 58039, 58071, 58037, 56896, 57087, 56969, 57132]
    npu_power = [166.6, 161.9, 160.6, 166.3, 171.5, 162.5, 205.0, 195.6]
    temps = [37, 36, 37, 37, 36, 36, 37, 39, 37, 38, 37, 36, 40, 37, 40, 39]
    assert card_figures(reading.cards) == [
        (i, "Ascend910", 0.0, used[i], 65536.0, npu_power[i // 2] if i % 2 == 0 else None,
         None, temps[i]) for i in range(16)]
    assert [c.extras["npu_power_w"] for c in reading.cards][1::2] == npu_power
    rows = process_rows(reading.processes)
    assert rows[:4] == [(1534604, "ascend:8", None, 54963.0), (1539371, "ascend:9", None, 55217.0),
                        (1545073, "ascend:10", None, 54963.0),
                        (1550598, "ascend:11", None, 55217.0)]
    assert len(rows) == 10 and all(name is None for _, _, name, _ in rows)
