"""The box-table helpers the cnmon, mthreads-gmi, npu-smi, brsmi and xpu_smi parsers share."""

from __future__ import annotations

import re

import pytest

from gpusat_tui.collectors.tables import box_cells, celsius_token, first_group, header_index


@pytest.mark.parametrize(
    ("line", "cells"),
    [
        ("| 0     /   MLU370-X8 |  0000:39:00.0 | 93%  N/A |", ["0     /   MLU370-X8",
                                                            "0000:39:00.0", "93%  N/A"]),
        ("  || a | b ||  ", ["a", "b"]),
        ("a | b", ["a", "b"]),
        ("|", [""]),
        ("", [""]),
    ],
)
def test_box_cells_strips_every_border_and_each_cell(line: str, cells: list[str]) -> None:
    assert box_cells(line) == cells


def test_first_group_is_the_first_matching_line_and_never_crosses_lines() -> None:
    pattern = re.compile(r"tool:\s*(\S+)")
    assert first_group(pattern, ["banner", "tool: 2.0.0", "tool: 9.9"]) == "2.0.0"
    # Per line: "tool:" at a line's end does not take the next line's first word.
    assert first_group(pattern, ["tool:", "2.0.0"]) is None
    assert first_group(pattern, []) is None


def test_header_index_needs_every_word_on_one_line() -> None:
    lines = ["| Card  VF  Name |", "Card  Name", "| Card  VF  Name  Firmware |"]
    assert header_index(lines, "Card", "Name", "|") == 0
    assert header_index(lines[1:], "Card", "Name", "|") == 1
    assert header_index(lines, "Card", "Health") is None


def test_celsius_token_is_a_bare_celsius_figure_only() -> None:
    assert celsius_token(["0%", "N/A", "48C", "51C"]) == "48C"
    assert celsius_token(["-5.5C"]) == "-5.5C"
    assert celsius_token(["48°C", "48 C", "C", "48c", "x48C"]) is None
