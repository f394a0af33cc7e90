"""What one poll reads from a tool's stream: the newest record, parsed once, and its age.

`sources.streams.ToolStream` runs the child; this is the poll's side of it. On its first read
a `StreamPoll` starts the child and waits up to 2.5 periods for a first good record (or for the
child to exit: a usage text, a missing device). Afterwards a read never waits: it takes the
newest record, parses it if no earlier poll did, and returns its cards. No fresh record (none
yet, the child exited, or the newest is older than `STREAM_QUIET_PERIODS` periods: the tool
went quiet) raises `ToolFailed`, so the live source carries the last cards over, stale with the
record's age; a garbage record raises `ToolRefused`. A loop mode that ends before its first
good record (an older tool without ``-lms``) returns None: the tool is then called per poll.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from gpusat_tui.collectors.base import Query, Stream, ToolReading, ToolSpec
from gpusat_tui.errors import ParseError
from gpusat_tui.sources.polling.procs import MAX_OUTPUT_BYTES, ToolFailed, ToolRefused
from gpusat_tui.sources.polling.streams import Record, ToolStream

__all__ = [
    "STREAM_FIRST_BACKOFF_S",
    "STREAM_QUIET_PERIODS",
    "STREAM_SILENT_RESTART_S",
    "StreamPoll",
    "stream_for",
]

#: A stream record older than this many periods (intervals) is stale: the tool went quiet.
STREAM_QUIET_PERIODS = 3.0
#: A stream child silent this long (at least two quiet spans) is killed and restarted.
STREAM_SILENT_RESTART_S = 30.0
#: First wait before restarting a stream child that exited (doubles up to 30 s).
STREAM_FIRST_BACKOFF_S = 1.0


def stream_for(spec: ToolSpec, required: Sequence[Query], streams: bool | None) -> Stream | None:
    """The stream ``spec`` is read through, if any.

    A tool with no required query has no other way to be read. For the others ``streams``
    decides: None = the measured default (`Stream.preferred`), True = use it, False = calls.
    """
    stream = spec.stream
    if stream is None:
        from gpusat_tui.collectors.loops import loop_stream

        stream = loop_stream(spec.tool)
    if stream is None or spec.reader is not None:
        return None
    if not required:
        return stream
    if streams is None:
        return stream if stream.preferred else None
    return stream if streams else None


def fill(text: str, period: float) -> str:
    """``{interval_ms}`` / ``{interval_s}`` of a stream's argv or config."""
    return text.replace("{interval_ms}", str(max(1, round(period * 1000)))).replace(
        "{interval_s}", str(max(1, round(period)))
    )


