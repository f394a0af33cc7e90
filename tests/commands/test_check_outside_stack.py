"""End to end: a real hung job with no probe (`tests/jobs/hung_job.py`: the main thread blocked
for good, a heartbeat thread beside it) given with ``--pid`` beside a fake tool whose card holds
its VRAM at util 0. With py-spy, ``check --json``'s stalled verdict names the line the trainer
waits on, sampled from outside, and the trainer's process entry carries the dump; without it,
the advice names the extra that installs it. Each run lasts the stall time (~22 s)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.commands.test_check_verdicts import run_check, scenario_steps, spec_named
from tests.fakes.tool import FakeBin
from tests.jobs.hung_job import WAIT_LINE
from tests.outside_helpers import hung_job, require_py_spy
from tests.scenarios import SCENARIOS


def stalled_check(fake_bin: FakeBin, pid: int, duration_s: float = 22.0) -> dict[str, object]:
    fake_bin.add_for_spec(spec_named("nvidia-smi"),
                          scenario_steps(SCENARIOS["stalled"], range(30, 130)))
    return run_check(fake_bin, "--duration", str(duration_s), "--pid", str(pid))


def test_an_unprobed_hung_job_shows_where_it_waits(fake_bin: FakeBin) -> None:
    with hung_job() as job:
        exe = require_py_spy(job.pid)
        os.symlink(exe, Path(fake_bin.dir) / "py-spy")  # the only py-spy on the check's PATH
        report = stalled_check(fake_bin, job.pid)
    verdict = report["cards"][0]["verdict"]  # type: ignore[index]
    assert verdict["kind"] == "stalled", verdict
    place = f"the trainer (PID {job.pid}) has waited "
    line = next((w for w in verdict["why"] if w.startswith(place)), None)
    assert line is not None, verdict["why"]
    assert f"at hung_job.py:{WAIT_LINE} (sampled from outside by py-spy" in line, line
    [proc] = [p for p in report["processes"] if p["pid"] == job.pid]  # type: ignore[attr-defined]
    dump = proc["stack_dump"]
    assert dump["tool"] == "py-spy" and dump["error"] is None, dump
    assert dump["line"] == f"hung_job.py:{WAIT_LINE}"
    assert any(f.startswith("wait_for_peer (") for f in dump["frames"]), dump["frames"]


def test_without_py_spy_the_stalled_verdict_names_the_extra(fake_bin: FakeBin) -> None:
    if shutil.which("py-spy", path=fake_bin.path):
        pytest.skip("py-spy is installed system-wide: it cannot be left off PATH here")
    with hung_job() as job:
        report = stalled_check(fake_bin, job.pid)
    verdict = report["cards"][0]["verdict"]  # type: ignore[index]
    assert verdict["kind"] == "stalled", verdict
    assert any("pip install 'gpusat-tui[pyspy]'" in a for a in verdict["advice"]), verdict
    assert not any("has waited" in w for w in verdict["why"])
    [proc] = [p for p in report["processes"] if p["pid"] == job.pid]  # type: ignore[attr-defined]
    assert proc["stack_dump"]["error"] == "missing"


def test_a_hung_job_whose_heartbeat_writes_is_stalled_by_two_outside_dumps(
    fake_bin: FakeBin, tmp_path: Path,
) -> None:
    """Its second thread appends a record each second (12 writes: its read/write counters move
    past the progress line), so the host side is not quiet; two dumps a stall time apart show
    the main thread on the same line, its own CPU flat: stalled, with the place."""
    log = tmp_path / "heartbeat.log"
    with hung_job(heartbeat_file=log) as job:
        exe = require_py_spy(job.pid)
        os.symlink(exe, Path(fake_bin.dir) / "py-spy")
        report = stalled_check(fake_bin, job.pid, duration_s=45.0)
        assert log.stat().st_size > 0  # the heartbeat wrote all along
    verdict = report["cards"][0]["verdict"]  # type: ignore[index]
    assert verdict["kind"] == "stalled", verdict
    line = next((w for w in verdict["why"]
                 if w.startswith(f"the trainer (PID {job.pid}) has waited ")), None)
    assert line is not None, verdict["why"]
    assert f"at hung_job.py:{WAIT_LINE} (sampled from outside by py-spy" in line, line
    [proc] = [p for p in report["processes"] if p["pid"] == job.pid]  # type: ignore[attr-defined]
    assert proc["stack_dump"]["still_since"] is not None, proc["stack_dump"]
