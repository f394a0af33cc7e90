"""The cause holds still until the evidence does: none is named before the evidence window
is filled, unless a probe measured a span; a probe still waiting for its first batch is
waited for, and the why says what the cause waits on."""

from __future__ import annotations

from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.model import CardReading, Frame, ProbeSample, ProcessSample

TRAINER = [ProcessSample(pid=100, role="trainer", name="python", cpu_pct=30.0,
                         card_ids=["nvidia:0"])] + [
    ProcessSample(pid=101 + k, role="dataloader_worker", name="pt_data_worker", cpu_pct=99.0,
                  trainer_pid=100, card_ids=["nvidia:0"]) for k in range(2)]


def starving_card() -> CardReading:
    return CardReading(vendor="nvidia", index=0, util_pct=20.0, power_w=90.0,
                       power_cap_w=400.0, mem_used_mib=50000.0, mem_total_mib=80000.0)


def frame(i: int, probes: list[ProbeSample] | None = None) -> Frame:
    return Frame(t=1000.0 + i, seq=i, cards=[starving_card()], processes=TRAINER,
                 probes=probes or [])


def test_no_cause_before_the_window_is_filled_then_the_cause() -> None:
    tracker = VerdictTracker(window_s=30.0, hold_cause=True)
    for i in range(20):
        verdict = tracker.push(frame(i)).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", None)
    assert verdict.why[0].startswith("cause not named yet: named after 30 s of polls, 19 s so far")
    for i in range(20, 32):
        verdict = tracker.push(frame(i)).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "input-bound")
    # check and report judge whole runs: they name the cause at once, as before
    plain = VerdictTracker(window_s=30.0)
    for i in range(5):
        verdict = plain.push(frame(i)).cards["nvidia:0"]
    assert verdict.cause == "input-bound"


def probe(i: int, batches: int) -> ProbeSample:
    return ProbeSample(pid=100, card_id="nvidia:0", tie="device", data_wait_pct=60.0,
                       batches=batches, steps=batches, data_wait_s=0.6 * i,
                       elapsed_s=float(i), age_s=0.2)


def test_a_started_probe_is_waited_for_and_said() -> None:
    tracker = VerdictTracker(window_s=30.0, hold_cause=True)
    for i in range(40):  # past the window: the probe has published, but timed no batch
        verdict = tracker.push(frame(i, [probe(i, 0)])).cards["nvidia:0"]
    assert verdict.cause is None
    assert "waiting for the probe's first figures (PID 100)" in verdict.why[0]


def test_a_measured_span_names_the_cause_early() -> None:
    tracker = VerdictTracker(window_s=30.0, hold_cause=True)
    for i in range(6):
        verdict = tracker.push(frame(i, [probe(i, 5 * (i + 1))])).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "input-bound")
    assert verdict.why[0].startswith("data wait 60 % over the last")
