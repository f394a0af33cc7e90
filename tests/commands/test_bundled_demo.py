"""The bundled demo (``--fallback-demo``) tells the truth: made from a real run
(tools/make_demo.py), it has a card that turns from saturated to starving, a probed trainer,
figures that add up, no note about a PID that is not in it, and advice whose worker counts
are the ones its frames show."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

import pytest

from gpusat_tui.model import Frame
from gpusat_tui.sources.recording.replay import read_recording

DEMO = Path(str(files("gpusat_tui") / "data" / "demo.jsonl"))
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def frames() -> list[Frame]:
    _, reader = read_recording(DEMO)
    return list(reader)


@pytest.fixture(scope="module")
def report() -> dict:
    out = subprocess.run([sys.executable, "-m", "gpusat_tui", "report", str(DEMO), "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def test_small_enough_to_ship() -> None:
    assert DEMO.stat().st_size < 2 * 1024 * 1024


def test_a_card_turns_from_saturated_to_starving(report: dict) -> None:
    turning = [c for c in report["cards"]
               if c["verdict_share"].get("saturated", 0) > 0.2
               and c["verdict_share"].get("starving", 0) > 0.2]
    assert turning, [c["verdict_share"] for c in report["cards"]]
    stretches = turning[0]["worst"]
    assert any(s["kind"] == "starving" for s in stretches)


def test_a_probed_trainer_and_its_measured_wait(frames: list[Frame], report: dict) -> None:
    probed = {p.pid for f in frames for p in f.probes if p.batches > 0}
    assert probed
    whys = [w for c in report["cards"] for s in c["worst"] for w in s["why"]]
    assert any("measured in the trainer" in w for w in whys), whys


def test_no_note_about_a_pid_that_is_not_in_it(frames: list[Frame], report: dict) -> None:
    pids = {p.pid for f in frames for p in f.processes} | {
        p.pid for f in frames for p in f.probes}
    notes = [n for f in frames for n in f.notes] + list(report.get("notes") or [])
    for note in notes:
        for pid in re.findall(r"PID (\d+)", note):
            assert int(pid) in pids, note


def test_host_cpu_covers_its_processes(frames: list[Frame]) -> None:
    for frame in frames:
        if frame.host is None or frame.host.cpu_pct is None or not frame.processes:
            continue
        cores = frame.host.cpu_count or 1
        procs = sum(p.cpu_pct or 0.0 for p in frame.processes)
        # host CPU is % of all cores, a process's % of one core; sampled a moment apart
        assert frame.host.cpu_pct * cores * 1.1 + 10 >= procs, (frame.seq, procs)


def test_worker_counts_in_why_and_advice_are_the_frames(frames: list[Frame],
                                                        report: dict) -> None:
    per_trainer = {
        sum(1 for p in f.processes if p.trainer_pid == t.pid)
        for f in frames for t in f.processes if t.role == "trainer"
    }
    per_frame = {sum(1 for p in f.processes if p.role == "dataloader_worker") for f in frames}
    told = [line for c in report["cards"] for s in c["worst"]
            for line in (*s["why"], *s["advice"])]
    told += [line for s in report["job_worst"] for line in (*s["why"], *s["advice"])]
    counts = [int(n) for line in told
              for n in re.findall(r"(\d+) workers|num_workers from (\d+)", line) for n in n if n]
    assert counts, told
    assert set(counts) <= per_trainer | per_frame, (counts, per_trainer, per_frame)


def test_its_two_jobs_are_never_judged_as_one_imbalanced_job(frames: list[Frame],
                                                             report: dict) -> None:
    keys = {j.key for f in frames for j in f.jobs}
    assert len(keys) == 2, keys  # two plain jobs, one card each
    kinds = {s["kind"] for s in report["job_worst"]}
    kinds |= {s["kind"] for c in report["cards"] for s in c["worst"]}
    assert "imbalanced" not in kinds, kinds
    told = [line for s in report["job_worst"] for line in (*s["why"], *s["advice"])]
    assert not any("straggler" in line or "rebalance the layers" in line for line in told)


def test_the_demo_shows_no_path_or_test_flag_of_ours() -> None:
    """A demo is a session a user could have: no checkout path, temporary file or test flag in
    what it shows (job commands, process names)."""
    from gpusat_tui.sources.build import DEMO_SESSION

    text = DEMO_SESSION.read_text()
    for ours in ("/work/", "/tmp/", "tests/", ".venv", "--switch-file", "--sleep-ms",
                 "--max-seconds", "--max-s "):
        assert ours not in text, ours
