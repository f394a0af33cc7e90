"""A second Ctrl-C while ``check --record`` is stopping: ignored, the stop completes, 130.

Real processes and real signals: the first SIGINT starts the clean stop (tool killed, recording
closed, report printed); a second one at any moment of it (while the source closes, while the
report is printed, while the interpreter exits) must neither kill the process by the signal
nor lose a frame the run reported.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gpusat_tui.collectors.nvidia_smi import SPECS
from gpusat_tui.errors import RecordingError
from gpusat_tui.sources.recording.reader import read_recording
from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin

REPO = Path(__file__).resolve().parents[2]


def _wait_until(check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def _frames_in(path: Path) -> tuple[list[int], list[str]]:
    _, reader = read_recording(path)
    with reader:
        seqs = [f.seq for f in reader]
    return seqs, reader.notes


def _frames_so_far(path: Path) -> int:
    try:
        return len(_frames_in(path)[0])
    except (RecordingError, FileNotFoundError):  # not created, or its header not written yet
        return 0


# The second signal lands at different moments of the stop: while the source is being closed,
# while the report is printed, while the interpreter exits (each of those windows killed the
# process by the signal before).
@pytest.mark.parametrize("gap_s", [0.0, 0.05, 0.1, 0.2, 0.4])
def test_two_sigints_to_a_recording_check(fake_bin: FakeBin, tmp_path: Path, gap_s: float) -> None:
    fake_bin.add_for_spec(SPECS[0], [[FakeCard(0), FakeCard(1)]], loop_flag="-lms")
    path = tmp_path / "run.jsonl.zst"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpusat_tui", "check", "--json", "--record", str(path),
         "--duration", "600", "--interval", "0.2"],
        env=fake_bin.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
    )
    try:
        _wait_until(lambda: _frames_so_far(path) >= 3)
        proc.send_signal(signal.SIGINT)
        time.sleep(gap_s)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (proc.returncode, err.decode()[-2000:])
    report = json.loads(out)
    seqs, notes = _frames_in(path)
    assert seqs == list(range(len(seqs))), "no frame lost or torn in the recording"
    assert len(seqs) >= report["samples"] >= 3, "every frame the report counted was recorded"
    assert notes == []
    assert b"Traceback" not in err


def test_a_stop_that_overruns_its_bound_ends_at_the_next_signal(tmp_path: Path) -> None:
    """Signals are ignored only for STOP_GRACE_S: a stop stuck past it is ended by the next."""
    script = textwrap.dedent(
        """
        import asyncio, sys, time
        from gpusat_tui.commands import stopping
        stopping.STOP_GRACE_S = 1.0

        async def main():
            async with stopping.stopped_by_signals() as received:
                try:
                    print("polling", flush=True)
                    await asyncio.sleep(600)
                finally:
                    print("stopping", flush=True)
                    time.sleep(600)  # a close that never ends (a stuck flush)
            return received

        asyncio.run(main())
        sys.exit(3)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={"PYTHONPATH": str(REPO), "PATH": "/bin:/usr/bin"},
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"polling\n"
        proc.send_signal(signal.SIGINT)
        assert proc.stdout.readline() == b"stopping\n"
        proc.send_signal(signal.SIGINT)  # within the bound: ignored
        time.sleep(0.2)
        assert proc.poll() is None, "a second signal within the bound does not end the stop"
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)  # past the bound: ends it now
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
