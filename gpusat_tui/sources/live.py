"""Live polling of every vendor tool: the schedule, and what each tool's answer becomes.

Collectors are declarative (`collectors.base.ToolSpec`): this module finds their executables,
runs their queries concurrently (child processes run by `sources.procs`, never a shell), and
turns whatever happens (an answer, a usage text, garbage, a crash, a hang) into a `Frame`.
Nothing a tool does can crash the monitor or leave a process behind:

* every call runs in its own session, and on a timeout, on close or on cancellation the
  *whole process group* is killed and reaped (`sources.procs.run_tool`);
* output is capped (`MAX_OUTPUT_BYTES`): a tool spewing garbage is killed, not buffered;
* a failing tool's cards are carried over with ``stale_s`` = their age, so a card never blinks
  out because of one bad poll; a card that is missing from an otherwise good answer is dropped
  with a note;
* tools of one ``group`` (hy-smi / amd-smi / rocm-smi on a DCU box; NVML / nvidia-smi) see the
  same cards, so only the first one that is found *and answers* is used.
* a tool read as a stream (`collectors.base.Stream`: tegrastats, neuron-monitor, nvidia-smi's
  ``-lms``) keeps one child for the session (`sources.streams`); each poll takes its newest
  record (`sources.stream_poll`) in place of the required calls, and a quiet or exited stream
  is carried over stale like a failed call.

Costs: one fork+exec per query per interval (a few ms of CPU for a C tool); the figures are
in ``Frame.monitor_cpu_pct`` so the monitor's own cost is always on screen. Per-card
enrichments (``Query(per_card=True)``: npu-smi's ``-t usages -i N``, one call per card, ~27 ms
per poll for 8 cards) run only every `DEFAULT_ENRICH_EVERY` polls (``enrich_every``): in
between, their last figures are merged again as they were, not marked stale, since the card's
required view (the figures the verdict reads) is fresh on every poll. The cost of the choice:
an enrichment-only figure (AIVector %, say) can be up to ``enrich_every - 1`` polls old.
Process-list queries (``Query(process_list=True)``: nvidia-smi ``--query-compute-apps``,
rocm-smi / hy-smi ``--showpids``) are throttled the same way, their last list standing in:
a poll then costs one tool call instead of two, and a new trainer is tied to its card at most
``enrich_every - 1`` polls late. A tool that times out twice in a row is backed off (asked
again after 2, 4, 8, up to `MAX_SKIP_POLLS` polls; its error and stale cards stand in).
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from gpusat_tui.collectors.base import (
    Query,
    ToolReading,
    ToolSpec,
    card_args,
    find_executable,
    merge_cards,
    resolve_process_cards,
    vet_reading,
)
from gpusat_tui.errors import GpusatError, ParseError, ToolMissing
from gpusat_tui.model import (
    CardProcess,
    CardReading,
    Frame,
    HostSample,
    ProcessSample,
    ToolError,
)
from gpusat_tui.probes import ProbePoller
from gpusat_tui.sources.procs import (
    MAX_OUTPUT_BYTES,
    RunResult,
    ToolFailed,
    ToolRefused,
    _Timeout,
    _TooMuch,
    kill_running_tools,
    run_tool,
)
from gpusat_tui.sources.stream_poll import StreamPoll, stream_for

__all__ = [
    "DEFAULT_ENRICH_EVERY",
    "MAX_OUTPUT_BYTES",
    "RAW_KEEP_CHARS",
    "LiveSource",
    "ProcessMonitorLike",
    "RunResult",
    "SourceClosed",
    "kill_running_tools",
    "run_tool",
]

#: How much raw output of a failed parse is kept on the Frame (for bug reports).
RAW_KEEP_CHARS = 4096
#: Per-card enrichment queries run on one poll in this many (see the module docstring).
DEFAULT_ENRICH_EVERY = 5
#: Where the in-process NVML reader is "found".
IN_PROCESS = "in-process"


class ProcessReportLike(Protocol):
    processes: list[ProcessSample]
    host: HostSample
    notes: list[str]
    errors: list[ToolError]


class ProcessMonitorLike(Protocol):
    """What `gpusat_tui.processes.ProcessMonitor` offers; injected in tests. (It also has
    ``sample_if_cheap``, used where present: see `LiveSource._sample_processes`.)"""

    def sample(self, card_processes: Sequence[CardProcess] = ...) -> ProcessReportLike: ...


#: The most polls a tool that keeps hanging is left alone for (see `LiveSource._back_off`).
MAX_SKIP_POLLS = 16


# --- per-tool session state ------------------------------------------------------------------


@dataclass
class _Poll:
    """What polling one tool once produced."""

    cards: list[CardReading] = field(default_factory=list)
    processes: list[CardProcess] = field(default_factory=list)
    errors: list[ToolError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    raw: dict[str, str] = field(default_factory=dict)
    #: True when the required queries answered and parsed.
    ok: bool = False
    #: The tool is not usable at all (missing, refused, not ours): try the group's next tool.
    unusable: bool = False
    #: ...and certainly never will be (another vendor's tool, no library): drop it even when
    #: it is the last of its group.
    final: bool = False


@dataclass
class _ToolState:
    spec: ToolSpec
    exe: str
    required: list[Query]
    optional: list[Query]
    answered: bool = False
    #: card id -> (last good reading, clock time it was read)
    last_good: dict[str, tuple[CardReading, float]] = field(default_factory=dict)
    #: The in-process reader this source uses (``spec.new_reader(enrich_every)`` or
    #: ``spec.reader``); None for executables.
    reader: Callable[[], ToolReading] | None = None
    #: A thread still running an in-process reader that timed out.
    busy_reader: asyncio.Future[ToolReading] | None = None
    #: Polls left before the per-card enrichments run again (0: on this poll).
    enrich_wait: int = 0
    #: (query name, card index) -> that query's last good reading of that card, merged again
    #: on the polls the enrichments are skipped.
    enriched: dict[tuple[str, int], CardReading] = field(default_factory=dict)
    #: Polls left before the process-list queries run again (0: on this poll).
    process_wait: int = 0
    #: Timeouts in a row, polls still to skip because of them, and the error those repeat.
    hangs: int = 0
    skip_polls: int = 0
    hang_error: ToolError | None = None
    #: Query name -> that process-list query's last answer, used again while it is skipped.
    process_last: dict[str, ToolReading] = field(default_factory=dict)
    #: The stream in use (it replaces the required queries; `sources.stream_poll`), and when
    #: the record this poll read arrived.
    stream: StreamPoll | None = None
    stream_t_read: float | None = None


def _size(n: int) -> str:
    if n % (1 << 20) == 0:
        return f"{n >> 20} MiB"
    if n % 1024 == 0:
        return f"{n >> 10} KiB"
    return f"{n} bytes"


def _first_line(text: str, limit: int = 160) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:limit]
    return ""


#: The tool answered but not with anything we understand (non-zero exit or ParseError).
_Refused = ToolRefused
#: The tool did not answer (timeout, overflow, cannot start, a stream gone quiet).
_Failed = ToolFailed


class LiveSource:
    """Polls every vendor tool found on this machine and yields one `Frame` per interval."""

    label: str = "live"

    def __init__(
        self,
        interval: float = 1.0,
        overrides: Mapping[str, str] | None = None,
        pids: Sequence[int] = (),
        timeout: float | None = None,
        path: str | None = None,
        specs: Sequence[ToolSpec] | None = None,
        process_monitor: ProcessMonitorLike | None = None,
        clock: Callable[[], float] = time.time,
        enrich_every: int = DEFAULT_ENRICH_EVERY,
        streams: bool | None = None,
    ) -> None:
        if enrich_every < 1:
            raise ValueError(f"enrich_every must be at least 1, got {enrich_every!r}")
        self.interval = float(interval)
        #: Per-card enrichment queries run on one poll in ``enrich_every`` (1: every poll).
        self.enrich_every = int(enrich_every)
        #: Streaming modes: None = each tool's measured default (`Stream.preferred`), True =
        #: every stream a tool offers, False = calls only (tools with no other mode still
        #: stream).
        self.streams = streams
        # The default timeout is the interval but at least 1 s: a tool that takes 1.2 s on a
        # loaded 16-chip box is slow, not dead.
        self.timeout = float(timeout) if timeout is not None else max(1.0, self.interval)
        self.overrides = dict(overrides or {})
        self.pids = list(pids)
        self.path = path
        self._specs = list(specs) if specs is not None else None
        self._monitor = process_monitor
        self._monitor_loaded = process_monitor is not None
        self.clock = clock
        self.tools: dict[str, str] = {}
        self.versions: dict[str, str | None] = {}
        #: tool -> places searched, from the last `discover()`.
        self.searched: dict[str, list[str]] = {}
        self._groups: list[list[_ToolState]] | None = None
        self._seq = 0
        self._lock = asyncio.Lock()
        self._closed = False
        self._cpu_mark: tuple[float, float] | None = None
        self._pending_notes: list[str] = []
        #: Keys of the notes `vet_reading` already gave (each said once per session).
        self._vetted: set[str] = set()
        self._inflight: asyncio.Future[list[_Poll]] | None = None
        self._probes = ProbePoller()

    # --- discovery ---------------------------------------------------------------------------

    def _all_specs(self) -> list[ToolSpec]:
        if self._specs is None:
            from gpusat_tui.collectors import all_specs

            self._specs = all_specs()
        return sorted(self._specs, key=lambda s: (s.group or s.tool, s.priority))

    def discover(self) -> dict[str, str]:
        """Find every tool (tool -> executable, or "in-process" for NVML).

        Raises `ToolMissing` listing, per tool, what was searched when nothing at all is found.
        """
        states: dict[str, list[_ToolState]] = {}
        self.tools = {}
        self.searched = {}
        for spec in self._all_specs():
            reader: Callable[[], ToolReading] | None = None
            if spec.new_reader is not None:
                reader = spec.new_reader(self.enrich_every)
            elif spec.reader is not None:
                reader = spec.reader
            if reader is not None:
                exe = IN_PROCESS if self._probe_reader(spec, reader) else None
            else:
                exe, searched = find_executable(spec, self.overrides, self.path)
                self.searched[spec.tool] = searched
            if exe is None:
                continue
            required = [q for q in spec.queries if not q.optional]
            optional = [q for q in spec.queries if q.optional]
            stream = stream_for(spec, required, self.streams)
            states.setdefault(spec.group or spec.tool, []).append(
                _ToolState(spec=spec, exe=exe, required=required, optional=optional,
                           reader=reader,
                           stream=StreamPoll(spec.tool, exe, stream, self.interval,
                                             self.timeout) if stream is not None else None)
            )
            self.tools[spec.tool] = exe
        self._groups = list(states.values())
        if not self.tools:
            raise ToolMissing(self.missing_message())
        return dict(self.tools)

    def _probe_reader(self, spec: ToolSpec, reader: Callable[[], ToolReading]) -> bool:
        """An in-process reader (NVML) is "found" when its library loads. Its notes (no GPM
        counters here, say) go on the first Frame."""
        try:
            reading = reader()
        except ToolMissing as exc:
            self.searched[spec.tool] = [f"in-process library ({exc})"]
            return False
        except Exception as exc:  # a broken driver is as good as none for discovery
            self.searched[spec.tool] = [f"in-process library ({type(exc).__name__}: {exc})"]
            return False
        self.versions[spec.tool] = reading.version
        self._pending_notes.extend(n for n in reading.notes if n not in self._pending_notes)
        return True

    def missing_message(self) -> str:
        """Plain words: no tool found, and where each one was looked for."""
        lines = ["No accelerator tool found. Searched:"]
        for tool, places in self.searched.items():
            lines.append(f"  {tool}: {', '.join(places) or 'nothing'}")
        lines.append("Use --tool VENDOR=PATH (or GPUSAT_TOOL_<TOOL>=PATH) to point at one.")
        return "\n".join(lines)

    # --- polling -----------------------------------------------------------------------------

    async def poll_once(self) -> Frame:
        """Poll every tool once, concurrently; never raises for a tool's misbehaviour."""
        async with self._lock:  # polls never overlap, even if two callers ask at once
            if self._groups is None:
                self.discover()
            assert self._groups is not None
            if self._closed:
                raise SourceClosed("the live source is closed")
            t = self.clock()
            self._inflight = asyncio.ensure_future(
                asyncio.gather(*(self._poll_group(g) for g in self._groups))
            )
            try:
                results = await self._inflight
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if self._closed and task is not None and not task.cancelling():
                    # aclose() cancelled the poll (its tools are dead and reaped by now).
                    raise SourceClosed("the live source was closed mid-poll") from None
                raise
            finally:
                self._inflight = None
            cards: list[CardReading] = []
            processes: list[CardProcess] = []
            errors: list[ToolError] = []
            notes: list[str] = self._pending_notes
            self._pending_notes = []
            raw: dict[str, str] = {}
            for res in results:
                cards.extend(res.cards)
                processes.extend(res.processes)
                errors.extend(e for e in res.errors if e not in errors)
                notes.extend(n for n in res.notes if n not in notes)
                raw.update(res.raw)
            self._groups = [g for g in self._groups if g]
            samples: list[ProcessSample] = []
            host: HostSample | None = None
            # Trainers that publish a probe file are found with no --pid (issue 12).
            probes, probe_pids = self._probes.poll(cards, processes, notes)
            monitor = self._get_monitor()
            if monitor is not None:
                try:
                    report = await self._sample_processes(monitor, processes + probe_pids)
                except Exception as exc:  # the monitor must never take the frame down
                    errors.append(
                        ToolError(tool="psutil", message=f"process scan failed: {exc}",
                                  kind="process")
                    )
                else:
                    samples = list(report.processes)
                    host = report.host
                    notes.extend(n for n in report.notes if n not in notes)
                    errors.extend(report.errors)
            frame = Frame(
                t=t,
                seq=self._seq,
                cards=cards,
                card_processes=processes,
                processes=samples,
                host=host,
                errors=errors,
                notes=notes,
                monitor_cpu_pct=self._monitor_cpu(),
                raw=raw,
                probes=probes,
            )
            self._seq += 1
            return frame

    async def frames(self) -> AsyncIterator[Frame]:
        """First poll at once, then one every ``interval`` on a fixed schedule.

        A poll that overruns its slot is followed right away by the next one, with no backlog
        of missed polls; polls never overlap.
        """
        next_start = time.monotonic()
        try:
            while not self._closed:
                try:
                    frame = await self.poll_once()
                except SourceClosed:
                    return
                yield frame
                next_start += self.interval
                now = time.monotonic()
                if next_start <= now:
                    next_start = now  # overran: start right away, forget the missed slots
                else:
                    await asyncio.sleep(next_start - now)
        finally:
            self._closed = True
            self._stop_streams()

    async def aclose(self) -> None:
        """Stop polling; a poll in flight is cancelled, which kills and reaps its tools."""
        self._closed = True
        self._stop_streams()
        inflight = self._inflight
        if inflight is not None and not inflight.done():
            inflight.cancel()
            # Killing is synchronous inside run_tool; this bound is only a backstop so that
            # closing can never hang the caller.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(inflight), 5.0)
        for group in self._groups or []:
            for state in group:
                # A per-source in-process reader frees what it holds (NVML's GPM buffers).
                close = getattr(state.reader, "close", None)
                if state.spec.new_reader is not None and callable(close):
                    with contextlib.suppress(Exception):
                        close()

    # --- internals ---------------------------------------------------------------------------

    def _stop_streams(self) -> None:
        """Kill and reap every stream child (synchronous: nothing can interrupt it)."""
        for group in self._groups or []:
            for state in group:
                if state.stream is not None:
                    state.stream.stop()

    def _get_monitor(self) -> ProcessMonitorLike | None:
        if not self._monitor_loaded:
            self._monitor_loaded = True
            try:
                from gpusat_tui.processes import ProcessMonitor

                self._monitor = ProcessMonitor(pids=self.pids)
            except Exception as exc:  # no process figures is better than no card figures
                self._monitor = None
                self._pending_notes.append(f"process monitor unavailable: {exc}")
        return self._monitor

    @staticmethod
    async def _sample_processes(
        monitor: ProcessMonitorLike, card_processes: list[CardProcess]
    ) -> ProcessReportLike:
        """The process monitor's tick: a cheap one here on the loop, a full scan in a thread.

        A steady tick re-reads the watched processes (~0.1 ms for a few, 0.5 ms for 72), a
        partial rescan adds a listing of /proc (~0.5 ms for 400 processes): cheaper than the
        thread hop around them (two wake-ups, ~0.4 ms of CPU at 1 Hz on the reference
        machine). A full scan reads every process (ms on a busy host) and must not hold the
        loop the UI runs on. Monitors without `sample_if_cheap` (test doubles) always get a
        thread.
        """
        cheap = getattr(monitor, "sample_if_cheap", None)
        report = cheap(card_processes) if cheap is not None else None
        if report is None:
            report = await asyncio.to_thread(monitor.sample, card_processes)
        return report

    def _monitor_cpu(self) -> float | None:
        """CPU % of this process and the tools it ran (reaped children) since the last poll.

        Same figures as os.times(), but getrusage counts microseconds where os.times counts
        10 ms clock ticks (2 % of a 0.5 s interval: too coarse for a cost that small). A stream
        child is reaped only when it ends, so the ones still running are added from /proc
        (when a child is reaped its CPU moves from that sum into getrusage's: counted once).
        """
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = time.process_time() + children.ru_utime + children.ru_stime
        for group in self._groups or []:
            for state in group:
                if state.stream is not None:
                    cpu += state.stream.cpu_s()
        now = time.monotonic()
        previous, self._cpu_mark = self._cpu_mark, (cpu, now)
        if previous is None or now <= previous[1]:
            return None
        return max(0.0, 100.0 * (cpu - previous[0]) / (now - previous[1]))

    async def _poll_group(self, group: list[_ToolState]) -> _Poll:
        """Poll the group's current tool; while none has answered yet, fall through the group.

        A tool that never answered and refuses (or is missing, or is another vendor's tool)
        gives way to the next one of its group. The last one of a group is kept and its errors
        reported every poll, unless it is certainly unusable (``final``: not ours, no library).
        """
        notes: list[str] = []
        while group:
            state = group[0]
            res = await self._poll_tool(state)
            if res.ok:
                state.answered = True
            give_way = res.unusable and not state.answered and (len(group) > 1 or res.final)
            if not give_way:
                res.notes = notes + res.notes
                return res
            group.pop(0)
            if state.stream is not None:
                state.stream.stop()
            self.tools.pop(state.spec.tool, None)
            notes.extend(res.notes)
            if not group:
                res.notes = notes
                res.cards = []
                return res
            notes.append(f"{state.spec.tool} not used ({_why(res)}); trying {group[0].spec.tool}")
        return _Poll(notes=notes)

    async def _poll_tool(self, state: _ToolState) -> _Poll:
        spec = state.spec
        t_read = self.clock()
        res = _Poll()
        if state.skip_polls > 0 and state.hang_error is not None:
            # Backing off a tool that keeps hanging: its error and stale cards stand.
            state.skip_polls -= 1
            res.errors.append(state.hang_error)
            res.unusable = not state.answered
            res.cards = self._carry_stale(state)
            return res
        try:
            if state.reader is not None:
                reading = await self._run_reader(state)
            else:
                reading = await self._run_queries(state, res)
        except ToolMissing as exc:
            res.unusable = res.final = True
            res.errors.append(ToolError(tool=spec.tool, message=str(exc), kind="missing"))
            return res
        except _NotOurs as exc:
            res.unusable = res.final = True
            res.notes.append(str(exc))
            return res
        except (_Refused, _Failed) as exc:
            error = ToolError(tool=spec.tool, message=str(exc), kind=exc.kind)
            res.errors.append(error)
            if exc.kind == "timeout" and state.reader is None and state.stream is None:
                self._back_off(state, error, res)
            else:
                state.hangs = 0
            if isinstance(exc, _Refused) and exc.raw is not None:
                res.raw[spec.tool] = exc.raw[:RAW_KEEP_CHARS]
            # Never answered (refused, cannot start, hung): the group's next tool may do better.
            res.unusable = not state.answered
            res.cards = self._carry_stale(state)
            return res
        state.hangs = 0
        if reading.version:
            self.versions[spec.tool] = reading.version
        cards = [c if c.tool else c.model_copy(update={"tool": spec.tool}) for c in reading.cards]
        now_ids = {c.id for c in cards}
        for card_id, (old, _) in list(state.last_good.items()):
            if card_id not in now_ids:
                res.notes.append(f"card {old.id} no longer listed by {spec.tool}")
                del state.last_good[card_id]
        if state.stream_t_read is not None:
            t_read = state.stream_t_read  # when the record arrived, not when it was read
        for card in cards:
            state.last_good[card.id] = (card, t_read)
        res.cards = cards
        res.processes = resolve_process_cards(cards, reading.processes)
        res.notes.extend(n for n in reading.notes if n not in res.notes)
        if reading.raw:
            res.raw[spec.tool] = reading.raw[:RAW_KEEP_CHARS]
        res.ok = True
        return res

    def _back_off(self, state: _ToolState, error: ToolError, res: _Poll) -> None:
        """A tool that hangs again and again is asked less and less often (after 2, 4, 8, up to
        `MAX_SKIP_POLLS` polls): each call costs a process that may not even die (a wedged
        driver leaves it in D state), and a second call rarely answers when the first did not.
        The polls in between repeat its error and carry its cards, stale."""
        state.hangs += 1
        if state.hangs < 2:
            return  # once may be a slow poll: ask again next time
        skip = min(2 ** min(state.hangs - 1, 16), MAX_SKIP_POLLS)
        state.skip_polls = skip
        state.hang_error = error
        if skip < MAX_SKIP_POLLS or 2 ** (state.hangs - 2) < MAX_SKIP_POLLS:
            # Said while the wait grows; once it is at its longest, the error says enough.
            res.notes.append(
                f"{state.spec.tool} hung {state.hangs} times in a row: "
                f"asking it again after {skip} polls"
            )

    def _carry_stale(self, state: _ToolState) -> list[CardReading]:
        now = self.clock()
        return [
            card.model_copy(update={"stale_s": max(0.0, now - t_read)})
            for card, t_read in state.last_good.values()
        ]

    async def _run_reader(self, state: _ToolState) -> ToolReading:
        spec = state.spec
        assert state.reader is not None
        if state.busy_reader is not None and not state.busy_reader.done():
            raise _Failed(f"{spec.tool} is still busy with an earlier poll", "timeout")
        future = asyncio.ensure_future(asyncio.to_thread(state.reader))
        state.busy_reader = future
        try:
            # A thread cannot be killed: on timeout it is left to finish and not restarted
            # until it has (see busy_reader).
            reading = await asyncio.wait_for(asyncio.shield(future), self.timeout)
            rejected = [(c.id, c.rejected) for c in reading.cards if c.rejected]
            if vet_reading(reading, spec.tool, expect_cards=True, said=self._vetted):
                # No text to keep from a library: the refused values stand in for it.
                reading.raw = f"{spec.tool} (in-process) refused figures: {rejected!r}"
            return reading
        except TimeoutError:
            raise _Failed(
                f"{spec.tool} did not answer within {self.timeout:.1f} s", "timeout"
            ) from None
        except (ToolMissing, asyncio.CancelledError):
            raise
        except ParseError as exc:
            raise _Refused(f"{spec.tool}: {exc}", "parse") from None
        except Exception as exc:
            raise _Failed(f"{spec.tool} failed: {type(exc).__name__}: {exc}", "other") from None

    async def _call(self, state: _ToolState, query: Query, args: Sequence[str]) -> ToolReading:
        """Run one query and parse it. `_Failed`: no answer. `_Refused`: answer not understood."""
        tool = state.spec.tool
        try:
            result = await run_tool([state.exe, *args], self.timeout, MAX_OUTPUT_BYTES)
        except _Timeout:
            raise _Failed(
                f"{tool} did not answer within {self.timeout:.1f} s; killed", "timeout"
            ) from None
        except _TooMuch:
            raise _Failed(
                f"{tool} printed more than {_size(MAX_OUTPUT_BYTES)}; killed", "parse"
            ) from None
        except PermissionError as exc:
            raise _Failed(f"cannot run {state.exe}: {exc.strerror}", "denied") from None
        except OSError as exc:
            raise _Failed(f"cannot run {state.exe}: {exc.strerror or exc}", "missing") from None
        identify = state.spec.identify
        if identify is not None and not state.answered and not query.optional:
            # Before the exit status: Intel's xpu-smi may answer Kunlunxin's argv with its own
            # usage text and a non-zero status, and that must read as "not ours", not "broken".
            text = result.stdout if result.returncode == 0 else result.stdout + result.stderr
            if not identify(text):
                raise _NotOurs(self._not_ours_message(state, query, text))
        if result.returncode != 0:
            detail = _first_line(result.stderr) or _first_line(result.stdout)
            status = (
                f"was killed by signal {-result.returncode}"
                if result.returncode < 0
                else f"exited with status {result.returncode}"
            )
            message = f"{tool} {' '.join(args)} {status}".replace("  ", " ")
            raise _Refused(
                f"{message}: {detail}" if detail else message, "exit",
                raw=result.stdout + result.stderr,
            )
        try:
            reading = query.parse(result.stdout)
        except ParseError as exc:
            raise _Refused(f"{tool}: {exc}", "parse", raw=result.stdout) from None
        except Exception as exc:  # a parser bug must not take the poll down either
            raise _Refused(
                f"{tool}: parser failed ({type(exc).__name__}: {exc})", "parse",
                raw=result.stdout,
            ) from None
        # Impossible figures, a card listed twice, no card at all: noted, and the text kept.
        if vet_reading(reading, tool, expect_cards=not query.optional, said=self._vetted):
            reading.raw = result.stdout[:RAW_KEEP_CHARS]
        return reading

    def _not_ours_message(self, state: _ToolState, query: Query, text: str) -> str:
        spec = state.spec
        what = ""
        try:
            query.parse(text)
        except Exception as exc:  # the parser's words name what answered (e.g. Intel)
            what = str(exc)
        if not what:
            what = f"its output starts {_first_line(text, 80)!r}"
        return f"{state.exe} is not {spec.vendor}'s {spec.tool}: {what}; ignored"

    async def _run_required(self, state: _ToolState, index: int) -> ToolReading:
        query = state.required[index]
        try:
            return await self._call(state, query, query.args)
        except _Refused as refused:
            if query.fallback is None:
                raise
            # Down the fallback chain (nvidia-smi: csv with clock-event reasons, with the old
            # throttle-reason name, without either, the table): the first that answers
            # replaces the refused query for the whole session.
            fallback: Query | None = query.fallback
            said = refused.raw if refused.raw is not None else str(refused)
            while fallback is not None:
                if fallback.only_after is not None and fallback.only_after not in said:
                    fallback = fallback.fallback  # not what this link is for
                    continue
                try:
                    reading = await self._call(state, fallback, fallback.args)
                except _Failed:
                    raise refused from None
                except _Refused as again:
                    said = again.raw if again.raw is not None else str(again)
                    fallback = fallback.fallback
                    continue
                state.required[index] = fallback
                self._pending_notes.append(
                    f"{state.spec.tool} refused {query.name} ({refused}); using {fallback.name}"
                )
                return reading
            raise refused from None

    async def _run_queries(self, state: _ToolState, res: _Poll) -> ToolReading:
        plain_optional = [q for q in state.optional if not q.per_card]
        per_card = [q for q in state.optional if q.per_card]
        reused: list[ToolReading] = []
        if any(q.process_list for q in plain_optional):
            if state.process_wait > 0 and state.answered:
                # Throttled: the process lists read a few polls ago stand in.
                state.process_wait -= 1
                reused = [
                    state.process_last[q.name]
                    for q in plain_optional
                    if q.process_list and q.name in state.process_last
                ]
                plain_optional = [q for q in plain_optional if not q.process_list]
            else:
                state.process_wait = self.enrich_every - 1
        state.stream_t_read = None
        stream_reading: ToolReading | None = None
        if state.stream is not None:
            may_fall_back = bool(state.required) and not state.answered
            stream_reading = await state.stream.read(res.notes, may_fall_back)
            if stream_reading is not None:
                state.stream_t_read = self.clock() - state.stream.age
            else:  # the loop mode was refused: back to one call per poll, for the session
                state.stream = None
        required_calls = (
            [] if stream_reading is not None
            else [self._run_required(state, i) for i in range(len(state.required))]
        )
        if stream_reading is not None:
            # The record is read already: only the optional calls (if any) run, without a
            # task standing in for it (one task and loop turn less a poll).
            optional_out = await asyncio.gather(
                *(self._call(state, q, q.args) for q in plain_optional), return_exceptions=True
            )
            required_out: list[ToolReading | BaseException] = [stream_reading]
        elif state.spec.identify is not None and not state.answered:
            # Until the tool has shown it is ours, ask nothing else of it (a look-alike tool
            # of another vendor gets exactly one call).
            required_out = await asyncio.gather(*required_calls, return_exceptions=True)
            for out in required_out:
                if isinstance(out, BaseException):
                    raise out
            optional_out = await asyncio.gather(
                *(self._call(state, q, q.args) for q in plain_optional), return_exceptions=True
            )
        else:
            outcomes = await asyncio.gather(
                *required_calls,
                *(self._call(state, q, q.args) for q in plain_optional),
                return_exceptions=True,
            )
            required_out = outcomes[: len(required_calls)]
            optional_out = outcomes[len(required_calls):]
        for out in required_out:
            if isinstance(out, BaseException):
                raise out
        readings = [out for out in required_out if isinstance(out, ToolReading)]
        cards: list[CardReading] = []
        processes: list[CardProcess] = []
        version: str | None = None
        notes: list[str] = []
        raw: list[str] = []
        for reading in readings:
            cards = reading.cards if not cards else merge_cards(cards, reading.cards)
            processes.extend(reading.processes)
            notes.extend(reading.notes)
            version = version or reading.version
            raw.extend([reading.raw] if reading.raw else [])
        for query, out in zip(plain_optional, optional_out, strict=True):
            if isinstance(out, ToolReading):
                cards = merge_cards(cards, out.cards)
                processes.extend(out.processes)
                notes.extend(out.notes)
                version = version or out.version
                raw.extend([out.raw] if out.raw else [])
                if query.process_list:
                    state.process_last[query.name] = ToolReading(processes=list(out.processes))
            else:
                state.process_last.pop(query.name, None)
                self._optional_failed(state, query, out, res)
        for reading in reused:
            processes.extend(reading.processes)
        if per_card and cards and state.enrich_wait > 0:
            # Throttled: merge each query's last good per-card figures as they were.
            state.enrich_wait -= 1
            for query in per_card:
                carried = [c for (name, _), c in state.enriched.items() if name == query.name]
                if carried:
                    cards = merge_cards(cards, carried)
        elif per_card and cards:
            state.enrich_wait = self.enrich_every - 1
            state.enriched = {}
            jobs: list[tuple[Query, int, tuple[str, ...]]] = []
            for query in per_card:
                for card in cards:
                    try:
                        jobs.append((query, card.index, card_args(query.args, card)))
                    except (KeyError, IndexError, ValueError):
                        continue  # this card lacks what the query needs (no chip id, say)
            per_out = await asyncio.gather(
                *(self._call(state, q, args) for q, _, args in jobs),
                return_exceptions=True,
            )
            failed: set[str] = set()
            for (query, idx, _), out in zip(jobs, per_out, strict=True):
                if isinstance(out, ToolReading):
                    # The per-card text does not know its card: the index is the one we asked.
                    extra = [c.model_copy(update={"index": idx}) for c in out.cards[:1]]
                    cards = merge_cards(cards, extra)
                    if extra:
                        state.enriched[(query.name, idx)] = extra[0]
                    processes.extend(out.processes)
                    notes.extend(out.notes)
                    raw.extend([out.raw] if out.raw else [])
                elif query.name not in failed:
                    failed.add(query.name)
                    self._optional_failed(state, query, out, res)
        return ToolReading(cards=cards, processes=processes, version=version, notes=notes,
                           raw="\n".join(raw))

    def _optional_failed(
        self, state: _ToolState, query: Query, exc: BaseException, res: _Poll
    ) -> None:
        """A refused enrichment is dropped for the session (one note); a hang is an error."""
        if isinstance(exc, asyncio.CancelledError):
            raise exc
        tool = state.spec.tool
        if isinstance(exc, _Refused):
            if query in state.optional:
                state.optional.remove(query)
                res.notes.append(f"{tool} refused {query.name} ({exc}); not asked again")
        elif isinstance(exc, _Failed):
            res.errors.append(ToolError(tool=tool, message=str(exc), kind=exc.kind))
        else:
            raise exc


class SourceClosed(GpusatError):
    """`poll_once` after (or during) `aclose`."""


class _NotOurs(Exception):
    """The executable answered, but it is another vendor's tool of the same name."""


def _why(res: _Poll) -> str:
    if res.errors:
        return res.errors[0].message
    if res.notes:
        return res.notes[-1]
    return "no answer"
