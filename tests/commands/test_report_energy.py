"""``report``: the energy of a whole recording, per job and per card, through a real file."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusat_tui.commands.report import analyse
from gpusat_tui.commands.report_text import render_text
from gpusat_tui.model import CardReading, Frame, JobContext
from tests.recording_helpers import write_recording

JOB = JobContext(scheduler="slurm", job_id="4242", name="train", user="alice", step="0",
                 pids=[10], card_ids=["hygon:0"])


def frames(n: int) -> list[Frame]:
    # Card 0 at 200 W runs the job; card 1 gives no power.
    return [Frame(t=1000.0 + i, seq=i, jobs=[JOB],
                  cards=[CardReading(vendor="hygon", index=0, util_pct=90.0, power_w=200.0),
                         CardReading(vendor="hygon", index=1, util_pct=10.0)])
            for i in range(n)]


def test_report_gives_the_recordings_energy_per_job_and_card(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "run.jsonl", frames(61))
    session = analyse(path)
    data = session.to_json()
    assert session.judged == "every poll"
    [job] = data.jobs
    assert job.key == "slurm:4242" and job.energy.joules == pytest.approx(12_000.0)
    cards = {c.id: c.energy for c in data.cards}
    assert cards["hygon:0"] is not None and cards["hygon:0"].joules == pytest.approx(12_000.0)
    assert cards["hygon:1"] is not None and cards["hygon:1"].note == "no power figures"
    text = render_text(session)
    assert ('job slurm 4242 "train" step 0 · alice on hygon:0: energy 12.0 kJ over 0.02 h of '
            "power figures") in text
    assert "energy of all cards: 12.0 kJ (no power figures from hygon:1)" in text
    assert "energy: no power figures" in text


def test_sampled_windows_scale_the_energy_and_say_so(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "big.jsonl", frames(400))
    session = analyse(path, exact_card_polls=10, window_s=10.0, max_windows=4)
    assert session.judged != "every poll"
    [job] = session.to_json().jobs
    assert job.energy.note is not None and job.energy.note.startswith("estimated")
    # Constant power: the scaled figure is the whole recording's, within a poll or so.
    assert job.energy.joules == pytest.approx(200.0 * 399, rel=0.03)
