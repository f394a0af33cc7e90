"""The stream shape: one long-lived child per tool, read record by record (`sources.streams`).

Toy streaming tool: each record is one line ``TOY <index> <util>``; fake executables from
`tests.fakes.stream` print them every period and then exit, hang, go silent or print garbage.
Every test ends with no process left behind and no zombie.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterator

import pytest

from gpusat_tui.collectors.base import Query, Stream, ToolReading, ToolSpec
from gpusat_tui.collectors.records import LineRecords, RowGroups
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardReading, Frame
from gpusat_tui.sources.polling import procs, stream_poll, streams
from gpusat_tui.sources.polling.live import LiveSource
from gpusat_tui.sources.polling.streams import ToolStream
from tests.conftest import leftover_processes, zombie_children
from tests.fakes.stream import Run, write_fake_stream
from tests.fakes.tool import FakeBin
from tests.sources.test_live import MAIN, FakeMonitor, card, toy_render


def toy_record_parse(text: str) -> ToolReading:
    cards = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[0] != "TOY":
            raise ParseError(f"not a TOY record: {line[:40]!r}")
        cards.append(CardReading(vendor="jetson", index=int(parts[1]), util_pct=float(parts[2])))
    return ToolReading(cards=cards)


TOY_STREAM = Stream(name="stream", args=("--every", "{interval_ms}"), parse=toy_record_parse)


def stream_spec(tool: str = "toy-stream", queries: tuple[Query, ...] = (),
                stream: Stream = TOY_STREAM, group: str = "") -> ToolSpec:
    return ToolSpec(tool=tool, vendor="jetson", names=(tool,), queries=queries, stream=stream,
                    group=group)


def source(fake_bin: FakeBin, *specs: ToolSpec, **kw: object) -> LiveSource:
    kw.setdefault("process_monitor", FakeMonitor())
    kw.setdefault("interval", 0.2)
    kw.setdefault("timeout", 1.0)
    return LiveSource(specs=list(specs), path=fake_bin.path, **kw)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _quick_restarts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(stream_poll, "STREAM_FIRST_BACKOFF_S", 0.1)
    yield
    # A test that failed half-way must not leave its children to the next one.
    streams.stop_all_streams()


async def no_leftovers(fake_bin: FakeBin) -> None:
    assert leftover_processes(fake_bin.dir, grace=1.0) == []
    assert zombie_children() == []
    assert not streams._STREAMS and not procs.RUNNING


async def poll_until(src: LiveSource, done, limit: float = 5.0) -> list[Frame]:
    frames: list[Frame] = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        frames.append(await src.poll_once())
        if done(frames[-1]):
            return frames
        await asyncio.sleep(src.interval)
    raise AssertionError(f"condition never met in {limit} s; last frame: {frames[-1]!r}")


def utils(frame: Frame) -> list[float | None]:
    return [c.util_pct for c in frame.cards]


# --- framing ---------------------------------------------------------------------------------


def test_line_records_skip_blank_lines() -> None:
    framer = LineRecords()
    assert framer.feed("RAM 1/2MB") == ["RAM 1/2MB"]
    assert framer.feed("   ") == [] and framer.flush() == []


def test_row_groups_end_a_sample_on_a_repeated_key_a_header_or_a_pause() -> None:
    framer = RowGroups(is_header=lambda line: line.startswith("ID"),
                       key=lambda line, header: line.split()[0])
    assert framer.feed("ID util") == []
    assert framer.feed("0 10") == [] and framer.feed("1 20") == []
    assert framer.pending
    assert framer.feed("0 11") == ["ID util\n0 10\n1 20\n"]  # key 0 again: the next sample
    assert framer.flush() == ["ID util\n0 11\n"]  # the stream paused
    assert not framer.pending and framer.flush() == []
    framer.feed("5 1")
    assert framer.feed("ID util") == ["ID util\n5 1\n"]  # a new header closes the sample


# --- one child, read record by record --------------------------------------------------------


async def test_records_are_read_as_they_come_and_the_child_is_reaped_on_close(
    fake_bin: FakeBin,
) -> None:
    fake = write_fake_stream(fake_bin.dir / "toy-stream", [
        Run(records=["TOY 0 10", "TOY 0 20", "TOY 0 30"], period=0.15),
    ])
    src = source(fake_bin, stream_spec())
    frames = await poll_until(src, lambda f: utils(f) == [30.0])
    assert utils(frames[0]) == [10.0]
    assert all(c.stale_s is None and c.tool == "toy-stream" for f in frames for c in f.cards)
    assert all(not f.errors for f in frames)
    assert fake.starts() == 1
    assert fake.argv() == ["--every 200"]  # {interval_ms} filled from the poll interval
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_a_child_that_exits_is_restarted_and_its_last_record_stands_in(
    fake_bin: FakeBin,
) -> None:
    fake = write_fake_stream(fake_bin.dir / "toy-stream", [
        Run(records=["TOY 0 10"], then="exit", rc=3),
        Run(records=["TOY 0 30"], delay=0.8),
    ])
    src = source(fake_bin, stream_spec())
    first = await src.poll_once()
    assert utils(first) == [10.0]
    frames = await poll_until(src, lambda f: utils(f) == [30.0] and not f.errors)
    # The exit is said on the first poll after it: the first one itself where the child
    # exited before it (a busy machine).
    notes = [n for f in [first, *frames] for n in f.notes]
    said = [n for n in notes if n.startswith("toy-stream exited with status 3: fake: device")]
    assert len(said) == 1, notes  # once, not on every poll
    # While the restarted child had printed nothing yet, the old record stood in, stale.
    quiet = [f for f in frames if f.errors]
    assert quiet and all(c.stale_s is not None and c.stale_s > 0.6 and c.util_pct == 10.0
                         for f in quiet for c in f.cards)
    assert {e.kind for f in quiet for e in f.errors} <= {"exit", "timeout"}
    assert fake.starts() == 2
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_a_child_that_keeps_exiting_is_restarted_with_growing_waits(
    fake_bin: FakeBin,
) -> None:
    fake = write_fake_stream(fake_bin.dir / "toy-stream", [
        Run(records=[], then="exit", rc=2, stderr="no such device"),
    ])
    src = source(fake_bin, stream_spec())
    t0 = time.monotonic()
    frames = []
    while time.monotonic() - t0 < 1.6:
        frames.append(await src.poll_once())
        await asyncio.sleep(0.05)
    # Waits of 0.1, 0.2, 0.4, 0.8 s: at most 5 starts in 1.6 s (a loop would make dozens).
    assert 3 <= fake.starts() <= 5
    assert all(f.cards == [] for f in frames)
    errors = [e for f in frames for e in f.errors]
    assert errors and all(e.kind == "exit" for e in errors)
    assert "toy-stream exited with status 2: no such device" in errors[-1].message
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_a_quiet_child_leaves_its_last_record_stale_then_is_killed_and_restarted(
    fake_bin: FakeBin, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stream_poll, "STREAM_SILENT_RESTART_S", 1.5)
    fake = write_fake_stream(fake_bin.dir / "toy-stream", [
        Run(records=["TOY 0 10"], then="hang"),
        Run(records=["TOY 0 40"]),
    ])
    src = source(fake_bin, stream_spec())
    assert utils(await src.poll_once()) == [10.0]
    frames = await poll_until(src, lambda f: utils(f) == [40.0] and not f.errors)
    quiet = [f for f in frames if f.errors]
    assert quiet, "the hung child was never reported"
    assert all(e.kind == "timeout" for f in quiet for e in f.errors), quiet
    assert "printed no record for" in quiet[0].errors[0].message
    ages = [c.stale_s for f in quiet for c in f.cards]
    assert all(a is not None for a in ages) and ages == sorted(ages)  # its age, growing
    notes = [n for f in frames for n in f.notes]
    assert any("printed nothing for 2 s; killed" in n for n in notes), notes
    assert fake.starts() == 2
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_a_garbage_record_is_a_parse_error_and_the_last_good_one_stands_in(
    fake_bin: FakeBin,
) -> None:
    write_fake_stream(fake_bin.dir / "toy-stream", [
        Run(records=["TOY 0 10"], then="garbage", period=0.1),
    ])
    src = source(fake_bin, stream_spec())
    assert utils(await src.poll_once()) == [10.0]
    frames = await poll_until(src, lambda f: bool(f.errors))
    bad = frames[-1]
    assert [e.kind for e in bad.errors] == ["parse"]
    assert bad.errors[0].message.startswith("toy-stream: not a TOY record")
    assert "toy-stream" in bad.raw
    assert utils(bad) == [10.0] and bad.cards[0].stale_s is not None
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_a_missing_stream_tool_is_an_error(fake_bin: FakeBin) -> None:
    src = source(fake_bin, stream_spec())
    src.overrides["toy-stream"] = str(fake_bin.dir / "not-there")
    frame = await src.poll_once()
    assert [e.kind for e in frame.errors] == ["missing"]
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_closing_the_frame_stream_kills_the_child(fake_bin: FakeBin) -> None:
    write_fake_stream(fake_bin.dir / "toy-stream", [Run(records=["TOY 0 10"])])
    src = source(fake_bin, stream_spec())
    async with contextlib.aclosing(src.frames()) as frames:
        async for frame in frames:
            assert utils(frame) == [10.0]
            assert leftover_processes(fake_bin.dir) != []  # the child runs between polls
            break
    await no_leftovers(fake_bin)


async def test_kill_running_tools_reaches_stream_children(fake_bin: FakeBin) -> None:
    write_fake_stream(fake_bin.dir / "toy-stream", [Run(records=["TOY 0 10"], then="hang")])
    src = source(fake_bin, stream_spec())
    await src.poll_once()
    assert procs.kill_running_tools() == 1
    assert leftover_processes(fake_bin.dir, grace=1.0) == []
    await src.aclose()
    await no_leftovers(fake_bin)


# --- a loop mode beside the calls ------------------------------------------------------------


async def test_a_preferred_loop_mode_replaces_the_required_call(fake_bin: FakeBin) -> None:
    fake = write_fake_stream(fake_bin.dir / "toy-stream", [Run(records=["TOY 0 77"])])
    src = source(fake_bin, stream_spec(queries=(MAIN,)))
    frame = await src.poll_once()
    assert utils(frame) == [77.0] and fake.starts() == 1
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_a_refused_loop_mode_falls_back_to_calls_for_the_session(
    fake_bin: FakeBin,
) -> None:
    tool = fake_bin.add("toy-stream", toy_render, [[card(0, 55)]],
                        arg_lists=[(), ("--every", "200")], refuse=[("--every", "200")])
    src = source(fake_bin, stream_spec(queries=(MAIN,)))
    frames = [await src.poll_once() for _ in range(3)]
    assert [utils(f) for f in frames] == [[55.0]] * 3
    assert any("ended before its first record" in n and "calling it every poll instead" in n
               for n in frames[0].notes), frames[0].notes
    assert tool.calls(("--every", "200")) == 1 and tool.calls(()) == 3
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_a_silent_loop_mode_falls_back_to_calls_for_the_session(
    fake_bin: FakeBin,
) -> None:
    """A loop mode that runs but never prints (output buffered in a pipe) gives way to calls."""
    real = fake_bin.add("toy-calls", toy_render, [[card(0, 55)]])
    wrapper = fake_bin.dir / "toy-stream"
    wrapper.write_text(
        f'#!/bin/sh\nif [ "$1" = "--every" ]; then exec sleep 60; fi\nexec {real.path} "$@"\n'
    )
    wrapper.chmod(0o755)
    src = source(fake_bin, stream_spec(queries=(MAIN,)), timeout=0.5)
    frames = [await src.poll_once() for _ in range(3)]
    assert [utils(f) for f in frames] == [[55.0]] * 3
    assert any("printed no record within" in n and "calling it every poll instead" in n
               for n in frames[0].notes), frames[0].notes
    assert all(f.errors == [] for f in frames)
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_streams_off_calls_a_tool_that_has_a_call_mode(fake_bin: FakeBin) -> None:
    tool = fake_bin.add("toy-stream", toy_render, [[card(0, 55)]],
                        arg_lists=[(), ("--every", "200")])
    src = source(fake_bin, stream_spec(queries=(MAIN,)), streams=False)
    assert utils(await src.poll_once()) == [55.0]
    assert tool.calls(("--every", "200")) == 0
    await src.aclose()


# --- ToolStream alone ------------------------------------------------------------------------


async def test_a_line_past_the_cap_kills_the_child(tmp_path) -> None:
    runner = ToolStream(["/bin/sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x; sleep 600"],
                        LineRecords, cap=1000, first_backoff_s=60.0)
    runner.start()
    pid = runner.pid
    await runner.wait_record(3.0)
    assert runner.latest is None and runner.exits == 1
    assert runner.exit_message == "printed a line longer than 1000 bytes; killed"
    assert not runner.running and runner.restart_at is not None
    runner.stop()
    assert zombie_children() == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # type: ignore[arg-type]


async def test_a_record_split_across_reads_is_read_whole() -> None:
    runner = ToolStream(
        ["/bin/sh", "-c", "printf 'TOY 0 '; sleep 0.2; printf '12\\n'; sleep 600"],
        LineRecords, first_backoff_s=60.0,
    )
    runner.start()
    record = await runner.wait_record(3.0)
    assert record is not None and record.text == "TOY 0 12"
    runner.stop()
    assert zombie_children() == []


async def test_a_pty_stream_is_read_line_by_line() -> None:
    runner = ToolStream(
        ["/bin/sh", "-c", "[ -t 1 ] && echo 'TOY 0 1' || echo 'not a tty'; sleep 600"],
        LineRecords, use_pty=True, first_backoff_s=60.0,
    )
    runner.start()
    record = await runner.wait_record(3.0)
    assert record is not None and record.text == "TOY 0 1"
    runner.stop()
    assert zombie_children() == []


async def test_the_monitor_cpu_counts_a_running_stream_child(fake_bin: FakeBin) -> None:
    # A child that spins between records: its CPU is the monitor's cost too, though it is
    # reaped only when it ends.
    script = fake_bin.dir / "toy-stream"
    script.write_text("#!/bin/sh\nwhile :; do echo 'TOY 0 5'; i=0;"
                      " while [ $i -lt 20000 ]; do i=$((i+1)); done; done\n")
    script.chmod(0o755)
    src = source(fake_bin, stream_spec())
    frames = [await src.poll_once()]
    for _ in range(4):
        await asyncio.sleep(0.2)
        frames.append(await src.poll_once())
    shown = [f.monitor_cpu_pct for f in frames[1:]]
    # Without the child, this process alone shows ~1 %; the spinning child gets far more
    # than 5 % of a core even on a loaded machine.
    assert all(pct is not None for pct in shown), shown
    assert sum(shown) / len(shown) > 5.0, shown  # type: ignore[arg-type]
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_a_slow_first_record_is_waited_for(fake_bin: FakeBin) -> None:
    write_fake_stream(fake_bin.dir / "toy-stream", [Run(records=["TOY 0 33"], delay=0.4)])
    src = source(fake_bin, stream_spec())
    frame = await src.poll_once()
    assert utils(frame) == [33.0] and frame.errors == []
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_npu_smi_watch_opted_in_streams_its_rows_through_a_pty(fake_bin: FakeBin) -> None:
    from gpusat_tui.collectors import all_specs
    from tests.fakes import FakeCard
    from tests.fakes.formats import npu_smi_watch as watch_fmt
    from tests.fakes.stream import write_dispatch

    spec = next(s for s in all_specs() if s.tool == "npu-smi")
    cards = [FakeCard(index=i, util_pct=20.0 + i, mem_used_mib=1000.0, mem_total_mib=65536.0,
                      power_w=100.0 + i, temp_c=40.0) for i in range(4)]
    stream = write_fake_stream(fake_bin.dir / "npu-smi-watch", [Run(records=[
        watch_fmt.render_sample(cards), watch_fmt.render_sample(cards, header=False),
    ], period=0.2)])
    calls = fake_bin.add_for_spec(spec, [cards], name="npu-smi-calls")
    write_dispatch(fake_bin.dir / "npu-smi", "watch", stream.path, calls.path)
    src = source(fake_bin, spec, streams=True)
    frames = [await src.poll_once()]
    for _ in range(3):
        await asyncio.sleep(0.2)
        frames.append(await src.poll_once())
    for frame in frames:
        assert [(c.index, c.util_pct, c.power_w) for c in frame.cards] == [
            (i, 20.0 + i, 100.0 + i) for i in range(4)
        ]
        assert frame.errors == []
    assert stream.starts() == 1 and calls.calls(("info",)) == 0
    await src.aclose()
    await no_leftovers(fake_bin)


async def test_a_child_that_closes_its_output_but_lingers_is_killed() -> None:
    runner = ToolStream(["/bin/sh", "-c", "echo 'TOY 0 1'; exec 1>&-; exec sleep 600"],
                        LineRecords, first_backoff_s=60.0)
    runner.start()
    pid = runner.pid
    await runner.wait_record(3.0)
    await runner.wait_record(3.0)  # then the end of its output
    assert runner.latest is not None and runner.latest.text == "TOY 0 1"
    assert runner.exits == 1 and runner.exit_message == "closed its output"
    assert not runner.running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # type: ignore[arg-type]
    runner.stop()
    assert zombie_children() == []
