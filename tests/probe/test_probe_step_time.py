"""Step time and samples/s from the probe's cumulative counters, not per publishing interval.

A step longer than the publishing interval used to read at most the interval (the interval was
divided by the steps in it, and an interval without a step published nothing), and the
samples/s in ``why`` was a median of per-interval rates (8 or 0 where the truth was ~5).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gpusat_tui.analysis.facts import frame_facts
from gpusat_tui.analysis.probe_reading.probe_ranks import ranks_of
from gpusat_tui.analysis.probe_reading.probe_rates import span_rates
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS
from gpusat_tui.commands.probe_accumulator import ProbeAccumulator
from gpusat_tui.commands.probe_lines import probe_line
from gpusat_tui.model import Frame, ProbeSample
from tests.probe_helpers import probe_docs, start_job, stop_job, wait_for_doc, wait_ready


def test_a_step_longer_than_the_interval_reads_its_own_length(private_probe_dir: Path) -> None:
    """A real loop whose step takes 1.2 s, published every 0.25 s."""
    proc = start_job(private_probe_dir, "--compute-ms", "1200", "--warm", "1")
    try:
        pid = wait_ready(proc, timeout=120)
        first = wait_for_doc(private_probe_dir, pid)
        deadline = time.monotonic() + 60
        last = first
        while time.monotonic() < deadline and last["steps"] < first["steps"] + 3:
            time.sleep(0.1)
            last = probe_docs(private_probe_dir).get(pid, last)
    finally:
        stop_job(proc)
    assert last["steps"] >= first["steps"] + 3, last
    # The probe's own figure: one step's length, not the 0.25 s interval.
    assert 1100 <= last["step_ms"] <= 2400, last
    assert last["step_source"] == "optimizer"
    # And over the span, from the cumulative counters (what the verdict and check use).
    pubs = [_sample(doc) for doc in (first, last)]
    rates = span_rates(pubs)
    assert rates.step_ms is not None and 1100 <= rates.step_ms <= 2400, rates
    assert rates.samples_per_s == pytest.approx(4 * rates.batches_per_s)
    assert 4 * 1000 / 2400 <= rates.samples_per_s <= 4 * 1000 / 1100


def _sample(doc: dict) -> ProbeSample:
    from gpusat_tui.host.probes.probe_files import sample_of

    return sample_of(doc, doc["t"], "nvidia:0", "device")


def seven_second_steps(n: int) -> list[ProbeSample]:
    """A 1 s publication interval over steps of 7 s (one batch of 32 per step), published as
    the probe does: step time and rate since the previous publication that had a step, and the
    old per-interval rate in ``samples_per_s`` (32 or 0) to show the median's error."""
    pubs = []
    for i in range(n):
        steps = i // 7
        last_step = 7.0 * steps if steps else None
        pubs.append(ProbeSample(
            pid=5, card_id="nvidia:0", tie="device", elapsed_s=float(i), data_wait_s=0.1 * i,
            data_wait_pct=10.0, batches=steps, steps=steps, last_batch_s=last_step,
            last_step_s=last_step, step_ms=7000.0 if steps else None,
            batches_per_s=1 / 7 if steps else None, samples_per_s=32.0 if i % 7 == 0 else 0.0,
            batch_size=32, age_s=0.1,
        ))
    return pubs


def test_the_window_takes_step_time_and_samples_from_cumulative_counters() -> None:
    pubs = seven_second_steps(30)
    frames = [Frame(t=float(i), seq=i, probes=[p]) for i, p in enumerate(pubs)]
    [rank] = ranks_of([frame_facts(f) for f in frames], DEFAULT_THRESHOLDS)
    assert rank.step_ms == pytest.approx(7000.0)
    assert rank.samples_per_s == pytest.approx(32 / 7)  # not the median of 32s and 0s
    assert rank.wait_pct == pytest.approx(10.0)


def test_check_json_and_why_quote_the_same_cumulative_figures() -> None:
    acc = ProbeAccumulator()
    for p in seven_second_steps(30):
        acc.add(p)
    report = acc.report()
    assert report.run is not None
    assert report.run.step_ms == pytest.approx(7000.0)
    assert report.run.samples_per_s == pytest.approx(32 / 7)
    assert "step 7,000 ms · 5 samples/s" in probe_line(report)


def test_an_older_probe_without_newest_times_keeps_its_own_figures() -> None:
    old = [ProbeSample(pid=5, elapsed_s=float(i), data_wait_s=0.5 * i, batches=10 * i,
                       steps=10 * i, step_ms=100.0, batches_per_s=10.0, samples_per_s=40.0)
           for i in range(4)]
    rates = span_rates(old)
    assert (rates.step_ms, rates.samples_per_s, rates.wait_pct) == (100.0, 40.0, 50.0)
