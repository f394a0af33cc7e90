"""A cause changes only when the new one holds: on noisy cause evidence at 0.5 s and 1 s polls
the kind stays ``starving`` and the cause shown changes at most once (when it is first named),
while a real change of cause that lasts still shows."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest

from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.model import CardReading, Frame, HostSample, ProcessSample
from tests.scenarios import T0


def _procs(pegged_workers: bool) -> list[ProcessSample]:
    """Workers pegged (input-bound), or the trainer pegged beside idle workers (host-bound)."""
    trainer = ProcessSample(pid=100, role="trainer", name="python", state="running",
                            cpu_pct=40.0 if pegged_workers else 99.0)
    workers = [ProcessSample(pid=101 + i, role="dataloader_worker", name="pt_data_worker",
                             state="running", trainer_pid=100,
                             cpu_pct=99.0 if pegged_workers else 5.0) for i in range(2)]
    return [trainer, *workers]


def _frame(i: int, interval: float, util: float, pegged_workers: bool) -> Frame:
    card = CardReading(vendor="nvidia", index=0, util_pct=util, mem_used_mib=40000.0,
                       mem_total_mib=80000.0, power_w=110.0, power_cap_w=400.0)
    return Frame(t=T0 + i * interval, seq=i, cards=[card], processes=_procs(pegged_workers),
                 host=HostSample(cpu_pct=40.0, iowait_pct=0.0, cpu_count=16))


def _shown(frames: list[Frame]) -> list[tuple[str, str | None]]:
    tracker = VerdictTracker(window_s=30.0)
    return [(a.job.kind, a.job.cause) for a in (tracker.push(f) for f in frames)]


def _changes(shown: list[tuple[str, str | None]]) -> int:
    return sum(1 for a, b in pairwise(shown) if a != b)


@pytest.mark.parametrize("interval", [0.5, 1.0])
def test_noisy_cause_evidence_does_not_flap_the_cause(interval: float) -> None:
    rng = random.Random(7)
    frames: list[Frame] = []
    pegged = True
    n = int(90 / interval)
    while len(frames) < n:
        # Runs of 2-5 polls of one story, then the other: the evidence of a shared host.
        for _ in range(rng.randint(2, 5)):
            frames.append(_frame(len(frames), interval, rng.uniform(2.0, 40.0), pegged))
        pegged = not pegged
    shown = _shown(frames[:n])
    settled = [s for s in shown if s[0] != "unknown"]
    assert {kind for kind, _ in settled} == {"starving"}, set(settled)
    assert _changes(settled) == 0, [s for s in settled]


@pytest.mark.parametrize("interval", [0.5, 1.0])
def test_a_cause_that_lasts_still_shows(interval: float) -> None:
    n = int(60 / interval)
    frames = [_frame(i, interval, 10.0 + (i % 4) * 5, i < n // 2) for i in range(n)]
    shown = _shown(frames)
    assert shown[n // 2 - 1] == ("starving", "input-bound")
    assert shown[-1] == ("starving", "host-bound")
    switched = next(i for i, s in enumerate(shown) if s == ("starving", "host-bound"))
    # Not before it held 10 s (Thresholds.cause_hold_s), and soon after.
    assert (switched - n // 2) * interval >= 10.0
    assert (switched - n // 2) * interval <= 10.0 + 4 * interval