class StreamPoll:
    """One tool's stream as the polls see it."""

    def __init__(self, tool: str, exe: str, stream: Stream, interval: float,
                 timeout: float) -> None:
        self.tool = tool
        self.exe = exe
        self.stream = stream
        #: The period the tool is asked for: the poll interval, or the tool's shortest.
        self.period = max(interval, stream.min_period_s)
        self.timeout = timeout
        self.runner: ToolStream | None = None
        #: Age in seconds of the record the last `read` returned.
        self.age = 0.0
        self._seq = -1
        self._parsed: ToolReading | ToolRefused | None = None
        self._ok = False  # some record parsed this session
        self._exits_said = 0

    def stop(self) -> None:
        """Kill and reap the child (synchronous: nothing can interrupt it)."""
        if self.runner is not None:
            self.runner.stop()
            self.runner = None

    def cpu_s(self) -> float:
        return self.runner.cpu_s() if self.runner is not None else 0.0

    def _start(self) -> ToolStream:
        period = self.period
        config = self.stream.config
        runner = ToolStream(
            [self.exe, *(fill(a, period) for a in self.stream.args)],
            self.stream.framer,
            use_pty=self.stream.pty,
            config=fill(config, period) if config is not None else None,
            cap=MAX_OUTPUT_BYTES,
            silent_restart_s=max(STREAM_SILENT_RESTART_S, 2 * STREAM_QUIET_PERIODS * period),
            first_backoff_s=STREAM_FIRST_BACKOFF_S,
        )
        try:
            runner.start()
        except PermissionError as exc:
            raise ToolFailed(f"cannot run {self.exe}: {exc.strerror}", "denied") from None
        except OSError as exc:
            raise ToolFailed(
                f"cannot run {self.exe}: {exc.strerror or exc}", "missing"
            ) from None
        self.runner = runner
        return runner

    async def read(self, notes: list[str], may_fall_back: bool) -> ToolReading | None:
        """The newest record's reading (see the module docstring); notes go to ``notes``.

        ``may_fall_back``: the tool can also be called (it has required queries and none has
        answered yet), so a loop mode that ends before a good record gives way (None).
        """
        tool, stream = self.tool, self.stream
        runner = self.runner or self._start()
        if not self._ok and runner.exits == 0:
            # Until a first good record: wait for one (up to 2.5 periods), or for the child to
            # exit, whichever comes first.
            deadline = time.monotonic() + max(self.timeout, 2.5 * self.period)
            while runner.exits == 0 and (left := deadline - time.monotonic()) > 0:
                if runner.latest is not None:
                    self._parse_newest(runner.latest)
                    if self._ok:
                        break
                await runner.wait_record(left)
        runner.check_silence()
        record = runner.latest
        if record is not None:
            self._parse_newest(record)
        if runner.exits and may_fall_back and not self._ok:
            self.stop()
            notes.append(
                f"{tool} {stream.name} ended before its first record ({runner.exit_message});"
                " calling it every poll instead"
            )
            return None
        if record is None and may_fall_back and not self._ok:
            # A loop mode that runs but prints nothing (it may buffer its output when not on
            # a terminal; never verified on every driver): the calls still work, use them.
            self.stop()
            notes.append(
                f"{tool} {stream.name} printed no record within "
                f"{max(self.timeout, 2.5 * self.period):.1f} s; calling it every poll instead"
            )
            return None
        restart = ""
        if runner.restart_at is not None:
            restart = f"; restarting it in {max(0.0, runner.restart_at - runner.clock()):.1f} s"
        if record is None:
            if runner.exits:
                raise ToolFailed(f"{tool} {runner.exit_message}{restart}", runner.exit_kind)
            raise ToolFailed(f"{tool} printed no record within {self.timeout:.1f} s", "timeout")
        if runner.exits > self._exits_said:
            self._exits_said = runner.exits
            notes.append(f"{tool} {runner.exit_message}{restart}")
        age = max(0.0, runner.clock() - record.at)
        if age > STREAM_QUIET_PERIODS * self.period:
            if not runner.running and runner.exit_message:
                raise ToolFailed(f"{tool} {runner.exit_message}{restart}", runner.exit_kind)
            raise ToolFailed(f"{tool} printed no record for {age:.1f} s", "timeout")
        parsed = self._parsed
        if isinstance(parsed, ToolRefused):
            raise parsed
        assert parsed is not None
        self.age = age
        return parsed

    def _parse_newest(self, record: Record) -> None:
        """Parse ``record`` unless it was parsed already (one parse per record, not per poll)."""
        if record.seq == self._seq:
            return
        self._seq = record.seq
        self._parsed = _parse_record(self.tool, self.stream, record.text)
        if isinstance(self._parsed, ToolReading):
            self._ok = True


def _parse_record(tool: str, stream: Stream, text: str) -> ToolReading | ToolRefused:
    try:
        return stream.parse(text)
    except ParseError as exc:
        return ToolRefused(f"{tool}: {exc}", "parse", raw=text)
    except Exception as exc:  # a parser bug must not take the poll down either
        return ToolRefused(
            f"{tool}: parser failed ({type(exc).__name__}: {exc})", "parse", raw=text
        )
