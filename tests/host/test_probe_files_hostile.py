"""Probe files written to harm the monitor: a PID that cannot be, files naming processes that
cannot have written them, figures that cannot be, and a folder flooded with bad files. Each bad
file costs that file only, with one note; a flood costs one note per poll."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.host.probes.probe_files import ProbePoller, ProbeReader
from gpusat_tui.host.probes.probe_notes import SUMMARY_AFTER
from gpusat_tui.host.probes.probe_writer import is_python, writer_refusal
from gpusat_tui.model import CardReading
from gpusat_tui.probe.layout import file_name

#: A layout-1 file from the documented keys (as tests/host/test_probe_files.py has it).
HAND_WRITTEN: dict[str, Any] = {
    "layout": 1, "pid": 0, "start_ticks": None, "uid": os.getuid(), "t": 1000.0,
    "elapsed_s": 12.5, "interval_s": 1.0, "batches": 300, "steps": 290, "data_wait_s": 5.0,
    "data_wait_pct": 43.0, "step_ms": 182.0, "step_source": "optimizer",
    "batches_per_s": 5.5, "samples_per_s": 1240.0, "batch_size": 225, "rank": 1,
    "local_rank": 1, "world_size": 8, "device_type": "cuda", "device_index": 1, "hip": False,
    "env": {"CUDA_VISIBLE_DEVICES": "4,5,6,7", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
    "alloc": {"allocated_bytes": 10 * 2**30, "reserved_bytes": 12 * 2**30,
              "inactive_split_bytes": 2**28, "alloc_retries": 0, "ooms": 0},
    "cmd": "train.py",
}


def write(folder: Path, doc: dict[str, Any], pid: int | None = None) -> Path:
    path = folder / file_name(doc["pid"] if pid is None else pid)
    path.write_text(json.dumps(doc))
    path.chmod(0o600)
    return path


def mine(**update: Any) -> dict[str, Any]:
    """A layout-1 document of this (live, Python) test process, published just now."""
    return {**HAND_WRITTEN, "pid": os.getpid(), "t": time.time(), **update}


def nv(index: int) -> CardReading:
    return CardReading(vendor="nvidia", index=index, name="H100")


def poll(reader: ProbeReader) -> tuple[list[Any], list[str]]:
    """One poll as the live source makes it (through the poller, which never raises)."""
    notes: list[str] = []
    samples, _ = ProbePoller(reader).poll([nv(i) for i in range(8)], [], notes)
    return samples, notes


def start(*argv: str, **kw: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, **kw)


@pytest.fixture
def python_child() -> Iterator[subprocess.Popen[bytes]]:
    """A live Python interpreter of this user: a process that can be a trainer."""
    proc = start(sys.executable, "-c", "import time; time.sleep(120)")
    yield proc
    proc.kill()
    proc.wait()


def doc_of(pid: int, **update: Any) -> dict[str, Any]:
    return {**HAND_WRITTEN, "pid": pid, "t": time.time(), **update}


# --- one bad file costs that file only -------------------------------------------------------


def test_a_pid_beyond_any_pid_hides_no_trainer(tmp_path: Path) -> None:
    write(tmp_path, mine())
    bad = write(tmp_path, doc_of(10**12))
    reader = ProbeReader(dirs=[str(tmp_path)])
    samples, notes = poll(reader)
    assert [s.pid for s in samples] == [os.getpid()]
    assert len(notes) == 1 and bad.name in notes[0] and "cannot be" in notes[0]
    assert "OverflowError" not in notes[0]
    samples, notes = poll(reader)  # every poll, the trainer; the note once
    assert [s.pid for s in samples] == [os.getpid()] and notes == []


@pytest.mark.parametrize(
    "update",
    [
        {"env": {"CUDA_VISIBLE_DEVICES": "\u00b2"}, "device_index": 0},  # a digit int() refuses
        {"env": {"CUDA_VISIBLE_DEVICES": "9" * 5000}, "device_index": 0},
        {"data_wait_pct": 10**400, "step_ms": -(10**400)},  # ints no float can hold
        {"alloc": {"allocated_bytes": 10**400}, "t": 10**400},
        {"env": {"CUDA_VISIBLE_DEVICES": 7}, "device_index": 0, "alloc": [1]},
        {"rank": 2**70, "world_size": -1, "local_rank": 2**70},
    ],
    ids=["unicode-digit", "5000-digit-entry", "huge-ints", "huge-alloc-and-t", "wrong-shapes",
         "huge-ranks"],
)
def test_odd_content_costs_at_most_that_file(
    tmp_path: Path, python_child: subprocess.Popen[bytes], update: dict[str, Any]
) -> None:
    write(tmp_path, mine())
    write(tmp_path, doc_of(python_child.pid, **update))
    samples, notes = poll(ProbeReader(dirs=[str(tmp_path)]))
    assert os.getpid() in [s.pid for s in samples], notes
    assert not any("probe files not read" in n for n in notes), notes
    assert len(notes) <= 1


def test_an_exception_while_checking_one_file_costs_that_file(
    tmp_path: Path, python_child: subprocess.Popen[bytes]
) -> None:
    write(tmp_path, mine())
    bad = write(tmp_path, doc_of(python_child.pid))

    def pid_state(pid: int, ticks: int | None) -> str:
        if pid == python_child.pid:
            raise OverflowError("as os.kill raises for a PID beyond a C int")
        return "alive"

    samples, notes = poll(ProbeReader(dirs=[str(tmp_path)], pid_state=pid_state))
    assert [s.pid for s in samples] == [os.getpid()]
    assert notes == [f"probe file {bad} unreadable: OverflowError"]


# --- files naming a process that cannot have written them ---------------------------------------


def test_a_shell_named_by_a_probe_file_is_no_trainer(tmp_path: Path) -> None:
    shell = start("bash", "-c", "sleep 120; true")  # a live process of this user, not Python
    try:
        path = write(tmp_path, doc_of(shell.pid, data_wait_pct=77.0))
        samples, notes = poll(ProbeReader(dirs=[str(tmp_path)]))
        assert samples == []
        assert len(notes) == 1 and path.name in notes[0]
        assert f"PID {shell.pid} (bash) is not a Python interpreter" in notes[0]
        assert path.exists()  # a live process's: not ours to remove
    finally:
        shell.kill()
        shell.wait()


def test_a_file_written_before_its_process_started_is_refused(
    tmp_path: Path, python_child: subprocess.Popen[bytes]
) -> None:
    path = write(tmp_path, doc_of(python_child.pid))
    reader = ProbeReader(dirs=[str(tmp_path)])
    assert [s.pid for s in poll(reader)[0]] == [python_child.pid]  # a Python, started before
    an_hour_ago = time.time() - 3600
    os.utime(path, (an_hour_ago, an_hour_ago))  # the PID's process started after the file
    samples, notes = poll(reader)
    assert samples == [] and "started after the file was written" in notes[0]


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to start a process as another user")
def test_a_process_of_another_user_is_refused(tmp_path: Path) -> None:
    # An interpreter that user can run (this one may sit in root's home).
    python = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3")
                   if os.access(p, os.X_OK)), None)
    if python is None:
        pytest.skip("no system-wide python3 for another user to run")
    other = start(python, "-c", "import time; time.sleep(120)", user=65534, cwd="/")
    try:
        write(tmp_path, doc_of(other.pid))
        samples, notes = poll(ProbeReader(dirs=[str(tmp_path)]))
        assert samples == [] and "belongs to another user (uid 65534)" in notes[0]
    finally:
        other.kill()
        other.wait()


def test_python_interpreters_by_name() -> None:
    for name in ("/usr/bin/python3.12", "python", "python3", "/opt/py/bin/python3.13t",
                 "python3.12d", "/usr/lib/pypy3.10/bin/pypy3.10", "/usr/bin/python3.11 (deleted)"):
        assert is_python(name), name
    for name in ("/usr/bin/bash", "sh", "/usr/bin/sleep", "ipython", "pythonista-app", "", "/"):
        assert not is_python(name), name
    assert writer_refusal(os.getpid(), os.getuid(), time.time()) is None
    assert writer_refusal(2**22 + 1, os.getuid(), time.time()) == f"PID {2**22 + 1} has exited"


# --- figures that cannot be --------------------------------------------------------------------


def test_impossible_figures_are_dropped_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / file_name(os.getpid())
    doc = mine(data_wait_pct=1e308, step_ms=-5.0, batches_per_s=math.nan, samples_per_s=1e400,
               batches=-3, data_wait_s=-1.0, elapsed_s=12.5, rank=-1, device_index=10**6,
               alloc={"allocated_bytes": -1, "reserved_bytes": 2**60, "ooms": 0})
    path.write_text(json.dumps(doc))  # NaN and Infinity as Python's json writes them
    reader = ProbeReader(dirs=[str(tmp_path)])
    [sample], notes = reader.sample([nv(i) for i in range(8)])
    assert (sample.data_wait_pct, sample.step_ms, sample.batches_per_s, sample.samples_per_s,
            sample.data_wait_s, sample.rank, sample.device_index) == (None,) * 7
    assert sample.batches == 0 and sample.elapsed_s == 12.5
    assert sample.alloc is not None and sample.alloc.ooms == 0
    assert (sample.alloc.allocated_bytes, sample.alloc.reserved_bytes) == (None, None)
    assert len(notes) == 1
    for part in ("data_wait_pct=1e+308", "step_ms=-5.0", "batches_per_s=nan", "batches=-3",
                 "samples_per_s=inf", "rank=-1", "device_index=1000000",
                 "alloc.allocated_bytes=-1", "alloc.reserved_bytes=1152921504606846976"):
        assert part in notes[0], (part, notes[0])
    assert "1e+308" not in sample.model_dump_json()  # what check --json would carry
    assert reader.sample([nv(0)])[1] == []  # said once


def test_a_share_a_hair_over_100_is_rounding_and_a_time_far_ahead_is_none(tmp_path: Path) -> None:
    write(tmp_path, mine(data_wait_pct=100.4, t=time.time() + 86400 * 365))
    [sample], notes = ProbeReader(dirs=[str(tmp_path)]).sample()
    assert sample.data_wait_pct == 100.0 and sample.age_s is None
    assert len(notes) == 1 and "t=" in notes[0] and "data_wait_pct" not in notes[0]


def test_a_dead_pid_with_a_time_far_ahead_is_still_removed(tmp_path: Path) -> None:
    # A time far in the future would keep a leftover "fresh" for ever.
    path = write(tmp_path, {**HAND_WRITTEN, "pid": 4_000_000, "start_ticks": 1, "t": 1e10})
    samples, notes = ProbeReader(dirs=[str(tmp_path)]).sample()
    assert samples == [] and not path.exists()
    assert notes == ["PID 4000000 exited: its probe file was removed"]


# --- a flooded folder --------------------------------------------------------------------------


def test_ten_thousand_bad_files_give_one_note_per_poll(tmp_path: Path) -> None:
    # start_ticks that no live process has: each PID reads as exited even if it is running.
    for pid in range(100_000, 109_998):
        (tmp_path / file_name(pid)).write_text(
            json.dumps({**HAND_WRITTEN, "pid": pid, "start_ticks": 1, "t": 1.0}))
    for pid in (11, 12):
        (tmp_path / file_name(pid)).write_bytes(b'{"layout": 1, "pid"')
    write(tmp_path, mine())  # and a real trainer among them
    reader = ProbeReader(dirs=[str(tmp_path)])
    samples, notes = poll(reader)
    assert [s.pid for s in samples] == [os.getpid()]
    assert len(notes) == 1, notes[:3]
    assert notes[0].startswith(
        "10,000 probe files skipped: 9,998 of exited processes, 2 corrupt; first: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [file_name(11), file_name(12), file_name(os.getpid())])
    samples, notes = poll(reader)  # the corrupt ones were said: silence
    assert [s.pid for s in samples] == [os.getpid()] and notes == []


def test_a_few_bad_files_are_each_named(tmp_path: Path) -> None:
    for pid in range(11, 11 + SUMMARY_AFTER):
        (tmp_path / file_name(pid)).write_bytes(b"garbage")
    notes = poll(ProbeReader(dirs=[str(tmp_path)]))[1]
    assert len(notes) == SUMMARY_AFTER and all("truncated or corrupt" in n for n in notes)


def test_a_bad_file_that_is_rewritten_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / file_name(os.getpid())
    path.write_bytes(b'{"layout": 1, "pid"')
    reader = ProbeReader(dirs=[str(tmp_path)])
    assert poll(reader)[0] == [] and poll(reader) == ([], [])  # refused, then not re-read
    write(tmp_path, mine())
    assert [s.pid for s in poll(reader)[0]] == [os.getpid()]
    path.write_bytes(b"garbage again")  # bad again: said again, it is news
    samples, notes = poll(reader)
    assert samples == [] and len(notes) == 1 and "corrupt" in notes[0]
