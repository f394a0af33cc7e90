"""The bundled demo (``--fallback-demo``) is a session a user could have, coherent at every poll:
one DDP job of two ranks on two H100s of a 32-core host (tools/make_demo.py builds it), that
computes, then waits on its input. Each poll is replayed through the verdict tracker as
``report`` and the dashboard do, and each figure is checked against the others: the cards'
duty cycle and power against the probe's data wait, the workers' CPU against the cause, the
host against its processes, the data wait a why or the job line quotes against the rank it
names."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

from gpusat_tui.analysis.verdicts.job import JOB_KEY
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.worker_advice import worker_direction
from gpusat_tui.model import Assessment, Frame, ProbeSample
from gpusat_tui.sources.build import DEMO_BANNER
from gpusat_tui.sources.recording.replay import ReplaySource, read_recording
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.tracking import default_tracker
from gpusat_tui.ui.widgets.job_line import JobLine
from tests.ui.conftest import screen_text, settle

DEMO = Path(str(files("gpusat_tui") / "data" / "demo.jsonl"))
ROOT = Path(__file__).resolve().parents[2]
QUOTED_WAIT = re.compile(r"data wait (\d+) % over the last (\d+) s, measured in the trainer "
                         r"\(PID (\d+)")


@pytest.fixture(scope="module")
def frames() -> list[Frame]:
    _, reader = read_recording(DEMO)
    return list(reader)


@pytest.fixture(scope="module")
def judged(frames: list[Frame]) -> list[Assessment]:
    """Every poll's verdicts as `report` judges them (`report._analyse_exact`)."""
    tracker = VerdictTracker(window_s=30.0)
    return [tracker.push(frame) for frame in frames]


@pytest.fixture(scope="module")
def shown(frames: list[Frame]) -> list[Assessment]:
    """Every poll's verdicts as the dashboard judges them (its own tracker)."""
    tracker = default_tracker()
    return [tracker.push(frame) for frame in frames]


