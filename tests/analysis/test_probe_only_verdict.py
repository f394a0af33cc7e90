"""The job verdict with no card at all, from the probed trainers and the host alone."""

from __future__ import annotations

from gpusat_tui.analysis.verdicts.probe_only import NO_TOOL_LINE
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import Frame, HostSample, ProbeSample, ProcessSample


def frames(wait_pct: float, n: int = 6, workers_cpu: float = 99.0) -> list[Frame]:
    out = []
    for i in range(n):
        elapsed = 10.0 + i
        probe = ProbeSample(pid=100, data_wait_pct=wait_pct, data_wait_s=elapsed * wait_pct / 100,
                            elapsed_s=elapsed, step_ms=120.0, samples_per_s=260.0, batches=50 + i,
                            age_s=0.2)
        procs = [ProcessSample(pid=100, role="trainer", name="python", cpu_pct=20.0)] + [
            ProcessSample(pid=200 + w, role="dataloader_worker", name="pt_data_worker",
                          cpu_pct=workers_cpu,
                          trainer_pid=100, state="running")
            for w in range(2)
        ]
        out.append(Frame(t=1000.0 + i, seq=i, probes=[probe], processes=procs,
                         host=HostSample(cpu_pct=40.0, cpu_count=16)))
    return out


def test_measured_wait_is_starving_input_bound_with_no_card() -> None:
    job = judge(frames(85.0)).job
    assert (job.kind, job.cause) == ("starving", "input-bound"), job
    assert job.why[0] == NO_TOOL_LINE
    assert "data wait 85 %" in job.why[1] and "measured in the trainer" in job.why[1]


def test_low_wait_claims_nothing_a_card_would_have_to_say() -> None:
    job = judge(frames(5.0)).job
    assert job.kind == "unknown" and job.why[0] == NO_TOOL_LINE
    assert "data wait 5 %" in job.why[1]


def test_without_probes_and_cards_the_job_is_unknown_as_before() -> None:
    bare = [Frame(t=1000.0 + i, seq=i) for i in range(4)]
    assert judge(bare).job.kind == "unknown"


def test_tracker_adopts_the_probe_only_verdict() -> None:
    tracker = VerdictTracker(window_s=30.0)
    for frame in frames(85.0):
        assessment = tracker.push(frame)
    assert (assessment.job.kind, assessment.job.cause) == ("starving", "input-bound")
