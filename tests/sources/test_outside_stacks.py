"""Stack dumps of trainers with no probe (`OutsideStacks`): which trainers are dumped and how
often, a real py-spy reading a real hung job, an older py-spy without JSON, and none at all."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from gpusat_tui.analysis.outside_stacks.outside_stack import dump_place
from gpusat_tui.model import ProcessSample
from gpusat_tui.sources.polling.outside_stacks import (
    DUMP_EVERY_S,
    QUIET_S,
    STILL_EVERY_S,
    OutsideStacks,
)
from tests.jobs.hung_job import WAIT_LINE
from tests.outside_helpers import hung_job, require_py_spy

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "pyspy"


def trainer(pid: int, cpu: float | None) -> ProcessSample:
    return ProcessSample(pid=pid, role="trainer", name="python", cpu_pct=cpu)


def test_pegged_trainers_are_dumped_once_a_minute_quiet_ones_every_stall_time() -> None:
    stacks = OutsideStacks(clock=time.time)
    procs = [trainer(1, 0.5), trainer(2, 99.0), trainer(3, 40.0), trainer(4, 0.5),
             ProcessSample(pid=5, role="dataloader_worker", name="w", cpu_pct=0.0)]
    wanted = {t: stacks.wanted(procs, {4}, t) for t in (0.0, 1.0, QUIET_S, QUIET_S + 1)}
    assert wanted == {0.0: [2], 1.0: [], QUIET_S: [1], QUIET_S + 1: []}
    # the quiet one again each stall time (two dumps tell a thread standing still), the
    # pegged one not again within the minute, then again
    assert QUIET_S + 2 * STILL_EVERY_S < DUMP_EVERY_S - 1
    assert stacks.wanted(procs, {4}, QUIET_S + STILL_EVERY_S - 1) == []
    assert stacks.wanted(procs, {4}, QUIET_S + STILL_EVERY_S) == [1]
    assert stacks.wanted(procs, {4}, QUIET_S + 2 * STILL_EVERY_S - 1) == []
    assert stacks.wanted(procs, {4}, QUIET_S + 2 * STILL_EVERY_S) == [1]
    assert stacks.wanted(procs, {4}, DUMP_EVERY_S - 1) == []
    assert stacks.wanted(procs, {4}, DUMP_EVERY_S) == [2]
    # a poll that lists no process forgets nothing
    assert stacks.wanted([], (), DUMP_EVERY_S + 1) == []
    assert stacks.wanted(procs, {4}, DUMP_EVERY_S + 2) == []
    # work ends the quiet: a new quiet spell counts from its start
    busy = [trainer(1, 50.0)]
    assert stacks.wanted(busy, (), 200.0) == []
    assert stacks.wanted([trainer(1, 0.0)], (), 201.0) == []
    assert stacks.wanted([trainer(1, 0.0)], (), 201.0 + QUIET_S) == [1]


def fake_py_spy(tmp_path: Path, body: str) -> str:
    """A stand-in py-spy: a Python script that logs its arguments and runs ``body``."""
    exe = tmp_path / "py-spy"
    exe.write_text(f"#!{sys.executable}\nimport sys, pathlib\n"
                   f"pathlib.Path({str(tmp_path / 'calls')!r}).open('a').write("
                   "' '.join(sys.argv[1:]) + '\\n')\n" + body)
    exe.chmod(0o755)
    return str(tmp_path)


def test_an_older_py_spy_without_json_is_read_as_text(tmp_path: Path) -> None:
    text = (SAMPLES / "dump-socket-recv-heartbeat.txt").read_text()
    path = fake_py_spy(tmp_path, (
        "if '--json' in sys.argv:\n"
        "    sys.stderr.write(\"error: Found argument '--json' which wasn't expected\\n\")\n"
        "    sys.exit(2)\n"
        f"sys.stdout.write({text!r})\n"
    ))
    stacks = OutsideStacks(clock=lambda: 50.0, path=path)

    async def polls() -> list[ProcessSample | None]:
        seen = []
        for now in (0.0, QUIET_S, QUIET_S + 1, QUIET_S + 2):
            [sample] = stacks.attach([trainer(757, 0.0)], (), now)
            seen.append(sample)
            await stacks.wait()  # a poll never waits for the dump: the next one gets it
        await stacks.dump(757)
        return seen

    quiet, started, first, carried = [s.stack_dump for s in asyncio.run(polls())]
    assert quiet is None  # not quiet long enough yet
    assert started is None  # the dump runs in the background
    dump = first
    assert dump is not None and dump.error is None and dump.t == 50.0
    assert [f.function for f in dump.frames] == ["<module>", "train_step", "all_reduce"]
    # the dump is carried on later polls, and --json is not tried again
    assert carried == dump
    # ...until it is older than a dump taken since would be (the trainer works again)
    [working] = stacks.attach([trainer(757, 50.0)], (), dump.t + 1.5 * DUMP_EVERY_S + 1)
    assert working.stack_dump is None
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == ["dump --pid 757 --json", "dump --pid 757", "dump --pid 757"]


def test_a_stopped_trainer_is_not_dumped() -> None:
    stacks = OutsideStacks(clock=time.time)
    stopped = ProcessSample(pid=9, role="trainer", name="python", cpu_pct=0.0, state="stopped")
    assert [stacks.wanted([stopped], (), t) for t in (0.0, QUIET_S, 2 * QUIET_S)] == [[]] * 3


def test_without_py_spy_the_dump_says_it_is_missing(tmp_path: Path) -> None:
    stacks = OutsideStacks(clock=lambda: 7.0, path=str(tmp_path))
    dump = asyncio.run(stacks.dump(os.getpid()))
    assert (dump.error, dump.frames, dump.t) == ("missing", (), 7.0)


def test_a_py_spy_that_hangs_is_killed_and_reported(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import gpusat_tui.sources.polling.outside_stacks as outside

    monkeypatch.setattr(outside, "DUMP_TIMEOUT_S", 0.5)
    path = fake_py_spy(tmp_path, "import time\ntime.sleep(60)\n")
    dump = asyncio.run(OutsideStacks(clock=time.time, path=path).dump(1))
    assert dump.error == "failed" and "did not answer" in (dump.message or "")


def test_a_real_py_spy_names_the_line_a_real_hung_job_waits_on() -> None:
    with hung_job() as job:
        exe = require_py_spy(job.pid)
        stacks = OutsideStacks(clock=time.time, path=os.path.dirname(exe))
        dump = asyncio.run(stacks.dump(job.pid))
    assert dump.error is None, dump
    assert dump.thread == "MainThread"
    place = dump_place(dump.frames)
    assert place is not None and place.line == f"hung_job.py:{WAIT_LINE}", dump.frames
    assert dump.frames[-1].module == "threading"  # the innermost frame: Event.wait's
