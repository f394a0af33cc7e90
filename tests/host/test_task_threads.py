"""A trainer's threads other than the main one, read from real ``/proc`` text.

The captures (`captures/capture_threads.py`) are two snapshots, 2 s apart, of a real tf.data
loop (TensorFlow 2.21, ``map(num_parallel_calls=2)`` of CPU work) and a real MindSpore loop
(2.10, ``map(num_parallel_workers=2)``, threads), each laid out as ``/proc/<pid>/``: what the
pipelines' threads are called, how much CPU they used and how the census counts them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusat_tui.errors import ParseError
from gpusat_tui.host.monitor.processes import ProcessMonitor
from gpusat_tui.host.monitor.procfs import ProcfsReader
from gpusat_tui.host.monitor.task_threads import (
    ThreadCensus,
    other_threads_cpu_s,
    parse_task_stat,
)
from gpusat_tui.model import ProcessSample

CAPTURES = Path(__file__).resolve().parent / "captures"
#: (capture, busy pipeline threads seen in it)
CASES = [("tfdata_threads", 2), ("mindspore_threads", 2)]


def snapshot(name: str) -> tuple[dict[str, object], ProcfsReader, ProcfsReader, int]:
    meta = json.loads((CAPTURES / name / "meta.json").read_text())
    before = ProcfsReader(root=str(CAPTURES / name / "t0"))
    after = ProcfsReader(root=str(CAPTURES / name / "t1"))
    before.clock_ticks = after.clock_ticks = int(meta["clock_ticks"])
    return meta, before, after, int(meta["pid"])


@pytest.mark.parametrize(("name", "_busy"), CASES)
def test_task_stat_lines_parse_to_thread_id_name_and_cpu(name: str, _busy: int) -> None:
    _, _, _, pid = snapshot(name)
    task = CAPTURES / name / "t1" / str(pid) / "task"
    for tid_dir in task.iterdir():
        reading = parse_task_stat((tid_dir / "stat").read_bytes())
        assert reading.tid == int(tid_dir.name)
        assert reading.name == (tid_dir / "comm").read_text().rstrip("\n")
        assert reading.cpu_s >= 0.0


@pytest.mark.parametrize(("name", "_busy"), CASES)
def test_the_pipeline_threads_carry_no_name_of_their_own(name: str, _busy: int) -> None:
    """What the design stands on: the busy threads are called like the main thread, so they
    can only be told apart as 'threads other than the main one'."""
    _, before, after, pid = snapshot(name)
    busy = [tid for tid in after.thread_ids(pid) if tid != pid
            and after.thread_cpu_s(pid, tid) - before.thread_cpu_s(pid, tid) >= 0.5]
    assert busy, "the capture shows no busy pipeline thread"
    main = parse_task_stat((CAPTURES / name / "t1" / str(pid) / "task" / str(pid) / "stat")
                           .read_bytes()).name
    names = {parse_task_stat((CAPTURES / name / "t1" / str(pid) / "task" / str(t) / "stat")
                             .read_bytes()).name for t in busy}
    assert names == {main}


@pytest.mark.parametrize(("name", "busy"), CASES)
def test_other_threads_cpu_is_the_process_less_its_main_thread(name: str, busy: int) -> None:
    meta, before, after, pid = snapshot(name)
    span = float(meta["elapsed_s"])  # type: ignore[arg-type]
    others = [
        other_threads_cpu_s(r.stat(pid).cpu_s, r.main_thread_cpu_s(pid) or 0.0) for r in
        (before, after)
    ]
    pct = 100.0 * (others[1] - others[0]) / span
    # The same figure summed thread by thread (none exited between the snapshots; a snapshot's
    # files were read one after the other while the threads ran: a few clock ticks apart).
    summed = sum(
        after.thread_cpu_s(pid, t) - (before.thread_cpu_s(pid, t)
                                      if t in before.thread_ids(pid) else 0.0)
        for t in after.thread_ids(pid) if t != pid
    )
    assert pct == pytest.approx(100.0 * summed / span, abs=5.0)
    assert pct >= 100.0  # two map threads on two cores

    census = ThreadCensus()
    assert census.step(lambda: before.thread_ids(pid), lambda t: before.thread_cpu_s(pid, t),
                       0.0, skip=[pid]) is None  # one reading each: no rate yet
    counted = census.step(lambda: after.thread_ids(pid), lambda t: after.thread_cpu_s(pid, t),
                          span, skip=[pid])
    assert counted == busy


def test_census_reads_a_bounded_batch_per_step_and_counts_every_thread_in_turn() -> None:
    _, before, after, pid = snapshot("tfdata_threads")
    reads: list[int] = []

    def reader(r: ProcfsReader):  # type: ignore[no-untyped-def]
        def read(tid: int) -> float:
            reads.append(tid)
            return r.thread_cpu_s(pid, tid)
        return read

    census = ThreadCensus()
    listings = []

    def lister(r: ProcfsReader):  # type: ignore[no-untyped-def]
        def tids() -> list[int]:
            listings.append(1)
            return r.thread_ids(pid)
        return tids

    others = len([t for t in before.thread_ids(pid) if t != pid])
    steps = -(-others // 4)
    for _ in range(steps):
        census.step(lister(before), reader(before), 0.0, skip=[pid], batch=4)
        assert len(reads) <= 4
        reads.clear()
    assert len(listings) == 1  # once a round
    result = None
    for _ in range(steps):
        result = census.step(lister(after), reader(after), 2.0, skip=[pid], batch=4)
        assert len(reads) <= 4
        reads.clear()
    assert len(listings) == 2
    assert result == 2


def test_census_forgets_threads_that_are_gone_and_resets() -> None:
    census = ThreadCensus()
    cpu = {1: 0.0, 2: 0.0}
    census.step(lambda: cpu, cpu.get, 0.0)
    cpu = {1: 1.0, 2: 0.0}
    assert census.step(lambda: cpu, cpu.get, 1.0) == 1
    cpu = {2: 0.0}  # the busy one ended: its read fails, and the next listing drops it
    assert census.step(lambda: cpu, cpu.get, 2.0) == 0
    census.reset()
    assert census.step(lambda: cpu, cpu.get, 3.0) is None
    assert census.step(list, {}.get, 4.0) == 0


@pytest.mark.parametrize("line", [b"", b"12 (python", b"x (python) S 1 2 3",
                                  b"abc (python) " + b"S 1 " * 30])
def test_garbage_is_a_parse_error(line: bytes) -> None:
    with pytest.raises(ParseError):
        parse_task_stat(line)


def test_a_name_with_spaces_and_parentheses_parses() -> None:
    line = Path(CAPTURES / "tfdata_threads" / "t1").glob("*/task/*/stat").__next__().read_bytes()
    head, rest = line.split(b"(", 1)
    tail = rest.rsplit(b")", 1)[1]
    odd = head + b"(a) b (c" + b")" + tail
    assert parse_task_stat(odd).name == "a) b (c"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_monitor_reads_a_real_trainers_busy_threads(tmp_path: Path) -> None:
    """A real process whose main thread sleeps while two threads burn CPU (hashing releases
    the GIL): the monitor reads its other threads' CPU and counts them busy; waits on the
    condition, not a time."""
    script = tmp_path / "busy.py"
    script.write_text(
        "import hashlib, threading, time\n"
        "data = b'x' * (1 << 20)\n"
        "def spin():\n"
        "    while True:\n"
        "        hashlib.sha256(data).digest()\n"
        "for _ in range(2):\n"
        "    threading.Thread(target=spin, daemon=True).start()\n"
        "for _ in range(20):\n"
        "    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    monitor = ProcessMonitor(pids=[proc.pid])
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 120
        seen: list[tuple[float | None, float | None, int | None]] = []
        while time.monotonic() < deadline:
            [trainer] = [p for p in monitor.sample().processes if p.pid == proc.pid]
            seen.append((trainer.cpu_pct, trainer.other_threads_cpu_pct, trainer.busy_threads))
            if (trainer.other_threads_cpu_pct or 0) >= 20 and trainer.busy_threads == 2:
                break
            time.sleep(0.3)
        else:
            pytest.fail(f"never read 2 busy threads: {seen[-5:]}")
        assert trainer.cpu_pct is not None
        assert trainer.other_threads_cpu_pct <= trainer.cpu_pct + 1.0  # type: ignore[operator]
    finally:
        monitor.close()
        proc.kill()
        proc.wait()
        if proc.stdout:
            proc.stdout.close()


def test_psutil_reader_reads_no_thread_figures() -> None:
    monitor = ProcessMonitor(pids=[os.getpid()], use_procfs=False)
    try:
        for _ in range(2):
            [me] = [p for p in monitor.sample().processes if p.pid == os.getpid()]
        assert (me.other_threads_cpu_pct, me.busy_threads) == (None, None)
    finally:
        monitor.close()


def test_thread_figures_are_additive_in_a_process_sample() -> None:
    """Older recordings have neither field; a count below zero cannot be."""
    old = ProcessSample.model_validate({"pid": 1, "role": "trainer", "name": "python"})
    assert (old.other_threads_cpu_pct, old.busy_threads) == (None, None)
    odd = ProcessSample(pid=1, role="trainer", name="python", busy_threads=-2,
                        other_threads_cpu_pct=float("nan"))
    assert (odd.other_threads_cpu_pct, odd.busy_threads) == (None, None)
