"""The status file's data wait is the verdict's: the worst probed trainer's share of time
blocked on its next batch over the polls since the kind began (30 s at most), from the probe's
cumulative counters, not the probe's last one-second interval."""

from __future__ import annotations

import json
from pathlib import Path

from gpusat_tui.model import Assessment, Frame, ProbeSample, Verdict
from gpusat_tui.notify.status_file import StatusFileWriter
from gpusat_tui.notify.status_waits import WaitWindow

T0 = 1_800_000_000.0
STARVING = Assessment(job=Verdict(kind="starving", cause="input-bound"))
SATURATED = Assessment(job=Verdict(kind="saturated"))


def _probe(pid: int, t: float, wait_share: float, last_interval_pct: float) -> ProbeSample:
    """A probe ``t`` s into its run that has waited ``wait_share`` of it, and whose own last
    interval read ``last_interval_pct``."""
    return ProbeSample(pid=pid, batches=int(10 * t) + 1, elapsed_s=t, data_wait_s=wait_share * t,
                       data_wait_pct=last_interval_pct, age_s=0.2)


def _frame(t: float, *probes: ProbeSample) -> Frame:
    return Frame(t=T0 + t, seq=int(t), probes=list(probes))


def test_the_figure_is_the_span_s_not_the_last_interval_s() -> None:
    window = WaitWindow()
    wait = None
    for t in range(1, 21):  # 90 % of every second waited; the last interval read 52 %
        wait = window.update(_frame(t, _probe(7, t, 0.9, 52.0)), since=T0 + 1)
    assert wait is not None and abs(wait - 90.0) < 1e-6


def test_the_worst_trainer_and_only_the_span_since_the_kind_began() -> None:
    window = WaitWindow(window_s=30.0)
    for t in range(1, 41):
        # PID 8 waited nothing for 30 s, then everything: since the kind began at 30 s, all.
        waited = 0.0 if t <= 30 else float(t - 30)
        late = ProbeSample(pid=8, batches=t, elapsed_s=t, data_wait_s=waited, data_wait_pct=0.0)
        wait = window.update(_frame(t, _probe(7, t, 0.25, 25.0), late), since=T0 + 30)
    assert wait is not None and abs(wait - 100.0) < 1e-6
    # The window caps the span: 30 s at most, however long ago the kind began.
    window = WaitWindow(window_s=10.0)
    for t in range(1, 41):
        waited = 0.0 if t <= 30 else float(t - 30)
        wait = window.update(_frame(t, ProbeSample(pid=8, batches=t, elapsed_s=t,
                                                   data_wait_s=waited)), since=T0)
    assert wait is not None and abs(wait - 100.0) < 1e-6


def test_no_measured_wait_is_none() -> None:
    window = WaitWindow()
    noted = ProbeSample(pid=9, batches=5, elapsed_s=2.0, data_wait_s=1.0,
                        data_wait_note="Keras fit: the data wait is not measured")
    assert window.update(_frame(2, noted), since=None) is None
    assert window.update(_frame(3, ProbeSample(pid=9, batches=0, elapsed_s=3.0)), None) is None


def test_the_writer_quotes_the_span_s_figure(tmp_path: Path) -> None:
    writer = StatusFileWriter("dashboard", 1.0, folder=str(tmp_path / "status"))
    try:
        for t in range(1, 21):
            status = writer.publish(_frame(t, _probe(7, t, 0.9, 52.0)), STARVING)
        assert status.data_wait_pct is not None and round(status.data_wait_pct) == 90
        assert writer.path is not None
        assert round(json.loads(Path(writer.path).read_text())["data_wait_pct"]) == 90
        # A new kind starts a new span: its first poll has only the probe's own figure.
        status = writer.publish(_frame(21, _probe(7, 21, 0.9, 52.0)), SATURATED)
        assert status.data_wait_pct == 52.0
    finally:
        writer.close()
