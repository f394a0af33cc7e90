"""Figures that are not figures: bounds per figure, duplicate cards, empty answers, zombies.

Unit cases on `CardReading`, and end to end: a fake ``nvidia-smi`` in its real CSV format
printing markers and absurd values, read by the real ``check``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gpusat_tui.collectors import all_specs
from gpusat_tui.collectors.base import ToolReading, vet_reading
from gpusat_tui.model import FIGURE_BOUNDS, CardReading, Frame
from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin, Step

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("field", "given", "kept"),
    [
        ("util_pct", 1e9, None), ("util_pct", -1.0, None), ("util_pct", 250.0, None),
        ("util_pct", 101.0, 100.0),  # rounding in the tool: clamped
        ("util_pct", 100.0, 100.0), ("util_pct", 0.0, 0.0),
        ("mem_pct", 180.0, None),
        ("temp_c", -273.0, None), ("temp_c", 4294967295.0, None), ("temp_c", 65535.0, None),
        ("temp_c", 87.0, 87.0), ("temp_c", -5.0, -5.0),
        ("power_w", 65535.0, None), ("power_w", -3.0, None), ("power_w", 1400.0, 1400.0),
        ("power_cap_w", 65535.0, None),
        ("mem_total_mib", 4294967295.0, None), ("mem_used_mib", -1.0, None),
        ("mem_total_mib", 294912.0, 294912.0),
    ],
)
def test_each_figure_has_physical_bounds(field: str, given: float, kept: float | None) -> None:
    card = CardReading(vendor="nvidia", index=0, **{field: given})
    assert getattr(card, field) == kept
    if kept is None:
        assert card.rejected == {field: given}
    else:
        assert card.rejected == {}


def test_used_memory_above_the_total_is_not_a_figure() -> None:
    card = CardReading(vendor="amd", index=0, mem_used_mib=90000.0, mem_total_mib=65536.0)
    assert card.mem_used_mib is None and card.mem_pct is None
    assert card.rejected == {"mem_used_mib": 90000.0}


def test_bounds_hold_for_recordings_too() -> None:
    line = json.dumps({"t": 1.7e9, "cards": [{"vendor": "nvidia", "index": 0, "util_pct": 1e308,
                                              "temp_c": 4294967295, "power_w": 65535}]})
    card = Frame.model_validate_json(line).cards[0]
    assert (card.util_pct, card.temp_c, card.power_w) == (None, None, None)


@pytest.mark.parametrize("t", ["1e308", "-5", "NaN", "Infinity"])
def test_a_frame_time_that_is_no_time_is_refused(t: str) -> None:
    with pytest.raises(ValueError, match="t"):
        Frame.model_validate_json(f'{{"t": {t}}}')


def test_vet_reading_notes_each_problem_once_per_session() -> None:
    said: set[str] = set()
    for _ in range(3):
        reading = ToolReading(cards=[
            CardReading(vendor="nvidia", index=0, util_pct=250.0),
            CardReading(vendor="nvidia", index=0, util_pct=10.0),  # index listed twice
            CardReading(vendor="nvidia", index=1, util_pct=20.0),
        ])
        keep = vet_reading(reading, "nvidia-smi", expect_cards=True, said=said)
        assert keep
        assert [c.util_pct for c in reading.cards] == [None, 20.0]
    assert len(said) == 2
    empty = ToolReading()
    assert vet_reading(empty, "hy-smi", expect_cards=True, said=said)
    assert empty.notes == ["hy-smi answered but listed no card (only a header, or no device "
                           "visible): nothing to show from it"]
    assert not vet_reading(ToolReading(), "hy-smi", expect_cards=False)


def test_bounds_table_covers_every_figure_of_a_card() -> None:
    figures = {"util_pct", "mem_used_mib", "mem_total_mib", "mem_pct", "power_w",
               "power_cap_w", "temp_c"}
    assert set(FIGURE_BOUNDS) == figures


# -- end to end ---------------------------------------------------------------------------------


def _nvidia(fake_bin: FakeBin, cards: tuple[FakeCard, ...], polls: int = 10) -> None:
    spec = next(s for s in all_specs() if s.tool == "nvidia-smi")
    fake_bin.add_for_spec(spec, [Step(cards=cards) for _ in range(polls)])


def _check(fake_bin: FakeBin, *args: str) -> dict:
    run = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", "0.6",
         "--interval", "0.2", *args],
        env=fake_bin.env(), cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_absurd_figures_are_missing_noted_once_and_kept_raw(fake_bin: FakeBin,
                                                           tmp_path: Path) -> None:
    _nvidia(fake_bin, (
        FakeCard(0, util_pct=250.0, temp_c=4294967295.0, power_w=65535.0),
        FakeCard(1, util_pct=60.0, temp_c=50.0, power_w=200.0),
    ))
    out = tmp_path / "rec.jsonl"
    report = _check(fake_bin, "--record", str(out))
    bad, good = report["cards"]
    assert bad["util_pct"]["max"] is None and bad["temp_c"]["max"] is None
    assert bad["power_w"]["max"] is None
    assert good["util_pct"]["mean"] == 60.0 and good["power_w"]["mean"] == 200.0
    for field in ("util_pct", "temp_c", "power_w"):
        notes = [n for n in report["notes"] if f" {field} " in n]
        assert len(notes) == 1, report["notes"]
        assert notes[0].startswith("nvidia-smi gave") and "nvidia:0" in notes[0]
    lines = out.read_text().splitlines()[1:]
    frames = [Frame.model_validate_json(line) for line in lines]
    assert frames and all("nvidia-smi" in f.raw for f in frames)
    assert "4294967295" in frames[0].raw["nvidia-smi"]


def test_a_card_index_listed_twice_is_kept_apart_from_the_other(fake_bin: FakeBin) -> None:
    _nvidia(fake_bin, (FakeCard(0, util_pct=90.0), FakeCard(0, util_pct=10.0),
                       FakeCard(1, util_pct=50.0)))
    report = _check(fake_bin)
    assert [c["id"] for c in report["cards"]] == ["nvidia:0", "nvidia:1"]
    first = report["cards"][0]["util_pct"]
    assert (first["min"], first["max"]) == (90.0, 90.0)  # never mixed with the other row
    assert any("listed card nvidia:0 more than once" in n for n in report["notes"])


@pytest.mark.parametrize("tool", ["hy-smi", "amd-smi", "rocm-smi"])
def test_a_tool_printing_only_its_header_says_so(fake_bin: FakeBin, tool: str) -> None:
    """These parsers take a header with no card rows as "no card"; the poll must say so."""
    spec = next(s for s in all_specs() if s.tool == tool)
    fake_bin.add_for_spec(spec, [Step(cards=())])
    report = _check(fake_bin)
    assert report["cards"] == []
    assert any(f"{tool} answered but listed no card" in n for n in report["notes"]), report


def test_pid_of_a_zombie_gets_the_promised_note(fake_bin: FakeBin) -> None:
    _nvidia(fake_bin, (FakeCard(0, util_pct=50.0),))
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.02)
        report = _check(fake_bin, "--pid", str(child.pid))
    finally:
        child.wait()
    procs = [p for p in report["processes"] if p["pid"] == child.pid]
    assert procs and procs[0]["cpu_pct"]["mean"] is None
    assert any(f"PID {child.pid} (trainer) is a zombie" in n for n in report["notes"])
