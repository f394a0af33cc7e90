"""Iluvatar CoreX ``ixsmi``: every captured sample, every card, exact figures."""

from __future__ import annotations

from gpusat_tui.collectors import ixsmi
from gpusat_tui.collectors.ixsmi import parse_default
from tests.collector_helpers import (
    card_figures,
    process_rows,
    sample_reader,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import ixsmi as fake

read = sample_reader("iluvatar")
V150 = "Iluvatar BI-V150"
V100 = "Iluvatar BI-V100"


def test_16_chips_power_only_on_odd_chips() -> None:
    reading = parse_default(read("ixsmi-16xBI-V150-IXML4.1.0-power-NA-on-every-other-chip.txt"))
    assert reading.version == "4.1.0"
    temps = [32, 30, 31, 31, 30, 31, 31, 31, 32, 32, 31, 31, 30, 32, 30, 30]
    powers = [None, 93, None, 94, None, 98, None, 95, None, 95, None, 94, None, 93, None, 94]
    assert card_figures(reading.cards) == [
        (i, V150, 0.0, 116.0, 32768.0, powers[i], None if powers[i] is None else 350.0, temps[i])
        for i in range(16)
    ]
    assert reading.cards[15].bus_id == "00000000:67:00.0"
    assert reading.cards[0].extras == {
        "clock_sm_mhz": 1500.0, "clock_mem_mhz": 1600.0, "compute_mode": "Default",
        "fan_pct": 0.0}
    assert reading.processes == []


def test_container_no_timestamp_two_chips() -> None:
    reading = parse_default(read("ixsmi-2xBI-V150-IXML4.3.0-container-no-timestamp.txt"))
    assert reading.version == "4.3.0"
    assert card_figures(reading.cards) == [
        (0, V150, 0.0, 64.0, 32768.0, None, None, 40.0),
        (1, V150, 0.0, 64.0, 32768.0, 104.0, 350.0, 39.0),
    ]
    assert "fan_pct" not in reading.cards[0].extras  # Fan N/A


def test_after_reset_seven_cards_truncated() -> None:
    reading = parse_default(
        read("ixsmi-7xBI-V100-3.0.1-after-gpu-reset-no-proc-section-truncated.txt"))
    assert reading.version == "3.0.1"
    powers = [54, 56, 54, 56, 55, 57, 55]
    temps = [31, 31, 30, 31, 32, 31, 30]
    assert card_figures(reading.cards) == [
        (i, V100, 0.0, 513.0, 32768.0, powers[i], 250.0, temps[i]) for i in range(7)
    ]
    assert [c.bus_id for c in reading.cards][-1] == "00000000:2D:00.0"


def test_broken_chip_sentinel_power_fragment_without_header() -> None:
    reading = parse_default(
        read("ixsmi-8xBI-V100-broken-gpu5-65535W-100pct-fragment-truncated.txt"))
    assert reading.version is None
    assert card_figures(reading.cards) == [
        (4, V100, 0.0, 513.0, 32768.0, 55.0, 250.0, 32.0),
        (5, V100, 100.0, 513.0, 32768.0, None, 250.0, 0.0),
        (6, V100, 0.0, 513.0, 32768.0, 57.0, 250.0, 31.0),
        (7, V100, 0.0, 513.0, 32768.0, 55.0, 250.0, 29.0),
    ]
    broken = reading.cards[1].extras
    assert (broken["power_sentinel"], broken["clock_sm_mhz"], broken["clock_mem_mhz"]) == (
        "65535W", 25.0, 33.0)


def test_single_cards() -> None:
    vm = parse_default(read("ixsmi-BI-V100-16GB-IXML3.2.1-single-vm.txt"))
    assert vm.version == "3.2.1"
    assert card_figures(vm.cards) == [(0, V100, 0.0, 0.0, 16384.0, 58.0, 250.0, 33.0)]
    podman = parse_default(read("ixsmi-BI-V100-IXML4.0.0-drv4.2.0-podman-cdi-padded-day.txt"))
    assert podman.version == "4.0.0"
    assert card_figures(podman.cards) == [(0, V100, 0.0, 9.0, 32768.0, 56.0, 250.0, 35.0)]
    assert podman.cards[0].bus_id == "00000000:00:06.0"
    pod = parse_default(read("ixsmi-BI-V150S-IXML4.0.0-drv4.1.0-k8s-pod-power-NA.txt"))
    assert card_figures(pod.cards) == [
        (0, "Iluvatar BI-V150S", 0.0, 114.0, 32768.0, None, None, 33.0)]
    assert pod.cards[0].extras["clock_sm_mhz"] == 500.0


def test_mr_v100_duo_4_4_wider_first_cell() -> None:
    reading = parse_default(read("ixsmi-MR-V100-DUO-2chip-4.4.0.txt"))
    assert reading.version == "4.4.0"
    assert card_figures(reading.cards) == [
        (0, "Iluvatar MR-V100 DUO", 0.0, 68.0, 32768.0, None, None, 37.0),
        (1, "Iluvatar MR-V100 DUO", 0.0, 68.0, 32768.0, 40.0, 350.0, 36.0),
    ]
    assert reading.processes == []


def test_spec_shape() -> None:
    (spec,) = ixsmi.SPECS
    assert (spec.tool, spec.vendor, spec.names) == ("ixsmi", "iluvatar", ("ixsmi",))
    assert spec.search_dirs[0] == "/usr/local/corex/bin"
    assert [q.args for q in spec.queries] == [()]


def test_round_trip_through_fake_renderer() -> None:
    cards = [
        FakeCard(index=0, name="Iluvatar BI-V150", util_pct=88.0, mem_used_mib=30000.0,
                 mem_total_mib=32768.0, power_w=None, power_cap_w=None, temp_c=61.0),
        FakeCard(index=1, name="Iluvatar BI-V150", util_pct=91.0, mem_used_mib=31000.0,
                 mem_total_mib=32768.0, power_w=301.0, power_cap_w=350.0, temp_c=63.0),
    ]
    procs = [FakeProcess(pid=5151, name="python3", card_index=1, mem_mib=30500.0)]
    reading = parse_default(fake.render_for_args((), cards, procs))
    assert card_figures(reading.cards) == [
        (0, "Iluvatar BI-V150", 88.0, 30000.0, 32768.0, None, None, 61.0),
        (1, "Iluvatar BI-V150", 91.0, 31000.0, 32768.0, 301.0, 350.0, 63.0),
    ]
    assert process_rows(reading.processes) == [(5151, "iluvatar:1", "python3", 30500.0)]
    assert parse_default(fake.render(cards)).processes == []
