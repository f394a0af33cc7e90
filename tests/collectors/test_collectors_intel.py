"""Intel ``xpu-smi`` (XPU Manager): every captured sample, every card, exact figures; never a
Kunlunxin card and never confused with Kunlunxin's tool of the same name."""

from __future__ import annotations

import pytest

from gpusat_tui.collectors import intel_xpu_smi
from gpusat_tui.collectors.base import merge_cards
from gpusat_tui.collectors.intel_xpu_smi import (
    DUMP_ARGS,
    identify,
    parse_default,
    parse_discovery,
    parse_dump,
    parse_stats,
)
from gpusat_tui.errors import ParseError
from tests.collector_helpers import (
    card_figures,
    process_rows,
    read_sample,
    samples_dir,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import intel_xpu_smi as fake
from tests.fakes.formats import xpu_smi as kunlun_fake

SAMPLES = samples_dir("intel")
KUNLUN = samples_dir("kunlunxin")


def read(name: str) -> str:
    return read_sample(SAMPLES, name)


def test_v2_default_table_arc_b580_with_process() -> None:
    reading = parse_default(read("xpu-smi-v2.0-default-view-B580-1gpu-proc-row.txt"))
    assert reading.version == "2.0"
    assert card_figures(reading.cards) == [
        (0, "Intel(R) Arc(TM) B580", 0.0, 239.0, 12216.0, 66.0, 380.0, 25.0)]
    card = reading.cards[0]
    assert (card.vendor, card.tool, card.bus_id) == ("intel", "intel-xpu-smi", "0000:03:00.0")
    assert process_rows(reading.processes) == [(2874292, "intel:0", "xpu-smi", 206.0)]


def test_dump_max1100_all_metrics() -> None:
    reading = parse_dump(read("xpu-smi-dump-2xMax1100-m0-1-2-3-4-5-18-slurm-monitor.txt"))
    assert [(c.index, c.util_pct, c.power_w, c.temp_c, c.mem_used_mib, c.mem_pct,
             c.extras["freq_mhz"]) for c in reading.cards] == [
        (0, 0.0, 118.87, None, 27.99, 0.05, 1550.0),
        (1, 0.0, 118.10, None, 27.99, 0.05, 1550.0),
    ]
    second = parse_dump(read("xpu-smi-dump-2xMax1100-second-sample-conftest.txt"))
    assert [(c.index, c.util_pct, c.power_w, c.mem_used_mib, c.extras["freq_mhz"])
            for c in second.cards] == [(0, 0.0, 106.60, 28.02, 0.0), (1, 0.01, 105.25, 28.02, 0.0)]


def test_dump_aurora_rounds_last_row_wins_util_na() -> None:
    reading = parse_dump(read("xpu-smi-dump-6xMax1550-Aurora-util-NA.txt"))
    assert [(c.index, c.util_pct, c.power_w, c.mem_pct) for c in reading.cards] == [
        (0, None, 280.21, 11.15), (1, None, 287.58, 11.53), (2, None, 277.82, 12.56),
        (3, None, 281.84, 12.00), (4, None, 280.40, 11.78), (5, None, 285.54, 11.78),
    ]


def test_dump_doc_three_metrics() -> None:
    reading = parse_dump(read("xpu-smi-dump-d0-m012-xpumanager-doc.txt"))
    assert [(c.index, c.util_pct, c.power_w, c.temp_c, c.extras["freq_mhz"])
            for c in reading.cards] == [(0, 0.0, 14.61, None, 0.0)]


def test_discovery_pvc_and_b580() -> None:
    pvc = parse_discovery(read("xpu-smi-discovery-d-PVC-0x020a-2tiles-xelink-doc.txt")).cards[0]
    assert (pvc.index, pvc.name, pvc.uuid, pvc.bus_id, pvc.mem_total_mib) == (
        0, "Intel(R) Graphics [0x020a]", "00000000-0000-0000-0000-020a00008086", "0000:4d:00.0",
        32768.0)
    arc = parse_discovery(read("xpu-smi-v2.0-discovery-d0-B580-detail.txt")).cards[0]
    assert (arc.index, arc.name, arc.uuid, arc.bus_id, arc.mem_total_mib) == (
        0, "Intel(R) Arc(TM) B580 Graphics", "00000000-0000-0003-0000-0000e20b8086",
        "0000:03:00.0", 12216.0)


def test_stats_empty_cells_are_no_figure() -> None:
    card = parse_stats(read("xpu-smi-stats-d0-doc-2024-empty-cells.txt")).cards[0]
    assert (card.index, card.util_pct, card.power_w, card.temp_c, card.mem_used_mib,
            card.mem_pct, card.extras["freq_mhz"]) == (0, 0.0, 15.0, 41.0, 24.0, 0.0, 2050.0)


def test_help_text_is_refused_so_the_dump_fallback_is_used() -> None:
    with pytest.raises(ParseError, match="help text"):
        parse_default(read("xpu-smi-noargs-help-xpumanager-doc.txt"))
    (spec,) = intel_xpu_smi.SPECS
    assert spec.queries[0].fallback is not None
    assert spec.queries[0].fallback.args == DUMP_ARGS


def test_dump_then_discovery_fill_a_card() -> None:
    dump = parse_dump(read("xpu-smi-dump-2xMax1100-m0-1-2-3-4-5-18-slurm-monitor.txt")).cards
    detail = parse_discovery(read("xpu-smi-discovery-d-PVC-0x020a-2tiles-xelink-doc.txt")).cards
    merged = merge_cards(dump, detail)
    assert (merged[0].mem_total_mib, merged[0].name) == (32768.0, "Intel(R) Graphics [0x020a]")
    assert merged[0].mem_pct == 0.05  # the tool's own percentage stands
    assert merged[1].mem_total_mib is None  # discovery named device 0 only


def test_identify_refuses_every_kunlunxin_capture_only() -> None:
    for path in sorted(KUNLUN.iterdir()):
        assert identify(path.read_text("utf-8")) is False, path.name
    assert identify(kunlun_fake.render([FakeCard(index=0)])) is False
    for path in sorted(SAMPLES.iterdir()):
        assert identify(path.read_text("utf-8")) is True, path.name
    assert identify("") is True and identify("garbage\n") is True  # a broken tool is ours


def test_spec_shape() -> None:
    (spec,) = intel_xpu_smi.SPECS
    assert (spec.tool, spec.vendor, spec.names) == ("intel-xpu-smi", "intel", ("xpu-smi",))
    assert spec.env_var == "GPUSAT_TOOL_INTEL_XPU_SMI"
    assert [(q.name, q.optional, q.per_card) for q in spec.queries] == [
        ("default", False, False), ("discovery", True, True), ("stats", True, True)]


def test_round_trip_through_fake_renderers() -> None:
    cards = [
        FakeCard(index=0, name="Intel(R) Data Center GPU Max 1100", util_pct=87.0,
                 mem_used_mib=40000.0, mem_total_mib=49152.0, power_w=290.0, power_cap_w=300.0,
                 temp_c=64.0),
        FakeCard(index=1, name="Intel(R) Arc(TM) B580", util_pct=None, mem_used_mib=239.0,
                 mem_total_mib=12216.0, power_w=None, power_cap_w=None, temp_c=None),
    ]
    procs = [FakeProcess(pid=777, name="python", card_index=0, mem_mib=39000.0)]
    table = parse_default(fake.render_for_args((), cards, procs))
    assert card_figures(table.cards) == [
        (0, "Intel(R) Data Center G", 87.0, 40000.0, 49152.0, 290.0, 300.0, 64.0),
        (1, "Intel(R) Arc(TM) B580", None, 239.0, 12216.0, None, None, None),
    ]
    assert process_rows(table.processes) == [(777, "intel:0", "python", 39000.0)]
    dump = parse_dump(fake.render_for_args(DUMP_ARGS, cards))
    assert [(c.util_pct, c.power_w, c.temp_c, c.mem_used_mib) for c in dump.cards] == [
        (87.0, 290.0, 64.0, 40000.0), (None, None, None, 239.0)]
    found = parse_discovery(fake.render_for_args(("discovery", "-d", "0"), cards)).cards[0]
    assert (found.name, found.mem_total_mib) == ("Intel(R) Data Center GPU Max 1100", 49152.0)
    stats = parse_stats(fake.render_for_args(("stats", "-d", "1"), cards)).cards[0]
    assert (stats.index, stats.mem_used_mib, stats.temp_c) == (1, 239.0, None)
    with pytest.raises(ParseError, match="help text"):
        parse_default(fake.render_v1_for_args((), cards))
