"""Hygon DCU: hy-smi's table, DTK's rocm-smi printing the same table, never twice, and fakes."""

from __future__ import annotations

from typing import Any

import pytest

from gpusat_tui.collectors import amd_smi, hy_smi, rocm_smi
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardReading
from tests.collector_helpers import (
    process_rows,
    sample_reader,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import hy_smi as fake

sample = sample_reader("hygon")

Row = tuple[Any, ...]


def figures(card: CardReading) -> Row:
    """(index, util, VRAM %, power, cap, temp); hy-smi shows no name and no MiB."""
    assert card.mem_used_mib is None and card.mem_total_mib is None and card.name is None
    return (card.index, card.util_pct, card.mem_pct, card.power_w, card.power_cap_w, card.temp_c)


def test_hy_smi_8card_hcu_header_no_dec_enc() -> None:
    r = hy_smi.parse_table(sample("hy-smi-8card-idle-400W-no-dec-enc.txt"))
    assert [figures(c) for c in r.cards] == [
        (0, 0.0, 0.0, 114.0, 400.0, 59.0),
        (1, 0.0, 0.0, 109.0, 400.0, 61.0),
        (2, 0.0, 0.0, 106.0, 400.0, 60.0),
        (3, 0.0, 0.0, 107.0, 400.0, 59.0),
        (4, 0.0, 0.0, 118.0, 400.0, 60.0),
        (5, 0.0, 0.0, 113.0, 400.0, 62.0),
        (6, 0.0, 0.0, 106.0, 400.0, 58.0),
        (7, 0.0, 0.0, 115.0, 400.0, 58.0),
    ]
    assert all(c.extras == {"mode": "Normal"} for c in r.cards)
    assert all(c.vendor == "hygon" and c.tool == "hy-smi" for c in r.cards)


def test_hy_smi_bw101_dec_enc_columns() -> None:
    r = hy_smi.parse_table(sample("hy-smi-BW101-1card-dec-enc-cols.txt"))
    assert [figures(c) for c in r.cards] == [(0, 0.0, 0.0, 51.0, 400.0, 46.0)]
    assert r.cards[0].extras == {"dec_pct": 0.0, "enc_pct": 0.0, "mode": "Normal"}


def test_hy_smi_dcu_header_mode_na() -> None:
    r = hy_smi.parse_table(sample("hy-smi-DCU-header-4card-Mode-NA-dtk24.04.txt"))
    assert [figures(c) for c in r.cards] == [
        (0, 0.0, 0.0, 25.0, 300.0, 49.0),
        (1, 0.0, 0.0, 24.0, 300.0, 48.0),
        (2, 0.0, 0.0, 22.0, 300.0, 47.0),
        (3, 0.0, 0.0, 24.0, 300.0, 47.0),
    ]
    assert all(c.extras == {} for c in r.cards)


def test_hy_smi_dcu_header_k100_ai_800w() -> None:
    r = hy_smi.parse_table(
        sample("hy-smi-DCU-header-4xK100_AI-800W-dtk24.04.1-paddlenlp-doc.txt")
    )
    assert [figures(c) for c in r.cards] == [
        (0, 0.0, 0.0, 118.0, 800.0, 49.0),
        (1, 0.0, 0.0, 120.0, 800.0, 48.0),
        (2, 0.0, 0.0, 116.0, 800.0, 53.0),
        (3, 0.0, 0.0, 138.0, 800.0, 49.0),
    ]


def test_rocm_smi_on_dcu_gives_hygon_cards() -> None:
    r = rocm_smi.parse_table(
        sample("rocm-smi-on-DCU-K100-8card-300W-trailing-spaces-flagperf.txt")
    )
    assert [figures(c) for c in r.cards] == [
        (0, 0.0, 0.0, 96.0, 300.0, 53.0),
        (1, 0.0, 0.0, 96.0, 300.0, 53.0),
        (2, 0.0, 0.0, 95.0, 300.0, 54.0),
        (3, 0.0, 0.0, 96.0, 300.0, 55.0),
        (4, 0.0, 0.0, 97.0, 300.0, 54.0),
        (5, 0.0, 0.0, 95.0, 300.0, 54.0),
        (6, 0.0, 0.0, 93.0, 300.0, 55.0),
        (7, 0.0, 0.0, 96.0, 300.0, 54.0),
    ]
    assert {(c.vendor, c.tool) for c in r.cards} == {("hygon", "rocm-smi")}


def test_busy_row_and_na_cells() -> None:
    text = (
        "\n============ System Management Interface ============\n"
        "HCU     Temp     AvgPwr     Perf     PwrCap     VRAM%      HCU%      Mode     \n"
        "0       71.0C    389.0W     auto     400.0W     93%        99.7%     Normal   \n"
        "1       N/A      N/A        auto     N/A        N/A        N/A       N/A      \n"
        "=====================================================\n"
    )
    r = hy_smi.parse_table(text)
    assert [figures(c) for c in r.cards] == [
        (0, 99.7, 93.0, 389.0, 400.0, 71.0),
        (1, None, None, None, None, None),
    ]


@pytest.mark.parametrize(
    "text",
    ["", "garbage\n", "hy-smi: error while loading shared libraries: libhydmi.so\n",
     "==== System Management Interface ====\n"],
)
def test_hy_smi_garbage_raises(text: str) -> None:
    with pytest.raises(ParseError):
        hy_smi.parse_table(text)


def test_hy_smi_header_only_is_no_cards() -> None:
    text = sample("hy-smi-BW101-1card-dec-enc-cols.txt")
    assert hy_smi.parse_table(text[: text.index("\n0 ")]).cards == []


def test_hy_smi_pids_uses_rocm_format_and_dcu_header() -> None:
    text = (
        "KFD process information:\n"
        "PID   \tPROCESS NAME\tDCU(s)\tVRAM USED  \tSDMA USED\tCU OCCUPANCY\t\n"
        "4242  \tpython\t1     \t1073741824 \t0        \t0           \t\n"
        "=======================\n"
        "PID 4242 is using 1 DRM device(s):\n3 \n"
    )
    r = hy_smi.parse_pids(text)
    assert process_rows(r.processes) == [
        (4242, "hygon:3", "python", 1024.0)
    ]
    # DTK's rocm-smi with a DCU header also puts the process on a Hygon card.
    assert [p.card_id for p in rocm_smi.parse_pids(text).processes] == ["hygon:3"]


def test_specs_group_order_means_one_tool_per_machine() -> None:
    """hy-smi, amd-smi and rocm-smi share the group: the live source uses the first found."""
    family = sorted(
        (*hy_smi.SPECS, *amd_smi.SPECS, *rocm_smi.SPECS), key=lambda s: (s.group, s.priority)
    )
    assert {s.group for s in family} == {"amd-family"}
    assert [(s.tool, s.priority) for s in family] == [
        ("hy-smi", 0), ("amd-smi", 1), ("rocm-smi", 2)
    ]
    (spec,) = hy_smi.SPECS
    assert spec.vendor == "hygon" and spec.names == ("hy-smi",)
    assert spec.search_dirs[0] == "/opt/hyhal/bin"
    table, as_json, pids = spec.queries
    assert table.args == () and not table.optional
    assert as_json.optional and as_json.args == ("--showmeminfo", "vram", "--json")
    assert pids.optional and pids.args == ("--showpids", "--showpidgpus")


def test_fake_round_trip_through_spec_args() -> None:
    cards = [
        FakeCard(0, util_pct=99.5, mem_used_mib=32768, mem_total_mib=65536, power_w=389,
                 power_cap_w=400, temp_c=71, extras={"dec_pct": 12.0}),
        FakeCard(1, util_pct=None, mem_used_mib=None, power_w=None, power_cap_w=None,
                 temp_c=None),
    ]
    processes = [FakeProcess(4242, "python", 0, 30000)]
    (spec,) = hy_smi.SPECS
    table, as_json, pids = spec.queries
    r = table.parse(fake.render_for_args(table.args, cards, processes))
    assert [figures(c) for c in r.cards] == [
        (0, 99.5, 50.0, 389.0, 400.0, 71.0),
        (1, None, None, None, None, None),
    ]
    assert r.cards[0].extras == {"dec_pct": 12.0, "enc_pct": 0.0, "mode": "Normal"}
    p = pids.parse(fake.render_for_args(pids.args, cards, processes))
    assert [(x.pid, x.card_id, x.name, x.mem_used_mib) for x in p.processes] == [
        (4242, "hygon:0", "python", 30000.0)
    ]
    with pytest.raises(ParseError):
        table.parse(fake.render_for_args(("--bogus",), cards))
    j = as_json.parse(fake.render_for_args(as_json.args, cards))
    assert [(c.index, c.mem_used_mib, c.mem_total_mib, c.power_w) for c in j.cards] == [
        (0, 32768.0, 65536.0, 389.0), (1, None, 65536.0, None)]


# --- newer layouts: BW1000 on DTK 26.04, 800 W HCU cards, the malformed JSON ----------------


def test_bw1000_dtk26_04_1000w_cap_no_trailing_newline() -> None:
    name = "hy-smi-2xBW1000-DTK26.04-1000W-cap-idle-no-trailing-newline.txt"
    r = hy_smi.parse_table(sample(name))
    assert [figures(c) for c in r.cards] == [
        (0, 0.0, 0.0, 80.0, 1000.0, 50.0), (1, 0.0, 0.0, 89.0, 1000.0, 52.0)]
    assert r.cards[0].extras == {"dec_pct": 0.0, "enc_pct": 0.0, "mode": "Normal"}


def test_hcu_800w_vram_held_at_zero_util() -> None:
    r = hy_smi.parse_table(
        sample("hy-smi-8xHCU-800W-4cards-VRAM98-100pct-held-0pct-trailing-spaces.txt"))
    powers = [131, 134, 131, 133, 133, 135, 133, 135]
    temps = [43, 42, 37, 37, 43, 42, 38, 36]
    vram = [98, 99, 98, 100, 0, 0, 0, 0]
    assert [figures(c) for c in r.cards] == [
        (i, 0.0, vram[i], powers[i], 800.0, temps[i]) for i in range(8)]


def test_hcu_perf_high_idle_power() -> None:
    r = hy_smi.parse_table(sample("hy-smi-8xHCU-800W-perf-high-idle-157-162W.txt"))
    powers = [157, 162, 159, 161, 158, 161, 160, 161]
    temps = [40, 41, 39, 37, 40, 38, 36, 36]
    assert [figures(c) for c in r.cards] == [
        (i, 0.0, 0.0, powers[i], 800.0, temps[i]) for i in range(8)]


def test_malformed_json_missing_commas_is_repaired_once() -> None:
    text = sample("hy-smi-json-2xBW-malformed-missing-commas-98pct-vram-held.json.txt")
    r = hy_smi.parse_json(text)
    assert [(c.index, c.name, c.util_pct, c.mem_used_mib, c.mem_total_mib, c.mem_pct, c.power_w,
             c.temp_c) for c in r.cards] == [
        (0, "BW", 0.0, 64169.0, 65520.0, 98.0, 91.0, 54.0),
        (1, "BW", 0.0, 64104.0, 65520.0, 98.0, 84.0, 52.0),
    ]
    assert r.cards[0].extras == {"junction_c": 57.0, "mem_temp_c": 51.0}
    with pytest.raises(ParseError, match="even with missing commas"):
        hy_smi.parse_json(text.replace('"card1": {', '"card1": {{', 1))
