"""The process panel shows a trainer's other threads (where tf.data or MindSpore load) from a
tenth of a core, and nothing for a trainer whose threads are quiet or were not read."""

from __future__ import annotations

from gpusat_tui.model import ProcessSample
from gpusat_tui.ui.widgets.processes import process_text


def row(others: float | None, busy: int | None) -> str:
    trainer = ProcessSample(pid=10, role="trainer", name="python train.py", cpu_pct=210.0,
                            state="running", other_threads_cpu_pct=others, busy_threads=busy)
    return process_text([trainer]).plain.splitlines()[2]


def test_busy_threads_are_shown_after_the_trainer() -> None:
    assert row(183.4, 2).endswith("python train.py  threads 183% (2 busy)")
    assert row(40.0, 0).endswith("python train.py  threads 40%")


def test_quiet_or_unread_threads_show_nothing() -> None:
    assert row(4.0, 0).endswith("python train.py")
    assert row(None, None).endswith("python train.py")
