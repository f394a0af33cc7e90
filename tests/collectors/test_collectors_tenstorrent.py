"""Tenstorrent ``tt-smi -s``: every public fragment, exact figures. The parser is UNTESTED against
a full real snapshot (none is public); these tests pin what the fragments show."""

from __future__ import annotations

from gpusat_tui.collectors import tt_smi
from gpusat_tui.collectors.tt_smi import parse_snapshot
from tests.collector_helpers import (
    card_figures,
    sample_reader,
)
from tests.fakes import FakeCard
from tests.fakes.formats import tt_smi as fake

read = sample_reader("tenstorrent")
CUT_NOTE = "tt-smi -s output was cut short; read up to its last complete value"


def test_p300c_string_values_with_leading_spaces() -> None:
    reading = parse_snapshot(
        read("tt-smi-s-p300c-1dev-trimmed-string-values-leading-spaces.json.txt"))
    assert card_figures(reading.cards) == [(0, "p300c", None, None, None, 16.0, None, 34.8)]
    card = reading.cards[0]
    assert (card.vendor, card.tool, card.bus_id) == ("tenstorrent", "tt-smi", "0000:04:00.0")
    assert card.extras == {
        "untested_parser": "tt-smi", "aiclk_mhz": 800.0, "voltage_v": 0.72, "current_a": 23.0,
        "fan_pct": 38.0, "board_power_limit": 550.0}
    assert reading.notes == []


def test_registers_stand_in_for_missing_telemetry() -> None:
    text = read("tt-smi-s-p300c-1dev-trimmed-string-values-leading-spaces.json.txt")
    text = text.replace('"power": " 16.0"', '"power": null').replace(
        '"asic_temperature": "34.8"', '"asic_temperature": "N/A"')
    card = parse_snapshot(text).cards[0]
    assert (card.power_w, card.temp_c) == (16.0, 34.83)  # TDP 0x10, 0x22d522 / 65536


def test_p150a_fragment_cut_mid_registers() -> None:
    reading = parse_snapshot(read("tt-smi-s-p150a-3.0.20-host-sw-vers-fragment.json.txt"))
    assert reading.version == "3.0.20"
    assert card_figures(reading.cards) == [(0, None, None, None, None, None, None, None)]
    assert reading.cards[0].extras["board_id"] == "0x40331914049"
    assert reading.notes == [CUT_NOTE]


def test_wormhole_2024_prefixed_register_names() -> None:
    reading = parse_snapshot(
        read("tt-smi-s-wormhole-2024-TTKMD1.27.1-SMBUS_TX-keys-fragment.json.txt"))
    assert reading.version is None  # no host_sw_vers block before tt-smi 3.0.4
    assert card_figures(reading.cards) == [(0, None, None, None, None, None, None, None)]
    assert reading.cards[0].extras["board_id"] == "0x10001851170c06c"
    assert reading.notes == [CUT_NOTE]


def test_spec_shape_marked_untested() -> None:
    (spec,) = tt_smi.SPECS
    assert (spec.tool, spec.vendor, spec.names, spec.untested) == (
        "tt-smi", "tenstorrent", ("tt-smi",), True)
    assert [q.args for q in spec.queries] == [("-s",)]


def test_round_trip_through_fake_renderer() -> None:
    cards = [FakeCard(index=0, name="n300", power_w=120.0, temp_c=61.5),
             FakeCard(index=1, name="n300", power_w=None, temp_c=None)]
    reading = parse_snapshot(fake.render_for_args(("-s",), cards))
    assert card_figures(reading.cards) == [
        (0, "n300", None, None, None, 120.0, None, 61.5),
        (1, "n300", None, None, None, None, None, None),
    ]
    assert reading.version == "3.0.20"
