"""The job verdict with no card and no probe, on hand-built windows: a trainer found by the
process census, its stack dumped from outside (py-spy). ``stalled`` only when two dumps agree
(``still_since``) and nothing of the job used CPU since; else ``unknown`` saying what is
missing and where the dump found it."""

from __future__ import annotations

from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CodeLine, Frame, ProcessSample, StackDump

#: 40 polls a second apart.
N = 40
T0 = 1000.0
STACK = (
    CodeLine(function="<module>", file="/home/u/train.py", line=120),
    CodeLine(function="main", file="/home/u/train.py", line=88),
    CodeLine(module="threading", function="Event.wait", file="/usr/lib/python3.11/threading.py",
             line=629),
)


def window(dump: StackDump | None, *, trainer_cpu: float = 0.5,
           worker_cpu: float = 0.0) -> list[Frame]:
    trainer = ProcessSample(pid=100, role="trainer", name="python", cpu_pct=trainer_cpu,
                            syscalls_per_s=12.0, stack_dump=dump)
    worker = ProcessSample(pid=101, role="dataloader_worker", name="pt_data_worker",
                           cpu_pct=worker_cpu, trainer_pid=100)
    return [Frame(t=T0 + i, seq=i, processes=[trainer, worker]) for i in range(N)]


def still_dump() -> StackDump:
    """The second of two dumps 20 s apart that found the main thread on the same stack."""
    return StackDump(t=T0 + 30.0, thread="MainThread", frames=STACK, main_cpu_s=1.0,
                     still_since=T0 + 10.0)


def test_two_agreeing_dumps_and_a_quiet_job_are_a_stall_with_its_place() -> None:
    job = judge(window(still_dump())).job
    assert job.kind == "stalled", job
    line = next(w for w in job.why if w.startswith("the trainer (PID 100) has waited"))
    assert "at train.py:88 (sampled from outside by py-spy" in line, line
    assert any("heartbeat" in w for w in job.why), job.why  # its writes are no progress


def test_a_worker_that_computes_keeps_it_from_stalled() -> None:
    job = judge(window(still_dump(), worker_cpu=95.0)).job
    assert job.kind == "unknown", job
    assert any("data wait is not measured" in w for w in job.why), job.why
    assert any("used CPU meanwhile" in w for w in job.why), job.why


def test_a_pegged_trainer_is_neither_starving_nor_stalled_and_says_where_it_was() -> None:
    dump = StackDump(t=T0 + 5.0, thread="MainThread", frames=STACK, main_cpu_s=30.0)
    job = judge(window(dump, trainer_cpu=100.0)).job
    assert job.kind == "unknown" and job.cause is None, job
    assert any("PID 100 at 100 % CPU" in w for w in job.why), job.why
    assert any("was at train.py:88 when sampled from outside" in w for w in job.why), job.why


def test_one_dump_alone_is_not_a_stall_but_says_where_it_waits() -> None:
    dump = StackDump(t=T0 + 10.0, thread="MainThread", frames=STACK, main_cpu_s=1.0)
    job = judge(window(dump)).job
    assert job.kind == "unknown", job
    assert any("was at train.py:88 when sampled from outside" in w for w in job.why), job.why


def test_without_py_spy_the_advice_names_the_extra() -> None:
    dump = StackDump(t=T0 + 10.0, error="missing", message="py-spy not found on PATH")
    job = judge(window(dump)).job
    assert job.kind == "unknown", job
    assert any("pip install 'gpusat-tui[pyspy]'" in a for a in job.advice), job.advice
