"""``gpusat-tui report``: verdict shares re-judged from raw frames, charts, check's JSON shape."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from gpusat_tui.commands.check_schema import CheckCard, CheckReport
from gpusat_tui.commands.report import analyse
from gpusat_tui.commands.report_text import render_text
from gpusat_tui.commands.session_report import ReportCard, ReportJSON
from gpusat_tui.errors import RecordingError
from gpusat_tui.sources.recording.recorder import Recorder, make_header
from tests.recording_helpers import header, load_make_sessions, simple_frame, write_recording
from tests.scenarios import SCENARIOS, Scenario

REPO = Path(__file__).resolve().parents[2]
SESSIONS = load_make_sessions().SESSIONS  # type: ignore[attr-defined]
#: The tracker needs min_samples (3) polls before it says anything, and up to 3 polls to follow
#: a step change: this many polls of a labelled session may honestly disagree with the label.
SLACK_POLLS = 3


def expected_share(scenario: Scenario, polls: int) -> dict[str, float]:
    """Fraction of polls per job kind, from the scenario's own labels."""
    kinds = Counter(scenario.expected_at(k).kind for k in range(polls))
    return {kind: n / polls for kind, n in kinds.items()}


def assert_shares(share: dict[str, float], expected: dict[str, float], polls: int) -> None:
    slack = SLACK_POLLS / polls + 1e-3
    for kind in set(share) | set(expected):
        if kind == "unknown" and kind not in expected:  # the first polls: too little data
            assert share.get(kind, 0.0) <= slack, share
            continue
        assert abs(share.get(kind, 0.0) - expected.get(kind, 0.0)) <= slack, (kind, share, expected)
    assert abs(sum(share.values()) - 1.0) < 1e-3


@pytest.mark.parametrize("rel", sorted(SESSIONS), ids=lambda r: Path(r).stem)
def test_bundled_session_shares_match_their_labels(rel: str) -> None:
    scenario, polls = SESSIONS[rel]
    report = analyse(REPO / rel).to_json()
    assert report.samples == polls
    assert (REPO / rel).stat().st_size < 512 * 1024  # sessions stay small
    assert report.judged == "every poll"
    assert report.skipped_lines == 0
    assert_shares(report.verdict_share, expected_share(scenario, polls), polls)
    if scenario.change_at is None:
        assert report.verdict == scenario.expected_kind
    for card in report.cards:
        label = scenario.expected_cards.get(card.index)
        if label is None and scenario.change_at is None and scenario.expected_kind != "imbalanced":
            label = scenario.expected
        if label is not None:
            assert card.verdict.kind == label.kind
            assert card.verdict.cause == label.cause
            assert card.verdict_share.get(label.kind, 0.0) >= 1 - SLACK_POLLS / polls


def test_json_is_check_shape_plus_shares() -> None:
    data = analyse(REPO / "samples/sessions/imbalanced.jsonl").to_json()
    dumped = json.loads(data.model_dump_json())
    assert set(CheckReport.model_fields) <= set(dumped)
    assert set(dumped) - set(CheckReport.model_fields) == {
        "verdict_share", "job_worst", "file", "judged", "skipped_lines", "file_notes", "header"
    }
    card = dumped["cards"][0]
    assert set(card) - set(CheckCard.model_fields) == {"verdict_share", "worst"}
    assert set(card["util_pct"]) == {"mean", "min", "max", "last"}
    assert [c["id"] for c in dumped["cards"]] == [f"nvidia:{i}" for i in range(4)]
    assert issubclass(ReportJSON, CheckReport) and issubclass(ReportCard, CheckCard)


def _frames_with_figures(util: list[float]) -> list:
    return [
        simple_frame(i).model_copy(
            update={"cards": [simple_frame(i).cards[0].model_copy(update={"util_pct": u})]}
        )
        for i, u in enumerate(util)
    ]


def test_figures_are_stats_of_the_fresh_readings(tmp_path: Path) -> None:
    frames = _frames_with_figures([10.0, 20.0, 60.0, 30.0])
    stale = frames[3].cards[0].model_copy(update={"stale_s": 1.0, "util_pct": 99.0})
    frames.append(simple_frame(4).model_copy(update={"cards": [stale]}))
    data = analyse(write_recording(tmp_path / "s.jsonl", frames)).to_json()
    (card,) = data.cards
    assert card.util_pct.model_dump() == {"mean": 30.0, "min": 10.0, "max": 60.0, "last": 30.0}
    assert card.power_cap_w == 300.0
    assert data.samples == 5
    assert data.duration_s == 5.0  # 4 s between first and last poll, plus the last interval