@pytest.fixture(scope="module")
def report() -> dict:
    out = subprocess.run([sys.executable, "-m", "gpusat_tui", "report", str(DEMO), "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def _probe_wait(frames: list[Frame], pid: int, since: float, until: float) -> float:
    """A trainer's data wait between two moments, from its probe's cumulative figures."""
    def at(t: float) -> ProbeSample:
        frame = min(frames, key=lambda f: abs(f.t - t))
        return next(p for p in frame.probes if p.pid == pid)
    first, last = at(since), at(until)
    assert first.data_wait_s is not None and last.data_wait_s is not None
    assert first.elapsed_s is not None and last.elapsed_s is not None
    return 100 * (last.data_wait_s - first.data_wait_s) / (last.elapsed_s - first.elapsed_s)


def test_small_enough_to_ship() -> None:
    assert DEMO.stat().st_size < 400 * 1024


def test_the_banner_says_it_is_constructed() -> None:
    assert "constructed session" in DEMO_BANNER
    assert "two H100s, one DDP job" in DEMO_BANNER
    assert "not your hardware" in DEMO_BANNER


def test_one_job_of_two_ranks_one_card_each(frames: list[Frame]) -> None:
    assert len(frames) >= 40
    assert {j.key for f in frames for j in f.jobs} == {"plain:127.0.0.1:29500"}
    for frame in frames:
        (job,) = frame.jobs
        trainers = [p for p in frame.processes if p.role == "trainer"]
        assert sorted(job.pids) == sorted(p.pid for p in trainers)
        assert {(p.world_size, p.rank) for p in trainers} == {(2, 0), (2, 1)}
        assert sorted(job.card_ids) == sorted(c.id for c in frame.cards)
        for trainer in trainers:  # each rank drives its own card, its probe says the same
            probe = next(p for p in frame.probes if p.pid == trainer.pid)
            assert probe.rank == trainer.rank and probe.world_size == 2
            assert trainer.card_ids == [probe.card_id]
        workers = [p for p in frame.processes if p.role == "dataloader_worker"]
        assert {w.trainer_pid for w in workers} == set(job.pids)
        for probe in frame.probes:
            mine = [w for w in workers if w.trainer_pid == probe.pid]
            assert probe.num_workers == len(mine)


def test_never_imbalanced_nor_a_straggler_at_any_poll(
        judged: list[Assessment], shown: list[Assessment], report: dict) -> None:
    for seq, assessment in enumerate([*judged, *shown]):
        for verdict in [assessment.job, *assessment.cards.values()]:
            assert verdict.kind != "imbalanced", (seq % len(judged), verdict)
            told = " ".join([*verdict.why, *verdict.advice])
            assert "straggler" not in told and "collective" not in (verdict.cause or "")
    kinds = {s["kind"] for s in report["job_worst"]}
    kinds |= {s["kind"] for c in report["cards"] for s in c["worst"]}
    assert "imbalanced" not in kinds


def test_computes_then_starves_on_its_input(judged: list[Assessment],
                                            frames: list[Frame]) -> None:
    """One turn: saturated, then starving (input-bound) to the end; never back and forth."""
    story: list[tuple[str, str | None]] = []
    for assessment in judged:
        kind = (assessment.job.kind, assessment.job.cause)
        if not story or story[-1] != kind:
            story.append(kind)
    assert story == [("unknown", None), ("saturated", None), ("starving", "input-bound")]
    turn = next(f.t for f, a in zip(frames, judged, strict=True) if a.job.kind == "starving")
    assert 30 <= turn - frames[0].t <= 45
    assert frames[-1].t - turn >= 45


def test_never_more_and_fewer_workers_in_one_advice(judged: list[Assessment],
                                                    shown: list[Assessment]) -> None:
    for assessment in [*judged, *shown]:
        for verdict in [assessment.job, *assessment.cards.values()]:
            directions = {worker_direction(a) for a in verdict.advice}
            assert "fewer" not in directions, verdict.advice
    starving = [a for a in judged if a.job.kind == "starving"]
    assert starving and all(
        "more" in {worker_direction(a) for a in s.job.advice} for s in starving[2:])


def test_each_card_agrees_with_its_ranks_data_wait_every_poll(frames: list[Frame]) -> None:
    """A card computes when its rank is not waiting for data: its duty cycle is the rest of
    the poll, its power follows its duty cycle, and the step time and samples/s follow the
    wait too (the same compute time per step)."""
    compute_ms = []
    for frame in frames:
        for probe in frame.probes:
            card = frame.card(probe.card_id or "")
            assert card is not None and card.util_pct is not None
            assert probe.data_wait_pct is not None and probe.step_ms and probe.samples_per_s
            assert abs(card.util_pct - (100 - probe.data_wait_pct)) <= 8, (frame.seq, card)
            assert card.power_w is not None and card.power_cap_w
            share = 100 * card.power_w / card.power_cap_w
            if card.util_pct >= 90:
                assert 75 <= share <= 90, (frame.seq, share)
            if card.util_pct <= 50:
                assert share <= 50, (frame.seq, share)
            compute_ms.append(probe.step_ms * (1 - probe.data_wait_pct / 100))
            assert probe.batch_size is not None
            assert abs(probe.samples_per_s - probe.batch_size * 1000 / probe.step_ms) < 1
            data = probe.phase_samples.get("data", 0) / max(1, probe.stack_samples)
            assert data <= 0.75  # cumulative since the job started: mostly fast steps
    assert max(compute_ms) <= 1.1 * min(compute_ms)


def test_the_workers_and_the_host_agree_with_the_cause(frames: list[Frame],
                                                       judged: list[Assessment]) -> None:
    for frame, assessment in zip(frames, judged, strict=True):
        workers = [p.cpu_pct or 0.0 for p in frame.processes if p.role == "dataloader_worker"]
        pegged = sum(1 for cpu in workers if cpu >= 90)
        if assessment.job.kind == "starving":
            assert pegged == len(workers), (frame.seq, workers)
        waits = [p.data_wait_pct or 0.0 for p in frame.probes]
        # The workers peg exactly when the ranks start waiting (the badge follows a poll on).
        assert (pegged == len(workers)) == (min(waits) >= 30), (frame.seq, workers, waits)
        assert pegged in (0, len(workers)), (frame.seq, workers)
        # No contention: nothing queues for a CPU (no "fewer workers" story is true here).
        assert all((p.run_delay_pct or 0.0) < 5 for p in frame.processes)
        host = frame.host
        assert host is not None and host.cpu_pct is not None and host.cpu_count == 32
        procs = sum(p.cpu_pct or 0.0 for p in frame.processes)
        used = host.cpu_pct * host.cpu_count
        assert procs <= used <= procs + 200, (frame.seq, procs, used)
        assert host.cpu_pct < 50  # cores free: "more workers" is advice a user could follow


def test_a_quoted_data_wait_is_its_own_ranks(frames: list[Frame],
                                            judged: list[Assessment]) -> None:
    """Every card's why quotes the data wait of the rank that drives that card, over the
    span it names."""
    quoted = 0
    interval = frames[1].t - frames[0].t
    for frame, assessment in zip(frames, judged, strict=True):
        for card_id, verdict in assessment.cards.items():
            for line in verdict.why:
                match = QUOTED_WAIT.search(line)
                if match is None:
                    continue
                pct, span, pid = (int(g) for g in match.groups())
                driver = next(p for p in frame.probes if p.card_id == card_id)
                assert pid == driver.pid, (frame.seq, card_id, line)
                # The span ends at this poll, or at the one before where the badge still
                # shows the kind it held there (it changes after 2 polls).
                ends = [f.t for f in frames if frame.t - interval <= f.t <= frame.t]
                waits = [_probe_wait(frames, pid, end - span, end) for end in ends]
                assert min(abs(w - pct) for w in waits) <= 1.5, (frame.seq, waits, line)
                quoted += 1
    assert quoted >= len(frames)


def test_report_and_dashboard_tell_the_same_story(frames: list[Frame], shown: list[Assessment],
                                                  report: dict) -> None:
    """`report`'s starving stretch is where the dashboard's badge reads starving, and the
    verdict shares add up to the polls the dashboard judged so."""
    (stretch,) = report["job_worst"]
    assert (stretch["kind"], stretch["cause"]) == ("starving", "input-bound")
    t0 = frames[0].t
    interval = frames[1].t - frames[0].t
    for frame, assessment in zip(frames, shown, strict=True):
        inside = stretch["start_s"] <= frame.t - t0 < stretch["end_s"]
        assert (assessment.job.kind == "starving") == inside, (frame.seq, assessment.job.kind)
    polls = {kind: sum(interval for a in shown if a.job.kind == kind) / report["duration_s"]
             for kind in ("saturated", "starving")}
    for kind, share in polls.items():
        assert abs(report["verdict_share"][kind] - share) <= 0.05, (kind, share)
    (job,) = report["jobs"]
    assert job["key"] == "plain:127.0.0.1:29500"
    assert job["verdict"]["kind"] == shown[-1].job.kind
    assert job["verdict"]["cause"] == shown[-1].job.cause


async def test_the_job_line_quotes_its_own_ranks_wait(frames: list[Frame]) -> None:
    """The overview's job line shows both ranks' data wait over the span the job's evidence
    window covers: the figures the tracker's ranks give, no other card's or job's."""
    tracker = default_tracker()
    app = GpusatApp(ReplaySource(DEMO, speed=64.0), tracker=tracker, view="overview",
                    own_cpu=lambda: 0.1, banner=DEMO_BANNER)
    last = frames[-1].seq
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == last,
                     timeout=60.0)
        line = app.query_one(JobLine).full_text()
        ranks = tracker.window_ranks(JOB_KEY)  # type: ignore[attr-defined]
    assert sorted(r.pid for r in ranks) == [48213, 48214]
    waits = sorted(round(r.wait_pct) for r in ranks if r.wait_pct is not None)
    match = re.search(r"data wait (\d+)(?:–(\d+))?% over the last (\d+) s", line)
    assert match is not None, line
    low, high = int(match.group(1)), int(match.group(2) or match.group(1))
    assert (low, high) == (waits[0], waits[-1]), (line, waits)
    assert "(2 ranks)" in line and "STARVING" in line and "alice" in line


async def test_card_1s_view_quotes_rank_1_only(frames: list[Frame]) -> None:
    """Card 1 selected: its title, the process panel and its why all quote rank 1's data wait
    over one span; rank 0's figure and "no probe" appear nowhere on the screen."""
    app = GpusatApp(ReplaySource(DEMO, speed=64.0), tracker=default_tracker(), view="card",
                    own_cpu=lambda: 0.1, banner=DEMO_BANNER)
    last = frames[-1].seq
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq >= 2, timeout=60.0)
        await pilot.press("right")
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == last,
                     timeout=60.0)
        assert app.selected == "nvidia:1"
        text = screen_text(app)
        why = app.assessment.cards["nvidia:1"].why
    match = QUOTED_WAIT.search(why[0])
    assert match is not None and int(match.group(3)) == 48214, why
    pct, span = match.group(1), match.group(2)
    shown = re.findall(r"wait (\d+) ?% over the last (\d+) s", text)
    assert len(shown) >= 3, text  # title, panel summary, trainer row (and the why)
    assert set(shown) == {(pct, span)}, (shown, why[0])
    assert "rank 1" in text and "rank 0" not in text and "no probe" not in text


def test_the_demo_shows_no_path_or_test_flag_of_ours() -> None:
    """A demo is a session a user could have: no checkout path, temporary file or test flag in
    what it shows (job commands, process names, code lines)."""
    text = DEMO.read_text()
    for ours in ("/work/", "/tmp/", "tests/", ".venv", "--switch-file", "--sleep-ms",
                 "--max-seconds", "--max-s ", "--turn", "make_demo", "fake"):
        assert ours not in text, ours
    for frame in read_recording(DEMO)[1]:
        for job in frame.jobs:
            assert job.command is not None and " train.py --batch-size 64" in job.command
