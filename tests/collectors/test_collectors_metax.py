"""MetaX ``mx-smi`` / ``ht-smi``: every captured sample, every card, exact figures."""

from __future__ import annotations

from gpusat_tui.collectors import mx_smi
from gpusat_tui.collectors.base import merge_cards
from gpusat_tui.collectors.mx_smi import parse_default, parse_ht_default, parse_list
from tests.collector_helpers import (
    card_figures,
    process_rows,
    sample_reader,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import mx_smi as fake

read = sample_reader("metax")


def test_2_1_6_power_without_cap_memory_held_idle() -> None:
    reading = parse_default(read("mx-smi-4xMXC500-2.1.6-idle-60GB-held-ray-procs.txt"))
    assert reading.version == "2.1.6"
    assert card_figures(reading.cards) == [
        (0, "MXC500", 0.0, 60982.0, 65536.0, 71.0, None, 51.0),
        (1, "MXC500", 0.0, 60534.0, 65536.0, 76.0, None, 51.0),
        (2, "MXC500", 0.0, 60534.0, 65536.0, 74.0, None, 50.0),
        (3, "MXC500", 0.0, 60534.0, 65536.0, 71.0, None, 50.0),
    ]
    assert reading.cards[0].extras == {}  # empty GPU-State cell
    assert process_rows(reading.processes) == [
        (15652, "metax:0", "python", 60032.0), (22854, "metax:1", "ray::RayWorkerW", 59584.0),
        (22945, "metax:2", "ray::RayWorkerW", 59584.0),
        (23034, "metax:3", "ray::RayWorkerW", 59584.0),
    ]


def test_2_1_6_loaded() -> None:
    reading = parse_default(read("mx-smi-4xMXC500-2.1.6-loaded-33-34pct-ray-workers.txt"))
    assert card_figures(reading.cards) == [
        (0, "MXC500", 34.0, 61292.0, 65536.0, 112.0, None, 54.0),
        (1, "MXC500", 34.0, 60716.0, 65536.0, 118.0, None, 54.0),
        (2, "MXC500", 33.0, 60716.0, 65536.0, 114.0, None, 53.0),
        (3, "MXC500", 33.0, 60716.0, 65536.0, 111.0, None, 53.0),
    ]
    assert process_rows(reading.processes)[0] == (279777, "metax:0", "python", 60352.0)
    assert len(reading.processes) == 4


def test_2_1_12_fifteen_process_rows() -> None:
    reading = parse_default(read("mx-smi-8xMetaX-C500-2.1.12-15-proc-rows-workers-on-gpu0.txt"))
    assert reading.version == "2.1.12"
    used = [5680, 4986, 4986, 4986, 4986, 4986, 4986, 4986]
    utils = [0, 0, 0, 1, 0, 1, 0, 0]
    powers = [69, 70, 69, 71, 70, 68, 73, 71]
    temps = [36, 38, 37, 37, 37, 36, 39, 38]
    assert card_figures(reading.cards) == [
        (i, "MetaX C500", utils[i], used[i], 65536.0, powers[i], 350.0, temps[i])
        for i in range(8)
    ]
    rows = process_rows(reading.processes)
    assert len(rows) == 15
    assert rows[0] == (3496691, "metax:0", "python3.10", 4066.0)
    assert rows[7] == (3496698, "metax:0", "python3.10", 170.0)
    assert rows[14] == (3496698, "metax:7", "python3.10", 4154.0)


def test_2_1_6_c550_no_cap_no_state() -> None:
    reading = parse_default(read("mx-smi-8xMetaX-C550-2.1.6-no-cap-no-state.txt"))
    powers = [44, 46, 47, 46, 46, 47, 46, 47]
    temps = [31, 31, 31, 31, 30, 31, 30, 30]
    assert card_figures(reading.cards) == [
        (i, "MXC550", 0.0, 810.0, 65536.0, powers[i], None, temps[i]) for i in range(8)
    ]
    assert reading.processes == []


def test_2_2_4_c550_450w_cap() -> None:
    reading = parse_default(read("mx-smi-8xMetaX-C550-2.2.4-450W-cap.txt"))
    assert reading.version == "2.2.4"
    powers = [53, 53, 54, 54, 53, 55, 56, 56]
    temps = [29, 29, 30, 29, 30, 32, 32, 31]
    assert card_figures(reading.cards) == [
        (i, "MetaX C550", 0.0, 858.0, 65536.0, powers[i], 450.0, temps[i]) for i in range(8)
    ]
    assert {c.extras["state"] for c in reading.cards} == {"Available"}
    assert reading.cards[7].bus_id == "0000:d7:00.0"


def test_single_gpu_views() -> None:
    c500 = parse_default(read("mx-smi-MetaX-C500-1gpu-2.2.4.txt"))
    assert card_figures(c500.cards) == [(0, "MetaX C500", 0.0, 858.0, 65536.0, 48.0, 350.0, 45.0)]
    pod = parse_default(read("mx-smi-MetaX-C550-2.1.12-k8s-pod-MACA-unknown-cap-NA.txt"))
    assert pod.version == "2.1.12"
    assert card_figures(pod.cards) == [(0, "MetaX C550", 0.0, 858.0, 65536.0, 97.0, None, 34.0)]


def test_board_layout_2_2_9_and_2_3_1() -> None:
    odd = parse_default(read("mx-smi-MetaX-C500-2.2.9-KMD3.0.11-P9-GPU-Util-twice-header.txt"))
    assert odd.version == "2.2.9"
    assert card_figures(odd.cards) == [(0, "MetaX C500", 0.0, 0.0, 65536.0, 50.0, 350.0, 35.0)]
    assert (odd.cards[0].extras["perf"], odd.cards[0].extras["state"]) == ("P9", "Available")
    new = parse_default(read("mx-smi-MetaX-C500-2.3.1-board-name-layout.txt"))
    assert new.version == "2.3.1"
    assert card_figures(new.cards) == [(0, "MetaX C500", 0.0, 826.0, 65536.0, 37.0, 350.0, 32.0)]
    assert new.cards[0].bus_id == "0000:12:00.0"


def test_ht_smi_mars() -> None:
    eight = parse_ht_default(read("ht-smi-8xMars-X201-2.2.9-HPCC.txt"))
    assert eight.version == "2.2.9"
    powers = [38, 37, 36, 43, 36, 37, 37, 44]
    temps = [34, 35, 33, 34, 34, 35, 32, 34]
    assert card_figures(eight.cards) == [
        (i, "Mars X201", 0.0, 858.0, 65536.0, powers[i], 350.0, temps[i]) for i in range(8)
    ]
    assert {c.tool for c in eight.cards} == {"ht-smi"}
    one = parse_ht_default(read("ht-smi-Mars-X201-1gpu-2.3.1.txt"))
    assert one.version == "2.3.1"
    assert card_figures(one.cards) == [(0, "Mars X201", 0.0, 858.0, 65536.0, 38.0, 350.0, 44.0)]


def test_board_and_gpu_numbers_differ() -> None:
    text = read("mx-smi-MetaX-C500-2.3.1-board-name-layout.txt").replace(
        "| 0     MetaX C500 | 0           Off |", "| 1     MetaX C500 | 3           Off |")
    card = parse_default(text).cards[0]
    assert (card.index, card.extras["board"]) == (3, 1.0)


def test_list_fragment_gives_uuids() -> None:
    reading = parse_list(read("mx-smi-L-2.2.9-fragment.txt"))
    assert [(c.index, c.name, c.bus_id, c.uuid, c.extras["state"]) for c in reading.cards] == [
        (0, "MXC500", "0000:08:00.0", "GPU-e702f06b-bbd6-bc06-5196-90a5554a24ba", "Available"),
        (7, "MXC500", "0000:3c:00.0", "GPU-0e715b45-bcef-1500-e2db-752724095700", "Available"),
    ]


def test_spec_shape_one_group_mx_smi_first() -> None:
    mx, ht = mx_smi.SPECS
    assert (mx.tool, mx.vendor, mx.group, mx.priority) == ("mx-smi", "metax", "metax", 0)
    assert (ht.tool, ht.vendor, ht.group, ht.priority) == ("ht-smi", "metax", "metax", 1)
    assert [(q.args, q.optional) for q in mx.queries] == [((), False), (("-L",), True)]


def test_round_trip_through_fake_renderer() -> None:
    cards = [
        FakeCard(index=0, name="MetaX C500", util_pct=95.0, mem_used_mib=60000.0,
                 mem_total_mib=65536.0, power_w=310.0, power_cap_w=350.0, temp_c=66.0),
        FakeCard(index=1, name="MetaX C500", util_pct=None, mem_used_mib=858.0,
                 mem_total_mib=65536.0, power_w=None, power_cap_w=None, temp_c=None),
    ]
    procs = [FakeProcess(pid=3131, name="python3.10", card_index=0, mem_mib=59000.0)]
    reading = parse_default(fake.render_for_args((), cards, procs))
    assert card_figures(reading.cards) == [
        (0, "MetaX C500", 95.0, 60000.0, 65536.0, 310.0, 350.0, 66.0),
        (1, "MetaX C500", None, 858.0, 65536.0, None, None, None),
    ]
    assert process_rows(reading.processes) == [(3131, "metax:0", "python3.10", 59000.0)]
    listed = parse_list(fake.render_for_args(("-L",), cards))
    assert [c.uuid for c in merge_cards(reading.cards, listed.cards)] == [
        c.uuid for c in listed.cards]
