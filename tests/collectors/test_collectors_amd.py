"""AMD collectors: amd-smi and rocm-smi parsers on every captured sample, and their fakes."""

from __future__ import annotations

from typing import Any

import pytest

from gpusat_tui.collectors import amd_smi, rocm_smi
from gpusat_tui.collectors.base import merge_cards
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardReading
from tests.collector_helpers import (
    process_rows,
    sample_reader,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import amd_smi as fake_amd
from tests.fakes.formats import rocm_smi as fake_rocm

sample = sample_reader("amd")

Row = tuple[Any, ...]


def figures(card: CardReading) -> Row:
    """(index, name, util, used MiB, total MiB, VRAM %, power, cap, temp) of one card."""
    return (
        card.index, card.name, card.util_pct, card.mem_used_mib, card.mem_total_mib,
        None if card.mem_pct is None else round(card.mem_pct, 2),
        card.power_w, card.power_cap_w, card.temp_c,
    )


# --- amd-smi --------------------------------------------------------------------------------


def test_amd_smi_default_box_r9700_false_100pct() -> None:
    r = amd_smi.parse_default(
        sample("amd-smi-default-2xR9700-26.2.1-rocm7.2-false-100pct-procs.txt")
    )
    name = "...Radeon AI PRO R9700"
    assert r.version == "26.2.1+fc0010cf6a"
    # GFX 100 % on idle cards is what the tool says: kept as is.
    assert [figures(c) for c in r.cards] == [
        (0, name, 100.0, 29777.0, 32624.0, 91.27, 103.0, 300.0, 79.0),
        (1, name, 100.0, 29777.0, 32624.0, 91.27, 92.0, 300.0, 80.0),
    ]
    assert [c.bus_id for c in r.cards] == ["0000:03:00.0", "0000:43:00.0"]
    assert [c.extras for c in r.cards] == [{"mem_util_pct": 1.0}, {"mem_util_pct": 0.0}]
    assert all(c.vendor == "amd" and c.tool == "amd-smi" for c in r.cards)
    kb = 54.7 / 1024
    expected = [
        (213534, "python3.12", kb), (213890, "python3.12", kb),
        (213952, "python3.12", 19.6 * 1024), (213953, "python3.12", 19.1 * 1024),
    ]
    assert process_rows(r.processes) == [
        (pid, f"amd:{gpu}", name_, pytest.approx(mem))
        for gpu in (0, 1) for pid, name_, mem in expected
    ]


def test_amd_smi_monitor_v710_all_columns() -> None:
    r = amd_smi.parse_monitor(sample("amd-smi-monitor-V710-azure-all-columns.txt"))
    assert r.version is None
    assert [figures(c) for c in r.cards] == [
        (0, None, 84.0, 227.0, 25476.0, 0.89, 11.0, None, 43.0)
    ]
    assert r.cards[0].extras == {
        "mem_util_pct": 1.0, "enc_pct": None, "dec_pct": None, "mem_temp_c": 58.0,
        "throttle": "UNTHROTTLED",
    }
    assert r.processes == []


def test_amd_smi_monitor_q_with_process_info() -> None:
    r = amd_smi.parse_monitor(sample("amd-smi-monitor-q-procs-rocm6.2.0-changelog.txt"))
    assert [figures(c) for c in r.cards] == [
        (0, None, 99.0, 1235.0, 16335.0, 7.56, 199.0, None, 103.0)
    ]
    assert r.cards[0].extras["mem_temp_c"] == 84.0
    assert process_rows(r.processes) == [(1564865, "amd:0", "rvs", pytest.approx(1.1 * 1024))]


def test_amd_smi_monitor_ptum_after_version_banner() -> None:
    r = amd_smi.parse_monitor(sample("amd-smi-version-and-monitor-ptum-rocm6.2.2-k8s.txt"))
    assert r.version == "24.6.2+2b02a07"
    assert [figures(c) for c in r.cards] == [(0, None, 1.0, None, None, None, 126.0, None, 40.0)]
    assert r.cards[0].extras == {"mem_util_pct": 0.0, "mem_temp_c": 32.0}


@pytest.mark.parametrize(
    "name",
    [
        "amd-smi-monitor-V710-azure-all-columns.txt",
        "amd-smi-version-and-monitor-ptum-rocm6.2.2-k8s.txt",
    ],
)
def test_amd_smi_default_parser_refuses_other_views(name: str) -> None:
    with pytest.raises(ParseError):
        amd_smi.parse_default(sample(name))


@pytest.mark.parametrize("text", ["", "garbage\n", fake_amd.HELP, "{\n  \"gpu_data\": [\n"])
def test_amd_smi_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        amd_smi.parse_default(text)
    with pytest.raises(ParseError):
        amd_smi.parse_monitor(text)


def test_amd_smi_monitor_truncated_row_has_none_figures() -> None:
    text = sample("amd-smi-monitor-V710-azure-all-columns.txt")
    r = amd_smi.parse_monitor(text[: text.index("84 %")])
    assert [figures(c) for c in r.cards] == [(0, None, None, None, None, None, 11.0, None, 43.0)]


def test_amd_smi_spec_shape() -> None:
    (spec,) = amd_smi.SPECS
    (default,) = spec.queries
    assert (spec.tool, spec.vendor, spec.group, spec.priority) == (
        "amd-smi", "amd", "amd-family", 1
    )
    assert default.args == () and not default.optional
    assert default.fallback is not None and default.fallback.args == ("monitor",)
    assert default.fallback.parse is amd_smi.parse_monitor


AMD_CARDS = [
    FakeCard(0, name="AMD Instinct MI300X", util_pct=100, mem_used_mib=16384,
             mem_total_mib=196592, power_w=None, power_cap_w=750, temp_c=55),
    FakeCard(1, util_pct=3, mem_used_mib=0, power_w=120, power_cap_w=None, temp_c=None),
    FakeCard(2, name="Dead Card", util_pct=None, mem_used_mib=None, mem_total_mib=None,
             power_w=None, power_cap_w=None, temp_c=None),
]
AMD_PROCS = [FakeProcess(4242, "python", 0, 2048), FakeProcess(4243, "pt_worker", 1, 512)]


def test_amd_smi_fake_default_round_trip() -> None:
    r = amd_smi.parse_default(fake_amd.render_for_args((), AMD_CARDS, AMD_PROCS))
    assert [figures(c) for c in r.cards] == [
        (0, "AMD Instinct MI300X", 100.0, 16384.0, 196592.0, 8.33, None, 750.0, 55.0),
        (1, "Fake Card", 3.0, 0.0, 65536.0, 0.0, 120.0, None, None),
        (2, "Dead Card", None, None, None, None, None, None, None),
    ]
    assert process_rows(r.processes) == [(4242, "amd:0", "python", 2048.0),
                                  (4243, "amd:1", "pt_worker", 512.0)]
    assert {len(line) for line in fake_amd.render(AMD_CARDS, AMD_PROCS).splitlines()} == {80}


def test_amd_smi_fake_legacy_falls_back_to_monitor() -> None:
    (spec,) = amd_smi.SPECS
    (default,) = spec.queries
    assert default.fallback is not None
    with pytest.raises(ParseError):
        default.parse(fake_amd.render_for_args(default.args, AMD_CARDS, legacy=True))
    r = default.fallback.parse(fake_amd.render_for_args(default.fallback.args, AMD_CARDS))
    assert [figures(c) for c in r.cards] == [
        (0, None, 100.0, 16384.0, 196592.0, 8.33, None, None, 55.0),
        (1, None, 3.0, 0.0, 65536.0, 0.0, 120.0, None, None),
        (2, None, None, None, None, None, None, None, None),
    ]


# --- rocm-smi table -------------------------------------------------------------------------


def test_rocm_smi_old_layout_3xmi100() -> None:
    r = rocm_smi.parse_table(sample("rocm-smi-3xMI100-old-layout-fbgemm-doc.txt"))
    assert [figures(c) for c in r.cards] == [
        (0, None, 0.0, None, None, 0.0, 37.0, 290.0, 33.0),
        (1, None, 0.0, None, None, 0.0, 39.0, 290.0, 32.0),
        (2, None, 0.0, None, None, 0.0, 37.0, 290.0, 33.0),
    ]
    assert all(c.vendor == "amd" and c.tool == "rocm-smi" for c in r.cards)


def test_rocm_smi_4xmi50_false_100pct_ansi_remnant_header() -> None:
    r = rocm_smi.parse_table(sample("rocm-smi-4xMI50-6.3.3-false-100pct-while-idle.txt"))
    assert [figures(c) for c in r.cards] == [
        (0, None, 100.0, None, None, 8.0, 53.0, 225.0, 44.0),
        (1, None, 100.0, None, None, 3.0, 45.0, 225.0, 48.0),
        (2, None, 100.0, None, None, 3.0, 48.0, 225.0, 44.0),
        (3, None, 100.0, None, None, 4.0, 44.0, 225.0, 44.0),
    ]


def test_rocm_smi_two_lines_per_card() -> None:
    r = rocm_smi.parse_table(sample("rocm-smi-5gpu-RadeonProDuo-RadeonVII-2line-per-card.txt"))
    duo, vii = "Ellesmere [Radeon Pr", "Vega 20 [Radeon VII]"
    assert [figures(c) for c in r.cards] == [
        (0, duo, 0.0, None, None, 0.0, 11.08, 98.0, 30.0),
        (1, duo, 0.0, None, None, 0.0, 20.082, 98.0, 29.0),
        (2, vii, 0.0, None, None, 0.0, 19.0, 250.0, 32.0),
        (3, vii, 0.0, None, None, 0.0, 19.0, 250.0, 33.0),
        (4, vii, 0.0, None, None, 3.0, 24.0, 250.0, 33.0),
    ]


def test_rocm_smi_errors_interleaved_unsupported_cap() -> None:
    r = rocm_smi.parse_table(sample("rocm-smi-680M-iGPU-errors-interleaved.txt"))
    assert [figures(c) for c in r.cards] == [(0, None, 0.0, None, None, 83.0, None, None, 45.0)]


def test_rocm_smi_780m_unsupported_cap() -> None:
    r = rocm_smi.parse_table(sample("rocm-smi-780M-iGPU-Unsupported-pwrcap.txt"))
    assert [figures(c) for c in r.cards] == [(0, None, 0.0, None, None, 4.0, 20.054, None, 45.0)]


def test_rocm_smi_apu_na_clocks_leading_blank_lines() -> None:
    r = rocm_smi.parse_table(sample("rocm-smi-APU-0x1586-NA-clocks.txt"))
    assert [figures(c) for c in r.cards] == [(0, None, 0.0, None, None, 3.0, 13.065, None, 36.0)]


def test_rocm_smi_rx7900xtx_false_100pct_truncated() -> None:
    r = rocm_smi.parse_table(sample("rocm-smi-RX7900XTX-100pct-idle-2line-truncated.txt"))
    assert [figures(c) for c in r.cards] == [
        (0, "0x744c", 100.0, None, None, 37.0, 107.0, 291.0, 48.0)
    ]


def test_rocm_smi_concise_fragment_without_banner() -> None:
    r = rocm_smi.parse_table(sample("rocm-smi-concise-block-2gpu-99pct-fragment.txt"))
    assert [figures(c) for c in r.cards] == [
        (0, None, 99.0, None, None, 57.0, 220.0, 220.0, 53.0),
        (1, None, 63.0, None, None, 5.0, 3.0, 220.0, 26.0),
    ]


@pytest.mark.parametrize(
    "text",
    ["", "garbage\n", "usage: rocm-smi [-h]\nrocm-smi: error: unrecognized arguments: -x\n",
     "ERROR:root:Driver not initialized (amdgpu not found in modules)\n"],
)
def test_rocm_smi_table_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        rocm_smi.parse_table(text)


def test_rocm_smi_table_cut_mid_row_keeps_whole_rows() -> None:
    text = sample("rocm-smi-3xMI100-old-layout-fbgemm-doc.txt")
    r = rocm_smi.parse_table(text[: text.index("1    32.0c") + 20])
    assert [c.index for c in r.cards] == [0]


# --- rocm-smi json and processes ------------------------------------------------------------


def test_rocm_smi_json_4xmi100_string_values() -> None:
    r = rocm_smi.parse_json(sample("rocm-smi-json-4xMI100-rocm6.0.2-telegraf.json.txt"))
    name = "Arcturus GL-XL [Instinct MI100]"
    used, total = 6750208 / 2**20, 34342961152 / 2**20
    assert r.version == "6.3.6"
    assert [figures(c) for c in r.cards] == [
        (0, name, 0.0, used, total, 0.02, 36.0, 290.0, 53.0),
        (1, name, 0.0, used, total, 0.02, 44.0, 290.0, 55.0),
        (2, name, 0.0, used, total, 0.02, 43.0, 290.0, 54.0),
        (3, name, 0.0, used, total, 0.02, 39.0, 290.0, 51.0),
    ]
    assert [c.bus_id for c in r.cards] == [
        "0000:83:00.0", "0000:A3:00.0", "0000:C3:00.0", "0000:E3:00.0"
    ]


def test_rocm_smi_json_enrichment_fills_mib_into_table_cards() -> None:
    table = rocm_smi.parse_table(sample("rocm-smi-3xMI100-old-layout-fbgemm-doc.txt")).cards
    extra = rocm_smi.parse_json(sample("rocm-smi-json-4xMI100-rocm6.0.2-telegraf.json.txt")).cards
    merged = merge_cards(table, extra)
    assert [(c.index, c.mem_used_mib, c.mem_pct, c.power_w) for c in merged] == [
        (0, 6750208 / 2**20, 0.0, 37.0), (1, 6750208 / 2**20, 0.0, 39.0),
        (2, 6750208 / 2**20, 0.0, 37.0),
    ]


@pytest.mark.parametrize("text", ["", "[1, 2]", '{"card0": {"GPU use (%)": "0"', "ERROR"])
def test_rocm_smi_json_garbage(text: str) -> None:
    with pytest.raises(ParseError):
        rocm_smi.parse_json(text)


def test_rocm_smi_json_odd_values_do_not_crash() -> None:
    text = '{"card0": {"GPU use (%)": 5, "PCI Bus": 3, "x": null}, "system": {"Driver version": 6}}'
    r = rocm_smi.parse_json(text)
    assert [(c.index, c.util_pct, c.bus_id) for c in r.cards] == [(0, 5.0, "3")]
    assert r.version == "6"
    with pytest.raises(ParseError):
        rocm_smi.parse_json("[" * 100_000)


def test_rocm_smi_ansi_escapes_in_header_are_ignored() -> None:
    text = sample("rocm-smi-4xMI50-6.3.3-false-100pct-while-idle.txt")
    assert "[3m" in text  # the capture lost the ESC bytes; a real terminal capture has them
    with_esc = text.replace("[3m", "\x1b[3m").replace("[0m", "\x1b[0m")
    assert [figures(c) for c in rocm_smi.parse_table(with_esc).cards] == [
        figures(c) for c in rocm_smi.parse_table(text).cards
    ]
    assert len(rocm_smi.parse_table(with_esc).cards) == 4


def test_rocm_smi_json_dcu_keys_give_no_amd_cards() -> None:
    text = '{"card0": {"DCU use (%)": "0", "DCU memory use (%)": "0"}}'
    assert rocm_smi.parse_json(text).cards == []


def test_rocm_smi_json_numbered_from_card1_is_not_merged() -> None:
    text = '{"card1": {"VRAM Total Memory (B)": "1048576", "VRAM Total Used Memory (B)": "0"}}'
    r = rocm_smi.parse_json(text)
    assert r.cards == [] and r.notes == ["rocm-smi --json numbers cards from card1; not used"]


def test_rocm_smi_showpidgpus_two_procs() -> None:
    r = rocm_smi.parse_pids(sample("rocm-smi-showpidgpus-2procs.txt"))
    assert process_rows(r.processes) == [
        (28154, "amd:0", None, None), (28156, "amd:0", None, None), (28156, "amd:1", None, None)
    ]


def test_rocm_smi_showpidgpus_none() -> None:
    r = rocm_smi.parse_pids(sample("rocm-smi-showpidgpus-none.txt"))
    assert r.processes == [] and r.notes == []


def test_rocm_smi_showpids_kfd_only_cannot_name_cards() -> None:
    r = rocm_smi.parse_pids(sample("rocm-smi-showpids-kfd-table-lowpower-warning.txt"))
    assert r.processes == []
    assert r.notes == [
        "PID 2728 (llama-server) holds 288 MiB on a card rocm-smi did not name",
        "PID 417281 (llama-server) holds 21582 MiB on a card rocm-smi did not name",
        "PID 555979 (llama-server) holds 43095 MiB on a card rocm-smi did not name",
    ]


def test_rocm_smi_kfd_plus_pidgpus_combined() -> None:
    text = (
        sample("rocm-smi-showpids-kfd-table-lowpower-warning.txt")
        + "============================= GPUs Indexed by PID ==============================\n"
        + "PID 417281 is using 1 DRM device(s):\n1 \n"
        + "PID 555979 is using 2 DRM device(s):\n0 1 \n"
    )
    r = rocm_smi.parse_pids(text)
    assert process_rows(r.processes) == [
        (417281, "amd:1", "llama-server", 22630404096 / 2**20),
        (555979, "amd:0", "llama-server", None),
        (555979, "amd:1", "llama-server", None),
    ]
    assert r.notes == ["PID 2728 (llama-server) holds 288 MiB on a card rocm-smi did not name"]


def test_rocm_smi_pids_garbage_is_empty() -> None:
    for text in ("", "garbage\n", "PID x is using y DRM device(s):\n"):
        r = rocm_smi.parse_pids(text)
        assert r.processes == []


def test_rocm_smi_spec_shape() -> None:
    (spec,) = rocm_smi.SPECS
    table, meminfo, pids = spec.queries
    assert (spec.tool, spec.vendor, spec.group, spec.priority) == (
        "rocm-smi", "amd", "amd-family", 2
    )
    assert table.args == () and not table.optional
    assert meminfo.optional and meminfo.args == ("--showmeminfo", "vram", "--json")
    assert pids.optional and pids.args == ("--showpids", "--showpidgpus")


ROCM_CARDS = [
    FakeCard(0, util_pct=100, mem_used_mib=16384, mem_total_mib=65536, power_w=None,
             power_cap_w=225, temp_c=44),
    FakeCard(1, util_pct=0, mem_used_mib=0, power_w=50.5, power_cap_w=None, temp_c=None),
    FakeCard(2, util_pct=None, mem_used_mib=None, power_w=None, power_cap_w=None, temp_c=None),
]
ROCM_PROCS = [FakeProcess(42, "python", 0, 2048), FakeProcess(42, "python", 1, 1024),
              FakeProcess(43, "worker", 1, 512)]


def test_rocm_smi_fakes_round_trip_through_spec_args() -> None:
    (spec,) = rocm_smi.SPECS
    table, meminfo, pids = spec.queries
    cards = table.parse(fake_rocm.render_for_args(table.args, ROCM_CARDS, ROCM_PROCS)).cards
    assert [figures(c) for c in cards] == [
        (0, None, 100.0, None, None, 25.0, None, 225.0, 44.0),
        (1, None, 0.0, None, None, 0.0, 50.5, None, None),
        (2, None, None, None, None, None, None, None, None),
    ]
    extra = meminfo.parse(fake_rocm.render_for_args(meminfo.args, ROCM_CARDS)).cards
    assert [(c.index, c.mem_used_mib, c.mem_total_mib) for c in merge_cards(cards, extra)] == [
        (0, 16384.0, 65536.0), (1, 0.0, 65536.0), (2, None, 65536.0)
    ]
    r = pids.parse(fake_rocm.render_for_args(pids.args, ROCM_CARDS, ROCM_PROCS))
    assert process_rows(r.processes) == [
        (42, "amd:0", "python", None), (42, "amd:1", "python", None),
        (43, "amd:1", "worker", 512.0),
    ]
    assert pids.parse(fake_rocm.render_for_args(pids.args, ROCM_CARDS, ())).processes == []
    with pytest.raises(ParseError):
        table.parse(fake_rocm.render_for_args(("--bogus",), ROCM_CARDS))


# --- amd-smi 26.x default views, rocm-smi on ROCm 7.x ----------------------------------------


def test_amd_smi_26_mi355x_eight_oam_cards_gpuagent_on_each() -> None:
    r = amd_smi.parse_default(
        sample("amd-smi-default-8xMI355X-26.2.0-rocm7.1.1-HIP-OAM-ids-gpuagent.txt"))
    assert r.version == "26.2.0+021c61fc"
    powers = [240, 250, 246, 242, 248, 245, 246, 240]
    temps = [50, 48, 51, 49, 51, 50, 51, 49]
    assert [figures(c) for c in r.cards] == [
        (i, "AMD Instinct MI355X", 0.0, 283.0, 294896.0, 0.1, powers[i], 1400.0, temps[i])
        for i in range(8)]
    assert [c.bus_id for c in r.cards][-1] == "0000:f5:00.0"
    assert process_rows(r.processes) == [(326601, f"amd:{i}", "gpuagent", 0.0) for i in range(8)]


@pytest.mark.parametrize(
    ("name", "version", "row", "bus"),
    [
        ("amd-smi-default-MI300X-VF-26.0.0-rocm7.0.0-guest-no-VBIOS-line.txt", "26.0.0+37d158ab",
         (0, "AMD Instinct MI300X VF", 0.0, 285.0, 196288.0, 0.15, 135.0, 750.0, 37.0),
         "0000:83:00.0"),
        ("amd-smi-default-MI300X-VF-26.2.2-rocm7.2.1-guest-no-proc-box.txt", "26.2.2+1d06e2956f",
         (0, "AMD Instinct MI300X VF", 0.0, 285.0, 196288.0, 0.15, 142.0, 750.0, 39.0),
         "0000:05:00.0"),
        ("amd-smi-default-MI300X-baremetal-26.2.0-rocm7.1.1-no-proc-box.txt", "26.2.0+021c61fc",
         (0, "AMD Instinct MI300X", 0.0, 283.0, 196592.0, 0.14, 129.0, 750.0, 46.0),
         "0000:a6:00.0"),
        ("amd-smi-default-RX7900XTX-26.1.0-builtin-amdgpu-Linuxver-ROCm-NA.txt",
         "26.1.0+b5522cc8-d...",
         (0, "AMD Radeon RX 7900 XTX", 1.0, 2192.0, 24560.0, 8.93, 10.0, 315.0, 43.0),
         "0000:2f:00.0"),
    ],
)
def test_amd_smi_26_single_card_views(name: str, version: str, row: Row, bus: str) -> None:
    r = amd_smi.parse_default(sample(name))
    assert r.version == version
    assert [figures(c) for c in r.cards] == [row]
    assert r.cards[0].bus_id == bus
    assert r.processes == []


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("amd-smi-default-Radeon8060S-26.0.2-kernel6.17-all-NA-161of512MB.txt",
         (0, "Radeon 8060S Graphics", None, 161.0, 512.0, 31.45, None, None, None)),
        ("amd-smi-default-iGPU-0x1586-26.2.0-all-NA-power-N-A-slash-0W.txt",
         (0, "0x1586", None, 1013.0, 65536.0, 1.55, None, None, None)),
    ],
)
def test_amd_smi_26_apus_everything_na_and_no_zero_watt_cap(name: str, row: Row) -> None:
    r = amd_smi.parse_default(sample(name))
    # "N/A/0 W": no power, and a 0 W cap is no cap (a power fraction must never divide by it).
    assert [figures(c) for c in r.cards] == [row]
    assert r.cards[0].power_frac is None


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("rocm-smi-MI300X-100pct-737W-of-750W-VRAM49-junction-DO.txt",
         (0, None, 100.0, None, None, 49.0, 737.0, 750.0, 67.0)),
        ("rocm-smi-MI300X-ROCm7.2.4-idle-155W-narrow-clock-cols.txt",
         (0, None, 0.0, None, None, 0.0, 155.0, 750.0, 40.0)),
        ("rocm-smi-MI300X-VF-smi3.0.0-lib7.5.0-VRAM95-GPU0-trailing-spaces.txt",
         (0, None, 0.0, None, None, 95.0, 191.0, 750.0, 39.0)),
        ("rocm-smi-iGPU-0x1586-lowpower-warning-10.029W-container.txt",
         (0, None, 1.0, None, None, 1.0, 10.029, None, 49.0)),
    ],
)
def test_rocm_smi_rocm7_mi300x_and_apu(name: str, row: Row) -> None:
    r = rocm_smi.parse_table(sample(name))
    assert [figures(c) for c in r.cards] == [row]
