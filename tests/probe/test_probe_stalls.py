"""Stalls told by the training thread's stack (the probe's sampler), on real jobs under
``gpusat-tui run`` beside a fake card that holds its memory (util 0, or 100 % for a collective
that spins it): ``check --json`` says ``stalled`` and where each rank waits, whatever the
job's other threads do.

Each test waits (with a generous deadline) until the job has counted no batch for longer than
the stall time (20 s), as its probe file says, then runs ``check``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.collectors import all_specs
from tests.commands.test_check_probe import check
from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin
from tests.probe_helpers import (
    JOBS,
    REPO,
    job_env,
    probe_docs,
    run_argv,
    start_job,
    stop_job,
    wait_ready,
)

pytest.importorskip("torch", reason="torch not installed")

JOB = str(JOBS / "hang_job.py")
#: A card holding half its memory, doing nothing.
HELD = FakeCard(index=0, name="Fake DCU", util_pct=0.0, mem_used_mib=50000.0,
                mem_total_mib=100000.0, power_w=60.0, power_cap_w=300.0, temp_c=45.0)
#: The same card spun at 100 % by a collective that moves nothing (low power).
SPINNING = FakeCard(index=0, name="Fake DCU", util_pct=100.0, mem_used_mib=50000.0,
                    mem_total_mib=100000.0, power_w=90.0, power_cap_w=300.0, temp_c=45.0)
#: Seconds without a batch before `check` runs: past the stall time (20 s).
QUIET_S = 22.0
DEADLINE_S = 180.0


def wait_quiet(probe_dir: Path, pids: set[int] | None, count: int = 1) -> dict[int, dict[str, Any]]:
    """The probe files once ``count`` trainers (``pids``, or any) have counted no batch for
    `QUIET_S`, as their files say."""
    deadline = time.monotonic() + DEADLINE_S
    docs: dict[int, dict[str, Any]] = {}
    while time.monotonic() < deadline:
        docs = {pid: d for pid, d in probe_docs(probe_dir).items()
                if pids is None or pid in pids}
        quiet = [d for d in docs.values() if d["batches"] > 0 and d["last_batch_s"] is not None
                 and d["elapsed_s"] - d["last_batch_s"] >= QUIET_S]
        if len(quiet) >= count:
            return docs
        time.sleep(0.5)
    raise AssertionError(f"no {count} quiet trainers in {DEADLINE_S:.0f} s: {docs}")


def line_of(text: str) -> int:
    """The line of the job that holds ``text`` (1-based)."""
    lines = Path(JOB).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def the_card(report: dict[str, Any]) -> dict[str, Any]:
    [card] = report["cards"]
    return card["verdict"]  # type: ignore[no-any-return]


def test_a_blocked_main_thread_beside_a_heartbeat_thread_is_stalled(
    fake_bin: FakeBin, private_probe_dir: Path, tmp_path: Path
) -> None:
    """The heartbeat thread appends a line a second (its read/write calls move the process's
    counters); the main thread has not moved for 20 s: stalled, with where it waits."""
    spec = next(s for s in all_specs() if s.tool == "hy-smi")
    fake_bin.add_for_spec(spec, [[HELD]])
    log = tmp_path / "heartbeat.log"
    proc = start_job(private_probe_dir, argv=run_argv(
        sys.executable, JOB, "--mode", "heartbeat", "--log", str(log)))
    try:
        pid = wait_ready(proc)
        wait_quiet(private_probe_dir, {pid})
        report = check(fake_bin, private_probe_dir, duration=3.0)
        beats = log.read_text().count("alive")
    finally:
        rc, _, err = stop_job(proc)
    assert rc == 0, err
    assert beats >= QUIET_S - 2, beats  # the heartbeat ran all along
    verdict = the_card(report)
    assert verdict["kind"] == "stalled", verdict
    why = " | ".join(verdict["why"])
    blocked_at = f"hang_job.py:{line_of('stop.wait()  # the main thread blocks')}"
    assert "the training thread's stack has not changed" in why, why
    assert any(w.startswith("the trainer (PID") and "has waited" in w and blocked_at in w
               for w in verdict["why"]), why


@contextmanager
def collective_job(probe_dir: Path, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    stop = tmp_path / "stop"
    cmd = run_argv(sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc-per-node", "2", JOB, "--mode", "collective", "--stop", str(stop))
    agent = subprocess.Popen(cmd, env=job_env(probe_dir, {"OMP_NUM_THREADS": "1"}),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        yield agent
    finally:
        stop.write_text("")
        _, err = agent.communicate(timeout=120)
        assert agent.returncode == 0, err[-3000:]


@pytest.mark.parametrize("card", [HELD, SPINNING], ids=["idle-card", "spinning-card"])
def test_a_rank_that_never_joins_the_all_reduce_is_named_as_elsewhere(
    fake_bin: FakeBin, private_probe_dir: Path, tmp_path: Path, card: FakeCard
) -> None:
    """Rank 0 waits in all_reduce; rank 1 sleeps instead: both have stopped (stalled at
    20 s, also while the collective spins the card at 100 %), rank 0's wait is named with
    its line, rank 1 as the rank elsewhere."""
    spec = next(s for s in all_specs() if s.tool == "hy-smi")
    fake_bin.add_for_spec(spec, [[card]])
    with collective_job(private_probe_dir, tmp_path):
        docs = wait_quiet(private_probe_dir, None, count=2)
        report = check(fake_bin, private_probe_dir, duration=3.0)
    assert {d["rank"] for d in docs.values()} == {0, 1}
    verdict = the_card(report)
    assert verdict["kind"] == "stalled", verdict
    why = " | ".join(verdict["why"])
    waits_at = f"hang_job.py:{line_of('rank 0 waits here')}"
    sleeps_at = f"hang_job.py:{line_of('rank 1 never comes')}"
    assert any(w.startswith("rank 0 has waited") and "in torch.distributed.all_reduce" in w
               and waits_at in w for w in verdict["why"]), why
    assert any(w.startswith("rank 1 has waited") and sleeps_at in w
               for w in verdict["why"]), why
    assert any("rank 1 is elsewhere" in w and "likely culprit" in w
               for w in verdict["why"]), why
