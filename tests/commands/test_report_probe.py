"""``report`` and ``check``'s human summary show what the probe measured, per trainer."""

from __future__ import annotations

import json
from pathlib import Path

from gpusat_tui.commands.check import render_human
from gpusat_tui.commands.check_report import CheckBuilder
from gpusat_tui.commands.report import analyse
from gpusat_tui.commands.report_text import render_text
from gpusat_tui.model import ProbeAlloc, ProbeSample, ProcessSample
from tests.recording_helpers import simple_frame, write_recording


def probed(seq: int) -> object:
    frame = simple_frame(seq)
    alloc = ProbeAlloc(allocated_bytes=10 * 2**30, reserved_bytes=12 * 2**30,
                       inactive_split_bytes=0, alloc_retries=2, ooms=0)
    return frame.model_copy(update={
        "processes": [ProcessSample(pid=4242, role="trainer", name="python", cpu_pct=50.0,
                                    card_ids=["nvidia:0"])],
        "probes": [ProbeSample(pid=4242, rank=1, world_size=8, card_id="nvidia:0", tie="device",
                               data_wait_pct=43.0, step_ms=182.0, batches_per_s=5.5,
                               samples_per_s=1240.0, batches=seq * 5, steps=seq * 5,
                               elapsed_s=float(seq), data_wait_s=0.43 * seq, alloc=alloc)],
    })


def test_report_shows_the_measured_figures_per_trainer(tmp_path: Path) -> None:
    path = write_recording(tmp_path / "run.jsonl", [probed(i) for i in range(6)])
    report = analyse(path)
    text = render_text(report, width=100)
    assert ("  PID 4242 rank 1/8 → nvidia:0: data wait 43 % · step 182 ms · 1,240 samples/s"
            " · allocator 10.0/12.0 GiB · 2 alloc retries") in text.splitlines()
    [proc] = json.loads(report.to_json().model_dump_json())["processes"]
    assert proc["probe"]["data_wait_pct"]["mean"] == 43.0 and proc["probe"]["rank"] == 1
    assert proc["probe"]["alloc"]["reserved_bytes"]["last"] == 12 * 2**30


def test_a_publication_read_twice_counts_once_and_check_prints_it() -> None:
    builder = CheckBuilder()
    first, again = probed(1), probed(1)
    builder.add(first)  # type: ignore[arg-type]
    builder.add(again.model_copy(update={"probes": [again.probes[0].model_copy(  # type: ignore[attr-defined]
        update={"data_wait_pct": 99.0})]}))  # same elapsed_s: the same publication
    [proc] = builder.report(1.0).processes
    assert proc.probe is not None and proc.probe.data_wait_pct.mean == 43.0
    assert "measured in the trainer: data wait 43 % · step 182 ms" in render_human(
        builder.report(1.0))


def no_tool_frame(seq: int, waiting: bool) -> object:
    """No card (no vendor tool): a trainer whose probe waits on data 80 % of the time while
    ``waiting``, 2 % after."""
    wait = 0.8 if waiting else 0.02
    frame = simple_frame(seq, cards=0)
    return frame.model_copy(update={
        "processes": [ProcessSample(pid=4242, role="trainer", name="python", cpu_pct=20.0)],
        "probes": [ProbeSample(pid=4242, data_wait_pct=100 * wait, step_ms=100.0,
                               batches_per_s=10.0, batches=seq * 10, steps=seq * 10,
                               elapsed_s=float(seq), data_wait_s=wait * seq, age_s=0.2,
                               framework="torch", num_workers=0)],
    })


def test_text_report_of_a_no_tool_recording_has_its_stretches_why_and_advice(
    tmp_path: Path,
) -> None:
    frames = [no_tool_frame(i, waiting=i < 40) for i in range(60)]
    report = analyse(write_recording(tmp_path / "run.jsonl", frames))
    data = report.to_json()
    [stretch] = [s for s in data.job_worst if s.kind == "starving"]
    text = render_text(report, width=100)
    lines = text.splitlines()
    assert any(line.strip().startswith("0:") and "starving (input-bound)" in line
               for line in lines), text
    assert f"      why: {stretch.why[1]}" in lines, text  # the measured wait, as in --json
    assert any(line.startswith("      try: ") for line in lines), text
    assert "no accelerator tool" in text
