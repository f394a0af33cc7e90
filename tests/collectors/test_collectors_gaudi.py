"""Intel Gaudi ``hl-smi``: every captured sample, every card, exact figures."""

from __future__ import annotations

from gpusat_tui.collectors import hl_smi
from gpusat_tui.collectors.hl_smi import parse_default, parse_query
from tests.collector_helpers import (
    card_figures,
    process_rows,
    sample_reader,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import hl_smi as fake

read = sample_reader("gaudi")
#: all-smi's noheader field order (the capture's command line).
ALL_SMI_FIELDS = (
    "index", "uuid", "name", "driver_version", "memory.total", "memory.used", "memory.free",
    "power.draw", "power.max", "temperature.aip", "utilization.aip",
)


def hl225(index: int, util: float, used: float, power: float, temp: float) -> tuple:
    return (index, "HL-225", util, used, 98304.0, power, 600.0, temp)


def test_1_22_1_perf_p0_uncor_events() -> None:
    reading = parse_default(read("hl-smi-8xHL225-1.22.1-P0-UncorEvents-2.txt"))
    assert reading.version == "hl-1.22.1-fw-61.4.2.1"
    assert card_figures(reading.cards) == [
        hl225(0, 0, 768, 88, 22), hl225(1, 0, 768, 83, 22), hl225(2, 0, 768, 94, 25),
        hl225(3, 0, 768, 80, 24), hl225(4, 0, 768, 73, 22), hl225(5, 0, 768, 87, 25),
        hl225(6, 0, 768, 91, 24), hl225(7, 0, 768, 90, 21),
    ]
    assert [c.bus_id for c in reading.cards][:3] == ["0000:33:00.0", "0000:9a:00.0", "0000:34:00.0"]
    assert {(c.extras["perf"], c.extras["uncorrectable"]) for c in reading.cards} == {("P0", "2")}
    assert all(c.vendor == "gaudi" and c.tool == "hl-smi" for c in reading.cards)
    assert reading.processes == []


def test_1_20_squeezed_power_and_memory_held() -> None:
    reading = parse_default(read("hl-smi-8xHL225-1.20.0-drv1.19.1-mem-held-squeezed-power.txt"))
    assert reading.version == "hl-1.20.0-fw-58.1.1.1"
    assert card_figures(reading.cards) == [
        hl225(0, 0, 768, 96, 22), hl225(1, 0, 768, 78, 24), hl225(2, 0, 768, 81, 25),
        hl225(3, 0, 96565, 92, 22), hl225(4, 0, 768, 83, 22), hl225(5, 0, 96564, 80, 21),
        hl225(6, 0, 768, 86, 25), hl225(7, 0, 17538, 100, 30),
    ]
    # The last cell is the memory % on 1.20: not a compute mode.
    assert all("compute_mode" not in c.extras for c in reading.cards)
    assert process_rows(reading.processes) == [(107684, "gaudi:7", "ray::_RayTrainW", 16770.0)]


def test_1_16_unterminated_process_row() -> None:
    reading = parse_default(read("hl-smi-8xHL225-1.16.0-ray-proc-row-unterminated.txt"))
    assert reading.version == "hl-1.16.0-fw-50.1.2.0"
    assert card_figures(reading.cards) == [
        hl225(0, 0, 768, 82, 26), hl225(1, 0, 768, 96, 26), hl225(2, 0, 768, 71, 27),
        hl225(3, 0, 768, 89, 26), hl225(4, 0, 768, 91, 26), hl225(5, 0, 768, 100, 31),
        hl225(6, 0, 27098, 101, 26), hl225(7, 0, 768, 99, 25),
    ]
    assert process_rows(reading.processes) == [(618796, "gaudi:6", "ray::ServeRepli", 26330.0)]


def test_1_12_idle_bus_ids_out_of_order() -> None:
    reading = parse_default(read("hl-smi-8xHL225-1.12.1-idle-gaudi2poc1.txt"))
    assert reading.version == "hl-1.12.1-fw-46.0.5.0"
    assert card_figures(reading.cards) == [
        hl225(0, 0, 768, 84, 30), hl225(1, 0, 768, 87, 28), hl225(2, 1, 768, 93, 30),
        hl225(3, 0, 768, 93, 27), hl225(4, 0, 768, 93, 26), hl225(5, 0, 768, 91, 27),
        hl225(6, 2, 768, 98, 27), hl225(7, 0, 768, 85, 27),
    ]
    assert [c.bus_id for c in reading.cards][:4] == [
        "0000:43:00.0", "0000:44:00.0", "0000:1a:00.0", "0000:19:00.0"]
    assert reading.processes == []  # every row N/A


def test_1_4_1_lowercase_mib_hl205() -> None:
    reading = parse_default(read("hl-smi-8xHL205-1.4.1-rc-Mib-AWS-dl1-docker.txt"))
    assert reading.version == "hl-1.4.1-rc-fw-35.0.2.0"
    utils = [2, 1, 3, 0, 1, 0, 4, 1]
    powers = [102, 101, 105, 97, 101, 93, 108, 101]
    temps = [35, 36, 33, 32, 35, 34, 36, 33]
    assert card_figures(reading.cards) == [
        (i, "HL-205", utils[i], 512.0, 32768.0, powers[i], 350.0, temps[i]) for i in range(8)
    ]
    assert reading.cards[0].extras["compute_mode"] == "N/A"


def test_single_card_and_container_views() -> None:
    one = parse_default(read("hl-smi-1xHL225-1.15.1-rhel9-instructlab.txt"))
    assert one.version == "hl-1.15.1-fw-49.0.0.0"
    assert card_figures(one.cards) == [hl225(0, 0, 768, 93, 29)]
    assert one.cards[0].bus_id == "0000:19:00.0"
    two = parse_default(read("hl-smi-2xHL225-1.17.1-openshift-oc-logs.txt"))
    assert two.version == "hl-1.17.1-fw-51.5.0"
    assert card_figures(two.cards) == [hl225(0, 0, 768, 95, 31), hl225(1, 0, 768, 85, 28)]
    assert [c.bus_id for c in two.cards] == ["0000:4d:00.0", "0000:b4:00.0"]


def test_query_csv_with_header_and_units_gaudi3() -> None:
    reading = parse_query(read("hl-smi-Q-csv-8xHL325L-Gaudi3-1.24.1-uuid-module-id.txt"))
    assert [(c.index, c.name, c.mem_used_mib, c.mem_total_mib, c.util_pct, c.power_w)
            for c in reading.cards] == [
        (i, "HL-325L", 672.0, 131072.0, None, None) for i in range(8)]
    assert reading.cards[0].uuid == "01P4-HL3090A0-18-UAN071-12-03-01"
    assert reading.cards[7].bus_id == "0000:db:00.0"
    assert [c.extras["module_id"] for c in reading.cards] == [1, 3, 2, 6, 0, 7, 5, 4]


def test_query_csv_noheader_power_max() -> None:
    text = read("hl-smi-Q-csv-noheader-2xHL325L-1.22.1-power-max-850W.txt")
    reading = parse_query(text, fields=ALL_SMI_FIELDS)
    assert card_figures(reading.cards) == [
        (0, "HL-325L", 0.0, 672.0, 131072.0, 226.0, 850.0, 36.0),
        (1, "HL-325L", 0.0, 672.0, 131072.0, 230.0, 850.0, 39.0),
    ]
    assert reading.cards[1].uuid == "01P4-HL3090A0-18-U4V298-03-04-04"


def test_query_aip_csv_nounits_no_index_column() -> None:
    reading = parse_query(read("hl-smi-query-aip-csv-nounits-8xHL205-1.18.0.txt"))
    utils = [15, 15, 12, 13, 15, 14, 14, 14]
    powers = [103, 105, 96, 100, 103, 102, 103, 103]
    temps = [36, 34, 33, 32, 34, 30, 31, 38]
    assert card_figures(reading.cards) == [
        (i, "HL-205", utils[i], 512.0, 32768.0, powers[i], None, temps[i]) for i in range(8)
    ]


def test_broken_card_power_sentinel_is_no_figure() -> None:
    text = read("hl-smi-1xHL225-1.15.1-rhel9-instructlab.txt").replace(
        "    93W / 600W", " 65535W / 600W")
    assert parse_default(text).cards[0].power_w is None


def test_spec_shape() -> None:
    (spec,) = hl_smi.SPECS
    assert (spec.tool, spec.vendor, spec.names) == ("hl-smi", "gaudi", ("hl-smi",))
    assert [(q.name, q.optional) for q in spec.queries] == [("default", False), ("query", True)]
    assert spec.queries[1].args[:2] == ("-Q", ",".join(hl_smi.QUERY_FIELDS))


def test_round_trip_through_fake_renderer() -> None:
    cards = [
        FakeCard(index=0, name="HL-325L", util_pct=97.0, mem_used_mib=120000.0,
                 mem_total_mib=131072.0, power_w=780.0, power_cap_w=850.0, temp_c=61.0),
        FakeCard(index=1, name="HL-325L", util_pct=None, mem_used_mib=672.0,
                 mem_total_mib=131072.0, power_w=None, power_cap_w=850.0, temp_c=36.0),
    ]
    procs = [FakeProcess(pid=4242, name="python3", card_index=0, mem_mib=119000.0)]
    reading = parse_default(fake.render_for_args((), cards, procs))
    assert card_figures(reading.cards) == [
        (0, "HL-325L", 97.0, 120000.0, 131072.0, 780.0, 850.0, 61.0),
        (1, "HL-325L", None, 672.0, 131072.0, None, 850.0, 36.0),
    ]
    assert process_rows(reading.processes) == [(4242, "gaudi:0", "python3", 119000.0)]
    query = parse_query(fake.render_for_args(hl_smi.SPECS[0].queries[1].args, cards, procs))
    assert card_figures(query.cards) == card_figures(reading.cards)
    assert query.cards[0].uuid is not None
