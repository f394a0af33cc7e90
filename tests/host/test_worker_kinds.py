"""Data workers found by what they are, not by torch's ``pt_data_worker`` title (real processes).

torchdata's ``StatefulDataLoader`` workers (and Paddle's, MindSpore's, Grain's) keep the name
``python``; a job running them used to be told "no DataLoader workers seen" and advised to set
``num_workers > 0``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusat_tui.host.monitor.processes import ProcessMonitor
from gpusat_tui.host.monitor.worker_kinds import child_kind
from tests.proctree import kill_group, subreaper

JOB = Path(__file__).resolve().parents[1] / "jobs" / "unnamed_workers_job.py"


@pytest.mark.parametrize("start", ["fork", "spawn", "forkserver"])
def test_unnamed_multiprocessing_workers_of_a_trainer_are_workers(start: str) -> None:
    with subreaper():
        # Its own session: the forkserver and resource tracker it leaves are killed and reaped
        # with its group below, never left as zombies this process adopted.
        proc = subprocess.Popen([sys.executable, str(JOB), start, "2"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().split()
            assert line and line[0] == "READY", line
            trainer, *expected = (int(x) for x in line[1:])
            monitor = ProcessMonitor(pids=[trainer], rescan_s=0.0)
            try:
                deadline = time.monotonic() + 30
                found: dict[int, str] = {}
                while time.monotonic() < deadline:
                    report = monitor.sample()
                    found = {p.pid: p.role for p in report.processes}
                    if set(expected) <= set(found):
                        break
                    time.sleep(0.1)
                names = {p.pid: p.name for p in report.processes}
            finally:
                monitor.close()
        finally:
            proc.communicate("", timeout=60)
            kill_group(proc.pid)
    workers = sorted(pid for pid, role in found.items() if role == "dataloader_worker")
    # Exactly the workers: not the forkserver, the resource tracker nor the `sleep` helper.
    assert workers == sorted(expected), (found, names)
    assert found[trainer] == "trainer"
    assert all(names[pid] != "pt_data_worker" for pid in workers)


TRAINER = "/usr/bin/python3 train.py --epochs 3"


@pytest.mark.parametrize(("name", "cmd", "direct", "kind"), [
    ("pt_data_worker", "anything", False, "worker"),
    ("python3", TRAINER, True, "worker"),  # a fork: the trainer's own command line
    ("python3", TRAINER, False, None),  # the same command line below another child
    ("python3", "python3 -c from multiprocessing.spawn import spawn_main; spawn_main("
                "tracker_fd=5, pipe_handle=7) --multiprocessing-fork", True, "worker"),
    ("python3", "python3 -c from multiprocessing.forkserver import main; main(8, 9)", True,
     "forkserver"),
    ("python3", "python3 -c from multiprocessing.forkserver import main; main(8, 9)", False,
     "worker"),
    ("python3", "python3 -c from multiprocessing.resource_tracker import main;main(4)", True,
     None),
    ("python3", "python3 -m torch._inductor.compile_worker --workers=4", True, None),
    ("sleep", "sleep 600", True, None),
    ("python3", "", True, None),  # unreadable: no guess
])
def test_child_kind(name: str, cmd: str, direct: bool, kind: str | None) -> None:
    assert child_kind(name, cmd, TRAINER, direct) == kind


def test_a_job_whose_probe_says_it_runs_workers_is_never_told_to_add_some() -> None:
    """Workers the monitor cannot see (another PID namespace): the probe's count stands."""
    from gpusat_tui.analysis.verdicts.verdict import judge
    from gpusat_tui.model import CardReading, Frame, ProbeSample

    def window(num_workers: int | None) -> list[Frame]:
        card = CardReading(vendor="nvidia", index=0, util_pct=40.0, power_w=150.0,
                           power_cap_w=400.0)
        return [Frame(t=float(i), seq=i, cards=[card], probes=[ProbeSample(
            pid=100, card_id="nvidia:0", tie="device", data_wait_s=0.6 * i,
            elapsed_s=float(i), batches=5 * (i + 1), num_workers=num_workers, age_s=0.2,
        )]) for i in range(6)]

    seen = judge(window(3)).cards["nvidia:0"]
    assert (seen.kind, seen.cause) == ("starving", "input-bound")
    assert any("runs 3 workers (measured in the trainer)" in w for w in seen.why), seen.why
    assert not any("num_workers > 0" in a for a in seen.advice), seen.advice
    unseen = judge(window(0)).cards["nvidia:0"]
    assert any("num_workers > 0" in a for a in unseen.advice)
