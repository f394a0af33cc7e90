"""Enflame ``efsmi``: every captured sample, every card, exact figures."""

from __future__ import annotations

from gpusat_tui.collectors import efsmi
from gpusat_tui.collectors.base import merge_cards
from gpusat_tui.collectors.efsmi import parse_default, parse_monitor, parse_query
from tests.collector_helpers import (
    card_figures,
    sample_reader,
)
from tests.fakes import FakeCard
from tests.fakes.formats import efsmi as fake

read = sample_reader("enflame")


def test_v1_2_old_layout_power_without_slash() -> None:
    reading = parse_default(read("efsmi-2xEnflame-S60-V1.2.0.301-old-layout.txt"))
    assert reading.version == "1.2.0.301"
    # The table prints the memory size only: used comes from -q.
    assert card_figures(reading.cards) == [
        (0, "S60", 0.0, None, 49120.0, 105.0, 300.0, 39.0),
        (1, "S60", 0.0, None, 42976.0, 128.0, 300.0, 46.0),
    ]
    assert [c.bus_id for c in reading.cards] == ["00:01:00.0", "00:09:00.0"]
    assert [(c.extras["power_state"], c.extras["ecc"], c.extras["sn"]) for c in reading.cards] == [
        ("Sleep", "Disable", "A073640510015"), ("Active", "Enable", "C807J40510285")]


def test_sriov_vfs_power_na() -> None:
    reading = parse_default(read("efsmi-2xEnflame-S60G-SRIOV-1.6.3.12.txt"))
    assert reading.version == "1.6.3.12"
    assert card_figures(reading.cards) == [
        (0, "Enflame S60G", 0.0, None, 23552.0, None, None, 34.0),
        (1, "Enflame S60G", 0.0, None, 23552.0, None, None, 34.0),
    ]
    assert [c.extras["gcu_virt"] for c in reading.cards] == ["SRIOV", "SRIOV"]
    assert [c.bus_id for c in reading.cards] == ["00:2e:00.0", "00:2f:00.0"]


def test_1_4_eight_cards_celsius_sign() -> None:
    reading = parse_default(read("efsmi-8xEnflame-S60-1.4.0.3-ansible-truncated.txt"))
    assert reading.version == "1.4.0.3"
    powers = [118, 121, 113, 113, 113, 114, 109, 114]
    temps = [71, 74, 65, 70, 66, 68, 63, 66]
    assert card_figures(reading.cards) == [
        (i, "Enflame S60", 0.0, None, 42976.0, powers[i], 300.0, temps[i]) for i in range(8)
    ]


def test_l300_1_7_timestamp_in_border() -> None:
    reading = parse_default(read("efsmi-Enflame-L300-1.7.2.14.txt"))
    assert reading.version == "1.7.2.14"
    assert card_figures(reading.cards) == [
        (0, "Enflame L300", 0.0, None, 147456.0, 68.0, 300.0, 35.0)]
    assert reading.cards[0].extras["power_state"] == "LP1"
    assert reading.cards[0].extras["firmware"] == "40.2.8.3"


def test_query_old_keys_two_devices() -> None:
    reading = parse_query(read("efsmi-q-d-TEMP-MEMORY-USAGE-2dev-S60.txt"))
    assert card_figures(reading.cards) == [
        (0, None, 0.0, 1129.0, 42976.0, None, None, 34.0),
        (1, None, 0.0, 1129.0, 42976.0, None, None, 34.0),
    ]


def test_query_new_keys_elided_second_device() -> None:
    reading = parse_query(read("efsmi-q-S60-1.4.3.4-keyvalue-elided.txt"))
    assert card_figures(reading.cards) == [(0, "S60", 0.0, 0.0, 42976.0, 96.0, 300.0, 35.0)]
    assert reading.cards[0].uuid == "TR6Y46010302"
    assert reading.cards[0].extras["reserved_mib"] == 1129.0


def test_query_fills_used_memory_of_the_table() -> None:
    table = parse_default(read("efsmi-2xEnflame-S60-V1.2.0.301-old-layout.txt")).cards
    query = parse_query(read("efsmi-q-d-TEMP-MEMORY-USAGE-2dev-S60.txt")).cards
    merged = merge_cards(table, query)
    assert [(c.mem_used_mib, c.mem_total_mib, c.temp_c) for c in merged] == [
        (1129.0, 49120.0, 39.0), (1129.0, 42976.0, 46.0)]  # the table's figures win


def test_monitor_view_memory_pct_held_idle() -> None:
    reading = parse_monitor(read("efsmi-dmon-style-7dev-memory-held-idle.txt"))
    assert [(c.index, c.util_pct, c.mem_pct, c.mem_total_mib, c.power_w, c.temp_c)
            for c in reading.cards] == [
        (0, 0.0, 84.1, 42976.0, 101.0, 36.0), (1, 0.0, 83.7, 42976.0, 98.0, 37.0),
        (2, 0.0, 84.5, 42976.0, 101.0, 37.0), (3, 0.0, 84.2, 42976.0, 101.0, 37.0),
        (4, 0.0, 2.6, 42976.0, 101.0, 37.0), (5, 0.0, 2.6, 42976.0, 100.0, 34.0),
        (6, 0.0, 2.6, 42976.0, 100.0, 34.0),
    ]
    assert all(c.mem_used_mib is None for c in reading.cards)  # not made up from the %


def test_spec_shape() -> None:
    (spec,) = efsmi.SPECS
    assert (spec.tool, spec.vendor, spec.names) == ("efsmi", "enflame", ("efsmi",))
    assert [(q.args, q.optional) for q in spec.queries] == [
        ((), False), (("-q", "-d", "TEMP,MEMORY,USAGE"), True)]


def test_round_trip_through_fake_renderer() -> None:
    cards = [
        FakeCard(index=0, name="Enflame S60", util_pct=76.0, mem_used_mib=40000.0,
                 mem_total_mib=42976.0, power_w=250.0, power_cap_w=300.0, temp_c=70.0),
        FakeCard(index=1, name="Enflame S60", util_pct=None, mem_used_mib=1129.0,
                 mem_total_mib=42976.0, power_w=None, power_cap_w=None, temp_c=34.0),
    ]
    table = parse_default(fake.render_for_args((), cards))
    assert card_figures(table.cards) == [
        (0, "Enflame S60", 76.0, None, 42976.0, 250.0, 300.0, 70.0),
        (1, "Enflame S60", None, None, 42976.0, None, None, 34.0),
    ]
    query = parse_query(fake.render_for_args(efsmi.SPECS[0].queries[1].args, cards))
    assert [c.mem_used_mib for c in merge_cards(table.cards, query.cards)] == [40000.0, 1129.0]
