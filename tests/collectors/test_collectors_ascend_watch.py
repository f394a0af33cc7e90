"""Huawei Ascend ``npu-smi info watch`` (npu-smi's loop mode): every captured sample, every
row through the stream framer, exact figures."""

from __future__ import annotations

from typing import Any

import pytest

from gpusat_tui.collectors.loops import loop_stream
from gpusat_tui.collectors.npu_smi_watch import WATCH_STREAM, parse_watch
from gpusat_tui.errors import ParseError
from tests.collector_helpers import (
    parse_or_refuse,
    read_sample,
    samples_dir,
)

SAMPLES = samples_dir("ascend")
WATCH_SAMPLES = sorted(p.name for p in SAMPLES.glob("npu-smi-info-watch-*"))


def read(name: str) -> str:
    return read_sample(SAMPLES, name)


def records(text: str) -> list[str]:
    """What the stream hands the parser: the framer fed line by line, then a pause."""
    framer = WATCH_STREAM.framer()
    out: list[str] = []
    for line in text.splitlines():
        out.extend(framer.feed(line))
    return out + framer.flush()


def rows(text: str) -> list[tuple[Any, ...]]:
    reading = parse_watch(text)
    assert all((c.vendor, c.tool, c.mem_used_mib, c.mem_total_mib, c.power_cap_w) ==
               ("ascend", "npu-smi", None, None, None) for c in reading.cards)
    return [(c.index, c.power_w, c.temp_c, c.util_pct, c.mem_pct, c.extras)
            for c in reading.cards]


def test_310b_devboard_one_chip_twelve_samples_with_aicore_bursts() -> None:
    text = read("npu-smi-info-watch-310B-devboard-aicore-bursts.txt")
    samples = [
        (8.7, 55, 0, 2, 64, 71, 7), (8.7, 56, 25, 2, 67, 71, 7), (8.8, 56, 0, 2, 64, 73, 13),
        (8.7, 55, 0, 1, 66, 71, 7), (8.7, 55, 0, 1, 63, 73, 12), (8.8, 56, 0, 2, 65, 71, 7),
        (8.8, 55, 0, 2, 63, 72, 14), (8.7, 56, 0, 2, 63, 71, 7), (8.7, 56, 24, 2, 64, 71, 7),
        (8.7, 55, 0, 1, 64, 73, 13), (8.7, 55, 0, 2, 62, 71, 7), (8.7, 55, 23, 3, 62, 71, 6),
    ]
    got = [rows(record) for record in records(text)]
    assert got == [
        [(0, p, t, u, mem, {"npu_id": 0.0, "chip_id": 0.0, "aicpu_pct": cpu,
                            "ctrlcpu_pct": ctrl, "mem_bw_pct": bw})]
        for p, t, u, cpu, ctrl, mem, bw in samples
    ]
    assert rows(text) == got[-1]  # the whole capture reads as its newest sample


def test_eight_npus_newer_columns_without_chip_id() -> None:
    text = read("npu-smi-info-watch-8npu-doc-NPUUtil-AICube-cols.txt")
    power = [290.4, 292.1, 291.2, 292.1, 291.5, 289.5, 288.5, 289.3]
    temp = [51, 49, 49, 49, 49, 50, 48, 51]
    ctrl = [16, 4, 7, 3, 4, 6, 8, 14]
    expected = [
        (i, power[i], temp[i], 0.0, 3.0, {"npu_id": float(i), "aicpu_pct": 0.0,
                                          "ctrlcpu_pct": ctrl[i], "mem_bw_pct": 0.0,
                                          "npu_util_pct": 0.0, "aicube_pct": 0.0})
        for i in range(8)
    ]
    (record,) = records(text)  # one sample of eight rows
    assert rows(record) == rows(text) == expected


def test_910_npu_2_thirty_one_samples_idle_aicore_power_moving() -> None:
    text = read("npu-smi-info-watch-i2-910-training-idle-aicore.txt")
    power = [90.1, 90.2, 90.3, 90.2, 90.2, 90.2, 90.2, 90.2, 90.2, 90.2, 97.6, 90.7, 90.1, 90.1,
             98.1, 98.1, 98.0, 98.1, 98.2, 98.3, 100.1, 99.4, 98.2, 98.2, 90.2, 93.2, 93.0, 90.2,
             90.2, 90.2, 90.2]
    ctrl = [2, 0, 0, 1, 2, 1, 1, 0, 1, 3, 16, 0, 0, 2, 6, 2, 1, 3, 4, 2, 1, 0, 2, 0, 4, 0, 3,
            11, 3, 3, 0]
    temp = [34.0] * 31
    temp[21] = 35.0
    got = [rows(record) for record in records(text)]
    assert got == [
        [(2, power[i], temp[i], 0.0, 5.0, {"npu_id": 2.0, "chip_id": 0.0, "aicpu_pct": 0.0,
                                           "ctrlcpu_pct": float(ctrl[i]), "mem_bw_pct": 0.0})]
        for i in range(31)
    ]


def test_two_chips_of_one_npu_are_two_cards_by_position() -> None:
    header = read("npu-smi-info-watch-310B-devboard-aicore-bursts.txt").splitlines()[0]
    text = f"{header}\n0  0  90.0  40  50  1  2  3  4\n0  1  -  41  60  1  2  3  4\n"
    (record,) = records(text)
    assert [(i, p, u, e["chip_id"]) for i, p, _, u, _, e in rows(record)] == [
        (0, 90.0, 50.0, 0.0), (1, None, 60.0, 1.0),
    ]


@pytest.mark.parametrize("text", ["", "Usage: npu-smi info watch", "NpuID(Idx)  Pwr(W)\n0 1 2\n"])
def test_not_a_watch_sample_is_refused(text: str) -> None:
    with pytest.raises(ParseError):
        parse_watch(text)


def test_the_watch_stream_is_npu_smis_loop_mode_but_not_the_default() -> None:
    assert loop_stream("npu-smi") is WATCH_STREAM
    assert WATCH_STREAM.args == ("info", "watch") and WATCH_STREAM.pty
    assert not WATCH_STREAM.preferred  # no HBM MiB in this view


def test_every_prefix_of_every_watch_sample_parses_or_is_refused() -> None:
    assert len(WATCH_SAMPLES) == 3
    for name in WATCH_SAMPLES:
        lines = read(name).splitlines(keepends=True)
        for cut in range(len(lines) + 1):
            parse_or_refuse(parse_watch, "".join(lines[:cut]))
            for record in records("".join(lines[:cut])):
                parse_or_refuse(parse_watch, record)
