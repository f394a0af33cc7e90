"""The per-poll shortcuts of the live source give exactly what the long way gives.

Each shortcut (the monitor's own CPU) is checked against the code it replaces, kept
here as the reference: `num`'s plain-decimal path, the csv header test of nvidia-smi's parser,
the host CPU read from ``/proc/stat``, the process monitor's cheap ticks on the event loop (a
full scan still in a thread), the stream child's CPU read through kept descriptors, and a
stream's sample made a record at the next look rather than by a timer of its own.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusat_tui.collectors import nvidia_smi
from gpusat_tui.collectors.base import NA_TOKENS, num
from gpusat_tui.collectors.records import LineRecords, RowGroups
from gpusat_tui.host.monitor import processes
from gpusat_tui.host.monitor.proc_readers import PsutilReader
from gpusat_tui.host.monitor.processes import ProcessMonitor, ProcessReport
from gpusat_tui.host.monitor.procfs import ProcfsReader
from gpusat_tui.model import CardProcess, HostSample, ProcessSample
from gpusat_tui.sources.polling.streams import SETTLE_S, ToolStream
from tests.fakes.tool import FakeBin
from tests.sources.test_live import MAIN, card, source, toy_render, toy_spec

# --- num ---------------------------------------------------------------------------------------

_NUM_RE = re.compile(r"[-+]?\d+(?:\.\d+)?")


def reference_num(token: str | None) -> float | None:
    """`num` before its plain-decimal shortcut."""
    if token is None:
        return None
    cleaned = token.strip().lower()
    if cleaned in NA_TOKENS or cleaned.strip("[]") in NA_TOKENS:
        return None
    match = _NUM_RE.search(cleaned)
    return float(match.group()) if match else None


CELL_BITS = st.sampled_from(
    ["0", "7", "42", "404", "00", ".", "..", "5.", ".5", "-", "+", " ", "\t", "W", " MiB", "%",
     "N/A", "[N/A]", "nan", "inf", "1e3", "e", "_", "1_000", "٣", "²", "0x1F", "ERR!", ","]
)


@given(st.lists(CELL_BITS, max_size=6).map("".join))
@settings(max_examples=600, deadline=None)
def test_num_equals_the_regex_reading_of_any_cell(cell: str) -> None:
    assert num(cell) == reference_num(cell)


@pytest.mark.parametrize("cell", ["75", " 404.00 ", "0.5", "007", "٣", "1_000", "5.", ".5",
                                  "12.5W", "[N/A]", "", None])
def test_num_on_the_usual_cells(cell: str | None) -> None:
    assert num(cell) == reference_num(cell)


# --- nvidia-smi csv: the header test -----------------------------------------------------------


def reference_csv_rows(text: str, fields: Sequence[str]) -> list[dict[str, str]]:
    """`nvidia_smi._csv_rows` before the one-search header shortcut: every line is looked at
    as a header."""
    fields = tuple(nvidia_smi._ALIASES.get(f, f) for f in fields)
    rows: list[dict[str, str]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        header = nvidia_smi._header_fields(cells)
        if header is not None:
            fields = header
            continue
        if len(cells) > len(fields):
            cells = nvidia_smi._rejoin_name(cells, fields)
        if len(cells) != len(fields):
            continue
        rows.append(dict(zip(fields, cells, strict=True)))
    return rows


def test_no_known_header_name_has_a_digit() -> None:
    # The shortcut rules a line out as a header by its cells with digits.
    assert not [n for n in nvidia_smi._KNOWN_HEADER if any(ch.isdigit() for ch in n)]


HEADER_CELLS = st.sampled_from(
    [*sorted(nvidia_smi._KNOWN_HEADER), "memory.used [MiB]", "power.draw [W]", "index [1]",
     "utilization.gpu [%]", " name ", "Name", "foo", "gpu2", "0", "75 %", "81920 MiB", "[N/A]",
     "GPU-00000000-0000", "00000000:10:00.0", "Fake H100 0", "0x0000000000000004", "", "[",
     "1 [MiB]", "a[1]b", "index[2]"]
)
LINES = st.lists(st.lists(HEADER_CELLS, min_size=1, max_size=12).map(", ".join), max_size=6)


@given(LINES)
@settings(max_examples=400, deadline=None)
def test_csv_rows_equal_the_reference_on_any_lines(lines: list[str]) -> None:
    text = "\n".join(lines)
    for fields in (nvidia_smi.QUERY_GPU_EVENT_FIELDS, nvidia_smi.QUERY_APPS_FIELDS):
        assert nvidia_smi._csv_rows(text, fields) == reference_csv_rows(text, fields)


def test_a_header_line_with_units_is_still_a_header() -> None:
    text = ("index, memory.used [MiB], utilization.gpu [%]\n"
            "0, 8192 MiB, 75 %\n1, 100 MiB, 3 %\n")
    rows = nvidia_smi._csv_rows(text, ("whatever",))
    assert rows == reference_csv_rows(text, ("whatever",))
    assert [r["memory.used"] for r in rows] == ["8192 MiB", "100 MiB"]


# --- host CPU from /proc/stat ------------------------------------------------------------------

STAT = "cpu  4705 150 1120 16250 520 0 36 7 110 3\ncpu0 2000 75 560 8000 260 0 18 3 55 1\n"


def reference_host(times: object) -> tuple[float, float, float | None]:
    """The totals the monitor made of psutil.cpu_times() before /proc/stat was read."""
    total = sum(times)  # type: ignore[call-overload]
    total -= getattr(times, "guest", 0.0) + getattr(times, "guest_nice", 0.0)
    iowait = getattr(times, "iowait", None)
    idle = times.idle + (iowait or 0.0)  # type: ignore[attr-defined]
    return total, idle, iowait


def test_host_cpu_from_proc_stat_is_psutils_figure(tmp_path: Path) -> None:
    (tmp_path / "stat").write_text(STAT)
    reader = ProcfsReader(root=str(tmp_path))
    ticks = reader.clock_ticks
    fields = [float(x) / ticks for x in STAT.split("\n")[0].split()[1:]]
    scputimes = type(psutil.cpu_times())
    expected = reference_host(scputimes(*fields[: len(scputimes._fields)]))
    assert reader.host_cpu() == expected
    # Re-read through the same descriptor: a changed file is read afresh.
    (tmp_path / "stat").write_text(STAT.replace("16250", "16350"))
    assert reader.host_cpu()[1] == pytest.approx(expected[1] + 100 / ticks)
    reader.close()


def test_host_cpu_off_the_usual_layout_asks_psutil(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scputimes = type(psutil.cpu_times())
    fixed = scputimes(*[float(i + 1) for i in range(len(scputimes._fields))])
    monkeypatch.setattr(psutil, "cpu_times", lambda: fixed)
    (tmp_path / "stat").write_text("intr 1 2 3\n")
    assert ProcfsReader(root=str(tmp_path)).host_cpu() == reference_host(fixed)
    assert ProcfsReader(root=str(tmp_path / "none")).host_cpu() == reference_host(fixed)
    assert PsutilReader.host_cpu() == reference_host(fixed)


def test_the_live_host_figure_is_psutils() -> None:
    mine, theirs = ProcfsReader().host_cpu(), reference_host(psutil.cpu_times())
    # Read a moment apart: the same counters, a few ticks on.
    assert mine[0] == pytest.approx(theirs[0], abs=1.0)
    assert mine[1] == pytest.approx(theirs[1], abs=1.0)


# --- the process monitor's steady tick ---------------------------------------------------------


class CountingClock:
    def __init__(self) -> None:
        self.t = 100.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.t


def ticks_left_to_sample(monitor: ProcessMonitor, clock: CountingClock, ticks: int,
                         step: float) -> list[int]:
    """Run ``ticks`` ticks through `sample_if_cheap`, `sample` where it declines; which did."""
    me = os.getpid()
    deferred = []
    for tick in range(ticks):
        clock.t = 100.0 + step * tick
        report = monitor.sample_if_cheap()
        if report is None:
            assert monitor._last_scan != clock.t  # declined: nothing done
            report = monitor.sample()
            deferred.append(tick)
        assert monitor._last_scan is not None
        assert [(p.pid, p.role) for p in report.processes] == [(me, "trainer")]
        assert report.host.cpu_count == psutil.cpu_count()
    return deferred


def test_only_a_full_scan_is_left_to_sample() -> None:
    clock = CountingClock()
    monitor = ProcessMonitor(pids=[os.getpid()], rescan_s=3.0, clock=clock, use_procfs=True)
    assert monitor.sample_if_cheap() is None  # the first tick scans every process
    assert monitor._last_scan is None and clock.reads == 1
    clock.t = 100.5  # a later reading must not be used: the tick is the deferred one
    monitor.sample()
    assert clock.reads == 1 and monitor._last_scan == 100.0
    clock.reads = 0
    # A rescan every tick (1 s apart, rescan_s 1): the full ones are every FULL_EVERY-th.
    monitor = ProcessMonitor(pids=[os.getpid()], rescan_s=1.0, clock=clock, use_procfs=True)
    every = ProcfsReader.FULL_EVERY
    assert ticks_left_to_sample(monitor, clock, 2 * every + 1, 1.0) == [0, every, 2 * every]
    assert clock.reads == 2 * every + 1  # one reading per tick, deferred or not
    # Steady ticks between rescans (3 s apart) are all done on the caller's thread.
    monitor = ProcessMonitor(pids=[os.getpid()], rescan_s=3.0, clock=clock, use_procfs=True)
    assert ticks_left_to_sample(monitor, clock, 12, 0.5) == [0]
    # A listing that changes is looked at at once, as with `sample`.
    listed = [CardProcess(pid=os.getpid(), card_id="nvidia:0")]
    report = monitor.sample_if_cheap(listed)
    assert report is not None and report.processes[0].card_ids == ["nvidia:0"]
    monitor.close()


def test_on_a_big_machine_or_through_psutil_every_scan_is_left_to_sample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = CountingClock()
    for use_procfs in (False, True):
        if use_procfs:
            monkeypatch.setattr(processes, "INLINE_SCAN_MAX", 1)  # this machine is "big"
        monitor = ProcessMonitor(pids=[os.getpid()], rescan_s=3.0, clock=clock,
                                 use_procfs=use_procfs)
        assert ticks_left_to_sample(monitor, clock, 10, 1.0) == [0, 3, 6, 9]
        monitor.close()


class SplitMonitor:
    """A monitor with a steady path: every other tick is a "rescan" left to `sample`."""

    def __init__(self) -> None:
        self.ticks = 0
        self.threads: list[tuple[str, str]] = []

    def _report(self, how: str) -> ProcessReport:
        return ProcessReport(
            processes=[ProcessSample(pid=7, role="trainer", name=how)],
            host=HostSample(cpu_pct=float(self.ticks)),
        )

    def sample_if_cheap(self, card_processes: Sequence[CardProcess] = ()) -> ProcessReport | None:
        self.threads.append(("steady", threading.current_thread().name))
        if self.ticks % 2 == 0:
            return None
        self.ticks += 1
        return self._report("steady")

    def sample(self, card_processes: Sequence[CardProcess] = ()) -> ProcessReport:
        self.threads.append(("sample", threading.current_thread().name))
        self.ticks += 1
        return self._report("sample")


async def test_the_live_source_ticks_steadily_on_the_loop_and_rescans_in_a_thread(
    fake_bin: FakeBin,
) -> None:
    fake_bin.add("toy-smi", toy_render, [[card(0, 10)]])
    monitor = SplitMonitor()
    src = source(fake_bin, toy_spec(queries=(MAIN,)), process_monitor=monitor)
    frames = [await src.poll_once() for _ in range(4)]
    await src.aclose()
    loop_thread = threading.current_thread().name
    assert [f.processes[0].name for f in frames] == ["sample", "steady", "sample", "steady"]
    assert [f.host.cpu_pct for f in frames] == [1.0, 2.0, 3.0, 4.0]
    steady = {t for kind, t in monitor.threads if kind == "steady"}
    sampled = {t for kind, t in monitor.threads if kind == "sample"}
    assert steady == {loop_thread} and loop_thread not in sampled


# --- the stream child's CPU through kept descriptors -------------------------------------------


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def test_stream_child_cpu_is_read_through_descriptors_closed_with_it(tmp_path: Path) -> None:
    script = tmp_path / "spin"
    script.write_text("#!/bin/sh\necho 'x'\ni=0; while [ $i -lt 200000 ]; do i=$((i+1)); done\n"
                      "exec sleep 30\n")
    script.chmod(0o755)
    before = open_fds()
    stream = ToolStream([str(script)], LineRecords)
    stream.start()
    try:
        first_pid = stream.pid
        seen: list[float] = []
        for _ in range(40):
            await asyncio.sleep(0.05)
            seen.append(stream.cpu_s())
        assert seen == sorted(seen) and seen[-1] > 0.05  # it spun: its own CPU, growing
        assert stream._cpu_fds is not None and stream._cpu_fds[0] == first_pid
        # A new child (the first one killed, as for silence): read afresh, not the old one.
        stream._end_child(kill=True)
        assert stream._cpu_fds is None and stream.cpu_s() == 0.0
        stream._spawn()
        assert stream.pid != first_pid
        assert stream.cpu_s() < seen[-1]
        assert stream._cpu_fds is not None and stream._cpu_fds[0] == stream.pid
    finally:
        stream.stop()
    assert stream._cpu_fds is None
    assert len(open_fds()) <= len(before)  # nothing left open


# --- a stream's sample settles at the next look -------------------------------------------------


def rows() -> RowGroups:
    return RowGroups(is_header=lambda line: False, key=lambda line, header: line.split()[0])


async def test_a_paused_sample_is_a_record_at_the_next_look_without_a_timer(
    tmp_path: Path,
) -> None:
    script = tmp_path / "rows"
    script.write_text("#!/bin/sh\nprintf '0 a\\n1 b\\n'\nsleep 0.3\nprintf '0 c\\n1 d\\n'\n"
                      "exec sleep 30\n")
    script.chmod(0o755)
    stream = ToolStream([str(script)], rows)
    stream.start()
    try:
        first = await stream.wait_record(5.0)  # someone waits: a timer settles the rows
        assert first is not None and first.text == "0 a\n1 b\n"
        for _ in range(200):  # the second sample's rows, with nobody waiting
            if stream._settle_due is not None:
                break
            await asyncio.sleep(0.01)
        due = stream._settle_due
        assert due is not None and stream._settle is None  # pending, and no timer for it
        assert stream._latest is first
        while stream.clock() < due:
            await asyncio.sleep(SETTLE_S / 4)
        second = stream.latest
        assert second is not None and second.text == "0 c\n1 d\n"
        assert second.seq == first.seq + 1 and second.at == due  # stamped as a timer would
        assert stream.latest is second  # settled once
    finally:
        stream.stop()


async def test_rows_pending_when_the_output_ends_are_a_record(tmp_path: Path) -> None:
    script = tmp_path / "rows"
    script.write_text("#!/bin/sh\nprintf '0 a\\n1 b\\n'\n")
    script.chmod(0o755)
    stream = ToolStream([str(script)], rows)
    stream.start()
    try:
        record = await stream.wait_record(5.0)
        for _ in range(200):
            if stream.exits:
                break
            await asyncio.sleep(0.01)
        assert record is not None and record.text == "0 a\n1 b\n" and stream.exits == 1
        assert stream.latest is not None and stream.latest.seq == record.seq
    finally:
        stream.stop()
