"""The job verdict with no card at all, from the probed trainers and the host alone."""

from __future__ import annotations

from gpusat_tui.analysis.verdicts.probe_only import NO_TOOL_LINE
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import Frame, HostSample, JobContext, ProbeSample, ProcessSample


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


def two_jobs(waits: dict[int, float], keys: dict[int, str], n: int = 6,
             workers_cpu: dict[int, float] | None = None) -> list[Frame]:
    """Two probed trainers (PIDs of ``waits``) with their own data waits, of the jobs
    ``keys`` names (one job key each, or one key for both); ``workers_cpu``: each trainer's
    two DataLoader workers' CPU."""
    out = []
    for i in range(n):
        elapsed = 10.0 + i
        probes = [ProbeSample(pid=pid, data_wait_pct=w, data_wait_s=elapsed * w / 100,
                              elapsed_s=elapsed, step_ms=120.0, samples_per_s=260.0,
                              batches=50 + i, age_s=0.2) for pid, w in waits.items()]
        procs = [ProcessSample(pid=pid, role="trainer", name="python", cpu_pct=20.0)
                 for pid in waits]
        procs += [ProcessSample(pid=pid + 1 + w, role="dataloader_worker", name="pt_data_worker",
                                cpu_pct=cpu, trainer_pid=pid, state="running")
                  for pid, cpu in (workers_cpu or {}).items() for w in range(2)]
        jobs: dict[str, list[int]] = {}
        for pid, key in keys.items():
            jobs.setdefault(key, []).append(pid)
        contexts = [JobContext(job_id=key.split(":")[1], command=f"python job{key}.py",
                               pids=pids) for key, pids in jobs.items()]
        out.append(Frame(t=1000.0 + i, seq=i, probes=probes, processes=procs, jobs=contexts,
                         host=HostSample(cpu_pct=40.0, cpu_count=16)))
    return out


def test_two_separate_jobs_are_judged_apart_never_as_two_ranks() -> None:
    # A compute-bound job and a starving one, each started under `run`, no vendor tool.
    job = judge(two_jobs({100: 2.0, 200: 60.0}, {100: "plain:100", 200: "plain:200"})).job
    assert (job.kind, job.cause) == ("starving", "input-bound"), job
    assert "2 separate jobs" in job.why[1] and "plain:200's verdict" in job.why[1], job.why
    assert "data wait 60 %" in job.why[2] and "PID 200" in job.why[2], job.why
    assert job.why[-1] == ("the other jobs, on their own: plain:100: unknown (not-starving), "
                           "data wait 2 %"), job.why
    assert not any("ranks" in line or "2–60" in line for line in job.why), job.why
    # The same two trainers as ranks of one job: one verdict over both, as before.
    one = judge(two_jobs({100: 2.0, 200: 60.0}, {100: "plain:9", 200: "plain:9"})).job
    assert one.kind == "starving" and not any("separate jobs" in w for w in one.why), one.why


def test_two_jobs_below_the_line_stay_unknown_each_named() -> None:
    job = judge(two_jobs({100: 2.0, 200: 4.0}, {100: "plain:100", 200: "plain:200"})).job
    assert (job.kind, job.cause) == ("unknown", "not-starving"), job
    assert "plain:200's verdict" in job.why[1], job.why  # the larger wait first
    assert job.why[-1].endswith("plain:100: unknown (not-starving), data wait 2 %"), job.why


def test_each_job_s_cause_comes_from_its_own_workers() -> None:
    # Job 100's workers are pegged; job 200 waits on data with idle workers: its why speaks
    # of its own two idle workers, not of the other job's busy ones (nor of unseen workers).
    job = judge(two_jobs({100: 2.0, 200: 60.0}, {100: "plain:100", 200: "plain:200"},
                         workers_cpu={100: 99.0, 200: 1.0})).job
    assert (job.kind, job.cause) == ("starving", "input-bound"), job
    assert "2 workers at 1 % CPU each" in job.why[3], job.why
    assert not any("99 %" in line or "cannot see" in line for line in job.why), job.why


def test_the_one_job_probed_among_several_takes_its_own_workers_as_evidence() -> None:
    # What a dashboard following job 200 judges (`JobFollower.own_frame`): its probe and its
    # processes only, the host's two jobs still listed. Its idle workers are its evidence; they
    # were read as unseen, since no card ties any process with two jobs on the host.
    frames = [f.model_copy(update={
        "probes": [p for p in f.probes if p.pid == 200],
        "processes": [p for p in f.processes if 200 in (p.pid, p.trainer_pid)],
    }) for f in two_jobs({100: 2.0, 200: 60.0}, {100: "plain:100", 200: "plain:200"},
                         workers_cpu={100: 99.0, 200: 1.0})]
    job = judge(frames).job
    assert (job.kind, job.cause) == ("starving", "input-bound"), job
    assert any("2 workers at 1 % CPU each" in line for line in job.why), job.why
    assert not any("cannot see" in line or "separate jobs" in line for line in job.why), job.why
