"""Cards a tool lists with no figure at all ([N/A], [Unknown Error], [Not Supported], ERR!).

Such a card is kept with null figures and one note naming what the tool printed, in the parsers
and through a real ``check`` run against a fake ``nvidia-smi`` on PATH.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpusat_tui.collectors import all_specs, nvidia_smi, nvidia_smi_table
from gpusat_tui.collectors.base import ToolReading, vet_reading
from gpusat_tui.collectors.dark_cards import FIGURES
from gpusat_tui.model import CardReading
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import nvidia_smi as nvidia_format
from tests.fakes.tool import FakeBin, renderer_for

REPO = Path(__file__).resolve().parents[2]
DARK_WORDS = ("[N/A]", "[Unknown Error]")


def _dark_csv_row(index: int, word: str, cells: int) -> str:
    head = [str(index), "NVIDIA H100 80GB HBM3", nvidia_format.fake_uuid(index),
            nvidia_format.fake_bus_id(index)]
    tail = [word] * (cells - len(head))
    if word == "[Unknown Error]":
        tail[2] = "[Not Supported]"  # memory.total
    return ", ".join(head + tail)


def render_dark(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess]
) -> str:
    """nvidia-smi for two cards that went dark: every figure [N/A] on one, [Unknown Error] on
    the other, in each csv query; the other views as usual."""
    cells = {
        nvidia_smi.QUERY_GPU_EVENT_ARGS: 11, nvidia_smi.QUERY_GPU_THROTTLE_ARGS: 11,
        nvidia_smi.QUERY_GPU_ARGS: 10,
    }.get(tuple(args))
    if cells is None:
        return nvidia_format.render_for_args(args, cards, processes)
    return "".join(_dark_csv_row(i, DARK_WORDS[i], cells) + "\n" for i in range(2))


def _assert_dark(cards: Sequence[CardReading], notes: Sequence[str]) -> None:
    assert [c.id for c in cards] == ["nvidia:0", "nvidia:1"]
    for card in cards:
        assert all(getattr(card, name) is None for name in FIGURES)
    dark = [n for n in notes if "reports no figure" in n]
    assert len(dark) == 2
    assert "nvidia:0" in dark[0] and "[N/A]" in dark[0]
    assert "nvidia:1" in dark[1] and "[Unknown Error]" in dark[1] and "[Not Supported]" in dark[1]


def test_the_csv_parser_keeps_dark_cards_and_names_what_the_tool_said() -> None:
    text = render_dark(nvidia_smi.QUERY_GPU_EVENT_ARGS, [], [])
    reading = nvidia_smi.parse_query_gpu_event(text)
    _assert_dark(reading.cards, reading.notes)
    assert reading.cards[1].name == "NVIDIA H100 80GB HBM3"


def test_a_dark_card_in_the_table_is_kept_whatever_its_persistence_cell_says() -> None:
    """A GPU in trouble prints ERR! / Unknown Error where the table has On/Off."""
    text = nvidia_format.render([FakeCard(0), FakeCard(1)])
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|   1  "):
            lines[i] = line.replace("   Off |", "  ERR! |", 1)
            lines[i + 1] = "| ERR!  ERR!    ERR!          ERR! / ERR! |   ERR!  /  ERR!      |" \
                "    ERR!      Default |"
    reading = nvidia_smi_table.parse_table("\n".join(lines) + "\n")
    assert [c.id for c in reading.cards] == ["nvidia:0", "nvidia:1"]
    assert reading.cards[0].util_pct == 0.0
    assert all(getattr(reading.cards[1], name) is None for name in FIGURES)
    (note,) = [n for n in reading.notes if "reports no figure" in n]
    assert "nvidia:1" in note and "ERR!" in note


@pytest.mark.parametrize(
    "tool", ["hl-smi", "ixsmi", "efsmi", "mx-smi", "intel-xpu-smi", "cnmon", "brsmi",
             "mthreads-gmi", "hy-smi", "rocm-smi", "amd-smi"],
)
def test_box_table_collectors_keep_dark_cards(tool: str) -> None:
    """The collectors built on the same table helpers keep a card with no figure, told once."""
    spec = next(s for s in all_specs() if s.tool == tool)
    query = next(q for q in spec.queries if not q.optional)
    dark = [FakeCard(i, util_pct=None, mem_used_mib=None, mem_total_mib=None, power_w=None,
                     power_cap_w=None, temp_c=None) for i in range(2)]
    said: set[str] = set()
    reading = query.parse(renderer_for(spec)(query.args, dark, []))
    assert vet_reading(reading, tool, expect_cards=True, said=said)
    assert len(reading.cards) == 2
    notes = [n for n in reading.notes if "reports no figure" in n]
    assert [c.id in n for c, n in zip(reading.cards, notes, strict=True)] == [True, True]
    again = query.parse(renderer_for(spec)(query.args, dark, []))
    vet_reading(again, tool, expect_cards=True, said=said)
    assert len(again.cards) == 2
    assert not [n for n in again.notes if "reports no figure" in n], "said once"


def test_a_card_that_comes_back_and_goes_dark_again_is_told_again() -> None:
    said: set[str] = set()
    dark = CardReading(vendor="nvidia", index=0)
    lit = CardReading(vendor="nvidia", index=0, util_pct=50.0)
    told = []
    for card in (dark, dark, lit, dark):
        reading = ToolReading(cards=[card])
        vet_reading(reading, "nvidia-smi", expect_cards=True, said=said)
        told.append(sum("reports no figure" in n for n in reading.notes))
    assert told == [1, 0, 0, 1]


@pytest.mark.parametrize("loop_flag", [None, "-lms"], ids=["per-poll", "streamed"])
def test_check_keeps_two_dark_cards(fake_bin: FakeBin, loop_flag: str | None) -> None:
    fake_bin.add_for_spec(nvidia_smi.SPECS[0], [[FakeCard(0), FakeCard(1)]],
                          render=render_dark, loop_flag=loop_flag)
    out = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", "1.5",
         "--interval", "0.5"],
        env=fake_bin.env(), capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    cards = report["cards"]
    assert [c["id"] for c in cards] == ["nvidia:0", "nvidia:1"]
    for card in cards:
        assert card["util_pct"]["last"] is None and card["verdict"]["kind"] == "unknown"
        assert card["name"] == "NVIDIA H100 80GB HBM3"
    dark = [n for n in report["notes"] if "reports no figure" in n]
    assert len(dark) == 2, report["notes"]
    assert "[N/A]" in dark[0] and "[Unknown Error]" in dark[1]

    text = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--duration", "1", "--interval", "0.5"],
        env=fake_bin.env(), capture_output=True, text=True, timeout=120, cwd=REPO,
    )
    assert text.returncode == 0, text.stderr
    assert "nvidia:0" in text.stdout and "nvidia:1" in text.stdout
    assert "[Unknown Error]" in text.stdout
