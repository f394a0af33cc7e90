"""Moore Threads ``mthreads-gmi``: every captured sample, every card, exact figures."""

from __future__ import annotations

from gpusat_tui.collectors import mthreads_gmi
from gpusat_tui.collectors.base import ToolReading
from gpusat_tui.collectors.mthreads_gmi import parse_default
from gpusat_tui.model import CardProcess
from tests.collector_helpers import (
    card_figures,
    sample_reader,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import mthreads_gmi as fake

read = sample_reader("moorethreads")


def figures(reading: ToolReading) -> list[tuple[object, ...]]:
    return [(c.index, c.name, c.bus_id, c.util_pct, c.mem_used_mib, c.mem_total_mib, c.mem_pct,
             c.power_w, c.power_cap_w, c.temp_c) for c in reading.cards]


def test_s80_2_0_0_with_processes() -> None:
    reading = parse_default(read("mthreads-gmi-MTT-S80-2.0.0-drv3.0.0-procs.txt"))
    assert reading.version == "2.0.0"
    assert figures(reading) == [
        (0, "MTT S80", "00000000:01:00.0", 0.0, 662.0, 16384.0, 100.0 * 662 / 16384,
         None, None, 41.0),
    ]
    card = reading.cards[0]
    assert (card.vendor, card.tool) == ("mthreads", "mthreads-gmi")
    assert card.extras == {"device_type": "Physical", "mpc_capable": "YES", "ecc_mode": "N/A"}
    assert reading.processes == [
        CardProcess(pid=1123, card_id="mthreads:0", name="/usr/lib/xorg/Xorg", mem_used_mib=134.0),
        CardProcess(pid=1361, card_id="mthreads:0", name="/usr/sbin/unity-greeter",
                    mem_used_mib=1.0),
    ]


def test_s5000_2_4_1_eight_cards_perf_column() -> None:
    reading = parse_default(read("mthreads-gmi-8xMTT-S5000-2.4.1-drv5.1.0-server.txt"))
    assert reading.version == "2.4.1"
    buses = ["18", "3a", "4b", "5c", "9a", "ba", "ca", "da"]
    temps = [48, 48, 49, 48, 48, 50, 48, 49]
    assert figures(reading) == [
        (i, "MTT S5000", f"00000000:{buses[i]}:00.0", 0.0, 0.0, 81920.0, 0.0, None, None,
         float(temps[i]))
        for i in range(8)
    ]
    for card in reading.cards:
        assert card.extras == {"device_type": "Physical", "perf": "P0", "mpc_capable": "YES",
                               "ecc_mode": "On-die, EDC"}
    assert reading.processes == []


def test_na_figures_are_none() -> None:
    text = read("mthreads-gmi-MTT-S80-2.0.0-drv3.0.0-procs.txt")
    text = text.replace("|0%    662MiB(16384MiB)", "|N/A   N/A").replace("|41C   YES", "|N/A   YES")
    card = parse_default(text).cards[0]
    assert (card.util_pct, card.mem_used_mib, card.mem_total_mib, card.temp_c) == (
        None, None, None, None)
    assert card.name == "MTT S80"


def test_spec_shape() -> None:
    (spec,) = mthreads_gmi.SPECS
    assert (spec.tool, spec.vendor, spec.names) == ("mthreads-gmi", "mthreads", ("mthreads-gmi",))
    assert "/usr/local/musa/bin" in spec.search_dirs


def test_round_trip_through_fake_renderer() -> None:
    cards = [
        FakeCard(index=0, name="MTT S4000", util_pct=97.0, mem_used_mib=40000.0,
                 mem_total_mib=49152.0, temp_c=77.0),
        FakeCard(index=1, name="MTT S80", util_pct=3.0, mem_used_mib=662.0,
                 mem_total_mib=16384.0, temp_c=41.0),
    ]
    procs = [FakeProcess(pid=9001, name="python", card_index=0, mem_mib=39000.0)]
    reading = parse_default(fake.render_for_args((), cards, procs))
    assert card_figures(reading.cards) == [
        (0, "MTT S4000", 97.0, 40000.0, 49152.0, None, None, 77.0),
        (1, "MTT S80", 3.0, 662.0, 16384.0, None, None, 41.0),
    ]
    assert reading.processes == [
        CardProcess(pid=9001, card_id="mthreads:0", name="python", mem_used_mib=39000.0)]
    assert parse_default(fake.render(cards)).processes == []


def test_s5000_2_3_3_fragment_one_card() -> None:
    reading = parse_default(read("mthreads-gmi-MTT-S5000-2.3.3-drv3.3.8-server-fragment.txt"))
    assert reading.version == "2.3.3"
    assert figures(reading) == [
        (0, "MTT S5000", "00000000:18:00.0", 0.0, 0.0, 81920.0, 0.0, None, None, 47.0)]
    assert reading.cards[0].extras == {
        "device_type": "Physical", "perf": "P0", "mpc_capable": "YES", "ecc_mode": "On-die, EDC"}
