"""One rule decides the worker count: no advice list tells a job both more and fewer workers
(the bundled demo, whose two jobs once got both in one list, and constructed windows)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import pytest

from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS
from gpusat_tui.analysis.verdicts.cause_rules import workers_advice
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.analysis.verdicts.worker_advice import one_worker_count, worker_direction
from gpusat_tui.model import CardReading, Frame, HostSample, ProbeSample, ProcessSample, Verdict
from gpusat_tui.sources.recording.replay import read_recording
from tests.scenarios import T0

DEMO = Path(str(files("gpusat_tui") / "data" / "demo.jsonl"))


def _both(advice: list[str]) -> bool:
    directions = {worker_direction(a) for a in advice}
    return {"more", "fewer"} <= directions


def test_the_rules_sentences_are_classified() -> None:
    ev = HostEvidence(n_workers=2, n_trainers=1, cpu_count=32, host_cpu=10.0)
    assert worker_direction(workers_advice(ev, 32, DEFAULT_THRESHOLDS)) == "more"
    assert worker_direction("The host is oversubscribed: more workers only queue longer. Use "
                            "fewer workers (at most the cores free for this job)") == "fewer"
    assert worker_direction("All 8 cores are busy: more workers will not help") is None
    kept = one_worker_count(["Give the DataLoader more in flight: more num_workers, a larger "
                             "prefetch_factor", "Use fewer workers, pin them", "Cache it"])
    assert kept == ["Use fewer workers, pin them", "Cache it"]


def test_the_demo_never_advises_more_and_fewer_workers_at_once() -> None:
    _, reader = read_recording(DEMO)
    frames = list(reader)
    tracker = VerdictTracker(window_s=30.0)
    for frame in frames:
        shown = tracker.push(frame)
        for verdict in [shown.job, *shown.cards.values()]:
            assert not _both(verdict.advice), (frame.seq, verdict.advice)
    # The recording's stretches as `report` judges them (whole windows).
    for start in range(0, len(frames) - 20, 10):
        result = judge(frames[start:start + 40])
        for verdict in [result.job, *result.cards.values()]:
            assert not _both(verdict.advice), (start, verdict.advice)


def _window() -> list[Frame]:
    """Card 0: a probed trainer measured waiting on its data, its workers idle; card 1: another
    trainer's workers pegged and queued for a CPU (an oversubscribed host)."""
    frames = []
    for i in range(12):
        procs = [
            ProcessSample(pid=100, role="trainer", name="python", cpu_pct=20.0, state="running",
                          card_ids=["nvidia:0"], run_delay_pct=1.0),
            ProcessSample(pid=101, role="dataloader_worker", name="pt_data_worker",
                          cpu_pct=10.0, state="sleeping", trainer_pid=100, run_delay_pct=1.0),
            ProcessSample(pid=200, role="trainer", name="python", cpu_pct=30.0, state="running",
                          card_ids=["nvidia:1"], run_delay_pct=25.0),
            *[ProcessSample(pid=201 + k, role="dataloader_worker", name="pt_data_worker",
                            cpu_pct=98.0, state="running", trainer_pid=200, run_delay_pct=30.0)
              for k in range(2)],
        ]
        probe = ProbeSample(pid=100, card_id="nvidia:0", tie="device", data_wait_s=0.6 * i,
                            elapsed_s=float(i), batches=3 * (i + 1), steps=3 * (i + 1),
                            last_batch_s=float(i), last_step_s=float(i), batch_size=8,
                            num_workers=1, age_s=0.2)
        cards = [CardReading(vendor="nvidia", index=k, util_pct=u, mem_used_mib=40000.0,
                             mem_total_mib=80000.0, power_w=110.0, power_cap_w=400.0)
                 for k, u in ((0, 30.0 + (i % 3)), (1, (90.0, 2.0, 3.0)[i % 3]))]
        frames.append(Frame(t=T0 + i, seq=i, cards=cards, processes=procs, probes=[probe],
                            host=HostSample(cpu_pct=95.0, iowait_pct=0.0, cpu_count=16)))
    return frames


@pytest.mark.parametrize("key", ["job", "nvidia:0", "nvidia:1"])
def test_a_window_with_both_stories_keeps_one(key: str) -> None:
    result = judge(_window())
    verdict: Verdict = result.job if key == "job" else result.cards[key]
    assert not _both(verdict.advice), verdict.advice
