"""Kunlunxin ``xpu_smi`` (and Intel's ``xpu-smi``, which must never become a Kunlunxin card)."""

from __future__ import annotations

import pytest

from gpusat_tui.collectors import xpu_smi
from gpusat_tui.collectors.base import merge_cards
from gpusat_tui.collectors.xpu_smi import identify, parse_default, parse_machine
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess
from tests.collector_helpers import (
    SMI_SAMPLES,
    card_figures,
    read_sample,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import xpu_smi as fake

ROOT = SMI_SAMPLES
KUNLUN = ROOT / "kunlunxin"
INTEL_SAMPLES = [
    "xpu-smi-dump-6xMax1550-Aurora-util-NA.txt",
    "xpu-smi-dump-d0-m012-xpumanager-doc.txt",
    "xpu-smi-noargs-help-xpumanager-doc.txt",
    "xpu-smi-v2.0-default-view-B580-1gpu-proc-row.txt",
]


def read(vendor: str, name: str) -> str:
    return read_sample(ROOT / vendor, name)


def test_k200_two_logical_devices_per_card_no_power_no_temp() -> None:
    text = read("kunlunxin", "xpu_smi-K200-4dev-2perCard-4.0.txt")
    assert identify(text) is True
    reading = parse_default(text)
    assert reading.version == "4.0"
    got = [(c.index, c.name, c.bus_id, c.util_pct, c.mem_used_mib, c.mem_total_mib,
            c.power_w, c.power_cap_w, c.temp_c) for c in reading.cards]
    assert got == [
        (0, "K200", "0000:06:00.0", 0.0, 504.0, 8064.0, None, None, None),
        (1, "K200", "0000:06:00.0", 0.0, 504.0, 8064.0, None, None, None),
        (2, "K200", "0001:03:00.0", 0.0, 0.0, 8064.0, None, None, None),
        (3, "K200", "0001:03:00.0", 0.0, 0.0, 8064.0, None, None, None),
    ]
    assert [c.mem_pct for c in reading.cards] == [6.25, 6.25, 0.0, 0.0]
    assert [c.extras["inode"] for c in reading.cards] == [f"/dev/xpu{i}" for i in range(4)]
    assert [c.extras["sn"] for c in reading.cards] == [
        "0200210302000998", "0200210302000998", "0200210202001104", "0200210202001104"]
    assert [(c.extras["l3_used_mb"], c.extras["l3_total_mb"]) for c in reading.cards] == [
        (14.0, 16.0), (14.0, 16.0), (0.0, 16.0), (0.0, 16.0)]
    assert all(c.vendor == "kunlunxin" and c.tool == "xpu_smi" for c in reading.cards)
    assert reading.processes == []


def test_r300_video_section_goes_to_extras() -> None:
    text = read("kunlunxin", "xpu_smi-R300-2dev-video-section-4.31.txt")
    assert identify(text) is True
    reading = parse_default(text)
    assert reading.version == "4.31"
    got = [(c.index, c.name, c.bus_id, c.util_pct, c.mem_used_mib, c.mem_total_mib, c.mem_pct,
            c.power_w, c.power_cap_w, c.temp_c) for c in reading.cards]
    assert got == [
        (0, "R300", "0000:53:00.0", 0.0, 0.0, 32768.0, 0.0, None, None, None),
        (1, "R300", "0000:56:00.0", 0.0, 0.0, 32768.0, 0.0, None, None, None),
    ]
    for card in reading.cards:
        assert (card.extras["dec_pct"], card.extras["enc_pct"], card.extras["imgproc_pct"]) == (
            0.0, 0.0, 0.0)
        assert card.extras["sn"] == "02Kxxx"
    assert reading.processes == []


def test_p800_machine_readable() -> None:
    text = read("kunlunxin", "xpu_smi-m-P800-OAM-2dev-machine-readable.txt")
    assert identify(text) is True
    cards = parse_machine(text).cards
    got = [(c.index, c.name, c.bus_id, c.util_pct, c.mem_used_mib, c.mem_total_mib,
            c.power_w, c.power_cap_w, c.temp_c) for c in cards]
    assert got == [
        (0, "P800 OAM", "00000000:03:00.0", 0.0, 90440.0, 98304.0, 86.0, None, 36.0),
        (1, "P800 OAM", "00000000:05:00.0", 0.0, 90440.0, 98304.0, 86.0, None, 39.0),
    ]
    assert cards[0].mem_pct == pytest.approx(100.0 * 90440 / 98304)
    assert [c.extras["sn"] for c in cards] == ["02K15K624CV00304", "02K15K624CV0030V"]
    # The default-view parser refuses the -m lines instead of inventing cards.
    with pytest.raises(ParseError):
        parse_default(text)


def test_machine_view_fills_power_and_temp_of_default_view() -> None:
    base = parse_default(read("kunlunxin", "xpu_smi-K200-4dev-2perCard-4.0.txt")).cards
    extra = parse_machine(read("kunlunxin", "xpu_smi-m-P800-OAM-2dev-machine-readable.txt")).cards
    merged = merge_cards(base, extra)
    assert [(c.index, c.name, c.power_w, c.temp_c, c.mem_used_mib) for c in merged] == [
        (0, "K200", 86.0, 36.0, 504.0),
        (1, "K200", 86.0, 39.0, 504.0),
        (2, "K200", None, None, 0.0),
        (3, "K200", None, None, 0.0),
    ]


@pytest.mark.parametrize("name", INTEL_SAMPLES)
def test_intel_xpu_smi_is_never_a_kunlunxin_card(name: str) -> None:
    text = read("intel", name)
    assert identify(text) is False
    with pytest.raises(ParseError, match="Intel"):
        parse_default(text)
    with pytest.raises(ParseError, match="Intel"):
        parse_machine(text)


def test_intel_dump_with_ansi_and_help_via_fake() -> None:
    assert identify("\x1b[1m" + read("intel", INTEL_SAMPLES[1])) is False
    assert identify(fake.INTEL_HELP) is False


@pytest.mark.parametrize(
    "text", ["", "garbage \x00\xff\n", "xpu_smi: error while loading shared libraries\n",
             "Runtime Version: 4.0\nDriver Version: 4.0\n  DEVICES\n-----\n"],
)
def test_garbage_is_ours_but_a_parse_error(text: str) -> None:
    # identify() says "not Intel", so a broken Kunlunxin tool still shows up as an error.
    assert identify(text) is True
    with pytest.raises(ParseError):
        parse_default(text)
    with pytest.raises(ParseError):
        parse_machine(text)


def test_na_figures_are_none() -> None:
    text = read("kunlunxin", "xpu_smi-R300-2dev-video-section-4.31.txt").replace(
        "|     0 % | 0 / 63 MB | 0 / 32768 MB |", "|   N/A % | 0 / 63 MB | N/A / N/A MB |", 1)
    card = parse_default(text).cards[0]
    assert (card.util_pct, card.mem_used_mib, card.mem_total_mib, card.mem_pct) == (
        None, None, None, None)


def test_spec_shape() -> None:
    (spec,) = xpu_smi.SPECS
    assert spec.names == ("xpu_smi", "xpu-smi")
    assert spec.identify is identify
    assert [(q.args, q.optional) for q in spec.queries] == [((), False), (("-m",), True)]


def test_round_trip_through_fake_renderer() -> None:
    cards = [
        FakeCard(index=0, name="R300", util_pct=12.0, mem_used_mib=100.0, mem_total_mib=32768.0,
                 power_w=75.0, temp_c=50.0),
        FakeCard(index=1, name="P800 OAM", util_pct=77.0, mem_used_mib=90440.0,
                 mem_total_mib=98304.0, power_w=86.0, temp_c=36.0),
    ]
    procs = [FakeProcess(pid=5151, name="python", card_index=1, mem_mib=2048.0)]
    base = parse_default(fake.render_for_args((), cards, procs))
    assert [(c.index, c.name, c.util_pct, c.mem_used_mib, c.mem_total_mib, c.power_w, c.temp_c)
            for c in base.cards] == [
        (0, "R300", 12.0, 100.0, 32768.0, None, None),
        (1, "P800 OAM", 77.0, 90440.0, 98304.0, None, None),
    ]
    assert base.processes == [
        CardProcess(pid=5151, card_id="kunlunxin:1", name="python", mem_used_mib=2048.0)]
    merged = merge_cards(base.cards, parse_machine(fake.render_for_args(("-m",), cards)).cards)
    assert [(c.power_w, c.power_cap_w, c.temp_c) for c in merged] == [
        (75.0, None, 50.0), (86.0, None, 36.0)]
    assert parse_default(fake.render(cards)).processes == []
    assert "Usage" in fake.render_for_args(("-q",), cards)


# --- P800-era (5.0.21.x) box table: three rows per card --------------------------------------


def p800(index: int, used: float, power: float, temp: float) -> tuple:
    return (index, "P800 OAM", 0.0, used, 98304.0, power, 400.0, temp)


def test_p800_5_0_21_21_three_rows_per_card() -> None:
    reading = parse_default(
        read("kunlunxin", "xpu_smi-8xP800-OAM-5.0.21.21-3line-L3-Usage-SR-IOV-ERNIE-doc.txt"))
    assert reading.version == "5.0.21.21"
    powers = [88, 90, 89, 89, 88, 90, 90, 87]
    temps = [37, 41, 36, 36, 40, 40, 39, 40]
    assert card_figures(reading.cards) == [p800(i, 0, powers[i], temps[i]) for i in range(8)]
    assert reading.cards[0].bus_id == "00000000:03:00.0"
    assert reading.cards[0].extras == {
        "compute_mode": "Default", "l3_used_mb": 0.0, "l3_total_mb": 96.0, "sriov": "Disabled"}
    assert reading.processes == []


def test_p800_5_0_21_26_no_date_space_padded_gap() -> None:
    reading = parse_default(
        read("kunlunxin", "xpu-smi-8xP800-OAM-5.0.21.26-no-date-space-padded-gap-line.txt"))
    assert reading.version == "5.0.21.26"
    powers = [85, 84, 86, 86, 89, 85, 85, 88]
    temps = [38, 40, 45, 44, 49, 41, 43, 42]
    assert card_figures(reading.cards) == [p800(i, 0, powers[i], temps[i]) for i in range(8)]
    assert [c.bus_id for c in reading.cards][-1] == "00000000:AB:00.0"


def test_p800_truncated_memory_held_idle() -> None:
    name = "xpu-smi-P800-OAM-drv515.58-XPU-RT-NA-31058MiB-held-0pct-truncated-4cards.txt"
    reading = parse_default(read("kunlunxin", name))
    assert reading.version == "515.58"
    assert card_figures(reading.cards) == [
        p800(0, 31058, 91, 39), p800(1, 0, 94, 38), p800(2, 0, 93, 44), p800(3, 0, 94, 44)]
    assert [c.bus_id for c in reading.cards] == [
        "00000000:03:00.0", "00000000:16:00.0", "00000000:1C:00.0", "00000000:2E:00.0"]


def test_p800_process_row_by_header_position() -> None:
    text = read("kunlunxin", "xpu-smi-8xP800-OAM-5.0.21.26-no-date-space-padded-gap-line.txt")
    text = text.replace(
        "|  No running processes found                                                 |",
        "|    3   N/A  N/A     123456      C   python3                          61234MiB |")
    assert [(p.pid, p.card_id, p.name, p.mem_used_mib) for p in parse_default(text).processes] == [
        (123456, "kunlunxin:3", "python3", 61234.0)]
