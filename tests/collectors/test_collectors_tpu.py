"""Google TPU ``tpu-info``: every captured sample, every chip, exact figures."""

from __future__ import annotations

from gpusat_tui.collectors import tpu_info
from gpusat_tui.collectors.tpu_info import parse_default
from tests.collector_helpers import (
    card_figures,
    process_rows,
    sample_reader,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import tpu_info as fake

read = sample_reader("tpu")
V6E = "TPU v6e chip"
V4 = "TPU v4 chip"
HBM_V6E = 31.25 * 1024


def test_streaming_frame_global_chip_ids() -> None:
    reading = parse_default(read("tpu-info-streaming-v6e-chip-ids-8-9-12-13.txt"))
    assert reading.version == "0.0.19.dev20250721+nightly"
    assert card_figures(reading.cards) == [
        (0, V6E, 100.0, 17674.24, HBM_V6E, None, None, None),
        (1, V6E, 100.0, 9482.24, HBM_V6E, None, None, None),
        (2, V6E, 100.0, 9482.24, HBM_V6E, None, None, None),
        (3, V6E, 100.0, 9482.24, HBM_V6E, None, None, None),
    ]
    assert [c.extras["chip_id"] for c in reading.cards] == [8, 9, 12, 13]
    assert [c.extras["tensorcore_pct"] for c in reading.cards] == [15.17, 14.62, 14.68, 15.14]
    assert [c.extras["device"] for c in reading.cards] == [f"/dev/vfio/{i}" for i in range(4)]
    assert process_rows(reading.processes) == [(1022, f"tpu:{i}", None, None) for i in range(4)]
    assert reading.notes == []


def test_v6e_duty_cycle_100_left_aligned_warning_panel() -> None:
    reading = parse_default(
        read("tpu-info-v6e-chips-0-1-4-5-duty100-tensorcore8-warning-panel.txt"))
    assert card_figures(reading.cards) == [
        (i, V6E, 100.0, 8642.56, HBM_V6E, None, None, None) for i in range(4)]
    assert [c.extras["chip_id"] for c in reading.cards] == [0, 1, 4, 5]
    assert [c.extras["tensorcore_pct"] for c in reading.cards] == [8.71, 8.56, 8.52, 8.20]
    assert {p.pid for p in reading.processes} == {24}


def test_v4_rich_boxes_two_generations() -> None:
    old = parse_default(read("tpu-info-v4-2024-06-TPU-Chip-Utilization-Core-ID.txt"))
    assert card_figures(old.cards) == [(i, V4, 0.0, 0.0, 30.75 * 1024, None, None, None)
                                       for i in range(4)]
    assert [c.extras["device"] for c in old.cards] == [f"/dev/accel{i}" for i in range(4)]
    assert {p.pid for p in old.processes} == {3786361}
    new = parse_default(read("tpu-info-v4-2024-08-TPU-Utilization-grpc-line.txt"))
    assert card_figures(new.cards) == [(i, V4, 0.0, 0.0, 31.75 * 1024, None, None, None)
                                       for i in range(4)]
    assert {p.pid for p in new.processes} == {130007}


def test_chips_without_a_workload_are_listed_with_a_note() -> None:
    text = read("tpu-info-v4-2024-08-TPU-Utilization-grpc-line.txt").split("Connected")[0]
    reading = parse_default(text)
    assert [(c.index, c.name, c.util_pct, c.mem_total_mib) for c in reading.cards] == [
        (i, V4, None, None) for i in range(4)]
    assert reading.notes == ["tpu-info shows no utilization table (no TPU workload running?)"]


def test_spec_shape() -> None:
    (spec,) = tpu_info.SPECS
    assert (spec.tool, spec.vendor, spec.names) == ("tpu-info", "tpu", ("tpu-info",))
    assert [q.args for q in spec.queries] == [()]


def test_round_trip_through_fake_renderer() -> None:
    cards = [
        FakeCard(index=0, name="TPU v5e chip", util_pct=97.5, mem_used_mib=15360.0,
                 mem_total_mib=16384.0, extras={"tensorcore_pct": 61.0}),
        FakeCard(index=1, name="TPU v5e chip", util_pct=None, mem_used_mib=0.0,
                 mem_total_mib=16384.0),
    ]
    reading = parse_default(fake.render_for_args((), cards, [FakeProcess(7, "python", 0)]))
    assert card_figures(reading.cards) == [
        (0, "TPU v5e chip", 97.5, 15360.0, 16384.0, None, None, None),
        (1, "TPU v5e chip", None, 0.0, 16384.0, None, None, None),
    ]
    assert reading.cards[0].extras["tensorcore_pct"] == 61.0
    assert process_rows(reading.processes) == [(7, "tpu:0", None, None)]
