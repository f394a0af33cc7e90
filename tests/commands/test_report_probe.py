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


SWITCH_S = 40


def no_tool_frame(seq: int, waiting: bool) -> object:
    """No card (no vendor tool): a trainer whose probe waits on data 80 % of the time while
    ``waiting``, 2 % after."""
    wait = 0.8 if waiting else 0.02
    frame = simple_frame(seq, cards=0)
    # ``data_wait_s`` is cumulative, as a probe writes it: 0.8 s a second up to the switch.
    waited = 0.8 * seq if waiting else 0.8 * SWITCH_S + 0.02 * (seq - SWITCH_S)
    return frame.model_copy(update={
        "processes": [ProcessSample(pid=4242, role="trainer", name="python", cpu_pct=20.0)],
        "probes": [ProbeSample(pid=4242, data_wait_pct=100 * wait, step_ms=100.0,
                               batches_per_s=10.0, batches=seq * 10, steps=seq * 10,
                               elapsed_s=float(seq), data_wait_s=waited, age_s=0.2,
                               framework="torch", num_workers=0)],
    })


def test_text_report_of_a_no_tool_recording_has_its_stretches_why_and_advice(
    tmp_path: Path,
) -> None:
    frames = [no_tool_frame(i, waiting=i < SWITCH_S) for i in range(60)]
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


def restarted_frame(seq: int) -> object:
    """No card: a trainer that waits on data 80 % of the time for 40 s, then re-executes itself
    under the same PID (a new probe: its counters start again at 0) and waits 2 % for 20 s."""
    frame = simple_frame(seq, cards=0)
    restarted = seq >= SWITCH_S
    elapsed = float(seq - SWITCH_S if restarted else seq)
    wait = 0.02 if restarted else 0.8
    return frame.model_copy(update={
        "processes": [ProcessSample(pid=4242, role="trainer", name="python", cpu_pct=20.0)],
        "probes": [ProbeSample(pid=4242, data_wait_pct=100 * wait, step_ms=100.0,
                               batches_per_s=10.0, batches=int(elapsed) * 10,
                               steps=int(elapsed) * 10, elapsed_s=elapsed,
                               data_wait_s=wait * elapsed, age_s=0.2, framework="torch",
                               num_workers=0)],
    })


def trainer_line(text: str) -> str:
    [line] = [line for line in text.splitlines() if line.startswith("  PID 4242: ")]
    return line


def test_the_trainers_line_is_the_mean_over_the_session(tmp_path: Path) -> None:
    frames = [no_tool_frame(i, waiting=i < SWITCH_S) for i in range(60)]
    text = render_text(analyse(write_recording(tmp_path / "run.jsonl", frames)))
    assert "means over the session" in text
    # 40 s at 80 % and 19 s at 2 %: (32 + 0.38) / 59 s.
    assert trainer_line(text).startswith("  PID 4242: data wait 55 % · step 100 ms"), text


def test_a_probe_restarted_under_the_same_pid_still_gives_the_session_mean(
    tmp_path: Path,
) -> None:
    frames = [restarted_frame(i) for i in range(60)]
    report = analyse(write_recording(tmp_path / "run.jsonl", frames))
    text = render_text(report)
    # 39 s at 80 % and 19 s at 2 %, each stretch by its own counters (the restart between
    # them counts for neither): not the 2 % of the counters since the restart.
    assert trainer_line(text).startswith("  PID 4242: data wait 54 % · step 100 ms"), text
    [proc] = report.to_json().processes
    assert proc.probe is not None and proc.probe.run is not None
    assert proc.probe.run.span_s == 58.0
    assert proc.probe.run.batches_per_s == 10.0