def test_cli_json_and_no_textual(tmp_path: Path) -> None:
    code = (
        "import sys, json; from gpusat_tui.cli import main; "
        "rc = main(['report', sys.argv[1], '--json']); "
        "assert 'textual' not in sys.modules, 'report imported textual'; sys.exit(rc)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code, str(REPO / "samples/sessions/starving.jsonl")],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["verdict"] == "starving"
    assert data["cards"][0]["verdict"]["cause"] == "input-bound"


def test_cli_refuses_unreadable_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    only_header = write_recording(tmp_path / "h.jsonl", [])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for path, message in ((empty, "is empty"), (only_header, "has a header but no frames")):
        out = subprocess.run(
            [sys.executable, "-m", "gpusat_tui", "report", str(path)],
            capture_output=True, text=True, env=env, timeout=60,
        )
        assert out.returncode == 1
        assert out.stdout == ""
        assert out.stderr.startswith("gpusat-tui report: ") and message in out.stderr


def test_text_report_has_shares_chart_and_stretches() -> None:
    text = render_text(analyse(REPO / "samples/sessions/starving.jsonl"), width=90)
    assert "gpusat-tui report: starving.jsonl — 1 card, 60 polls over 1 min 00 s" in text
    assert "judged: every poll" in text
    assert "time in verdict: starving 97 % (58 s) · unknown 3 % (2 s)" in text
    # The chart, readable without colour: one letter per series, and the time axis.
    assert "      u = util % · p = power % of cap · v = VRAM %\n" in text
    assert "seconds since start" in text
    assert "\x1b[" not in text
    assert "worst stretches:" in text
    assert "0:02–1:00  starving (input-bound), 58 s" in text
    assert "      why: " in text and "      try: " in text


def test_text_report_of_a_quiet_session_says_so() -> None:
    text = render_text(analyse(REPO / "samples/sessions/saturated.jsonl"), width=80)
    assert "worst stretches: none (never starving, fragmenting, imbalanced or stalled)" in text


def test_bad_lines_are_counted_in_the_report(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(i) for i in range(8)])
    with path.open("ab") as fh:
        fh.write(b'{"t": 1008, "cards": [')
    report = analyse(path)
    assert report.skipped == 1
    assert report.to_json().skipped_lines == 1
    assert report.samples == 8
    assert "note: 1 bad line skipped (line 10: truncated" in render_text(report)


# -- long recordings: sampled windows -------------------------------------------------------------


def _step_recording(path: Path, polls: int, change_at: int) -> Path:
    """A one-card session: starving (input-bound) until ``change_at``, then saturated."""
    starving, saturated = SCENARIOS["starving_input_bound"], SCENARIOS["saturated_steady"]
    with Recorder(path, make_header({"nvidia-smi": None}, 1.0)) as rec:
        for k in range(polls):
            source = starving if k < change_at else saturated
            rec.write(source.frame(k))
    return path


@pytest.fixture(scope="module")
def step_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _step_recording(tmp_path_factory.mktemp("long") / "step.jsonl", 600, 240)


def test_sampled_windows_agree_with_every_poll(step_file: Path) -> None:
    exact = analyse(step_file).to_json()
    sampled = analyse(step_file, exact_card_polls=0).to_json()
    assert exact.judged == "every poll"
    assert sampled.judged == "20 sampled windows of 30 s"
    assert sampled.samples == exact.samples == 600
    expected = {"starving": 240 / 600, "saturated": 360 / 600}
    assert_shares(exact.verdict_share, expected, 600)
    # A window's verdict stands for its whole range: off by at most one window (30 polls).
    for kind, share in expected.items():
        assert abs(sampled.verdict_share.get(kind, 0.0) - share) <= 30 / 600 + 1e-3
    assert sampled.duration_s == exact.duration_s == 600.0
    assert sampled.cards[0].util_pct.last == exact.cards[0].util_pct.last


def test_sparse_windows_on_a_long_file(step_file: Path, tmp_path: Path) -> None:
    # Six windows over 600 s: each judged window covers 30 s and stands for ~100 s.
    lines = step_file.read_bytes().split(b"\n")
    lines[300] = b"{not json"  # falls inside the 4th window: read, skipped and counted
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join(lines))
    report = analyse(bad, exact_card_polls=0, max_windows=6)
    data = report.to_json()
    assert data.judged == "6 sampled windows of 30 s"
    assert data.samples == 599  # counted without parsing: the bad line is not a sample
    assert abs(data.verdict_share["starving"] - 0.4) <= 100 / 600
    assert abs(data.verdict_share["saturated"] - 0.6) <= 100 / 600
    (card,) = data.cards
    assert card.worst[0].kind == "starving"
    assert card.worst[0].start_s == 0.0


def test_analyse_raises_for_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(header().model_dump() | {"schema_version": 99}) + "\n")
    with pytest.raises(RecordingError, match="schema_version 99"):
        analyse(path)


def test_frames_without_cards_report_no_cards(tmp_path: Path) -> None:
    frames = [simple_frame(i).model_copy(update={"cards": []}) for i in range(5)]
    report = analyse(write_recording(tmp_path / "s.jsonl", frames))
    data = report.to_json()
    assert data.cards == [] and data.samples == 5
    assert data.verdict == "unknown"
    assert "0 cards, 5 polls over 5 s" in render_text(report)


def test_unknown_fields_of_a_newer_writer_are_noted(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "s.jsonl", [simple_frame(i) for i in range(4)])
    lines = path.read_bytes().split(b"\n")
    newer = json.loads(lines[2]) | {"gpu_clock_mhz": 1980}
    lines[2] = json.dumps(newer).encode()
    path.write_bytes(b"\n".join(lines))
    report = analyse(path)
    assert report.samples == 4 and report.skipped == 0
    assert report.notes == [
        "1 line with fields this version ignores (gpu_clock_mhz): written by a newer gpusat-tui?"
    ]


def test_multi_card_text_lists_job_stretches() -> None:
    text = render_text(analyse(REPO / "samples/sessions/imbalanced.jsonl"), width=100)
    job_part = text.split("── nvidia:0")[0]
    assert "Job: imbalanced 97 % (58 s) · unknown 3 % (2 s)  →  overall: imbalanced" in job_part
    assert "  0:02–1:00  imbalanced (straggler), 58 s" in job_part
