"""Live polling of every vendor tool: the schedule, and the `Frame` of each poll.

Collectors are declarative (`collectors.base.ToolSpec`): `sources.tool_discovery` finds their
executables (and groups the tools that see the same cards), `sources.tool_poll` polls one group
and decides what a failure means for its cards (the group's next tool, stale carry-over,
back-off of a tool that keeps hanging), `sources.tool_queries` asks one tool and reads its
answer, and `sources.procs` runs each child process (never a shell). This module polls all the
groups concurrently on a fixed schedule, adds the process monitor's and the probe files'
figures (and, for a trainer with no probe that looks stalled or pegged, a stack dump read from
outside: `sources.outside_stacks`), and turns each poll into a `Frame`. Nothing a tool does
can crash the monitor or leave a process behind:

* every call runs in its own session, and on a timeout, on close or on cancellation the
  *whole process group* is killed and reaped (`sources.procs.run_tool`);
* output is capped (`MAX_OUTPUT_BYTES`): a tool spewing garbage is killed, not buffered;
* a tool read as a stream (`collectors.base.Stream`: tegrastats, neuron-monitor, nvidia-smi's
  ``-lms``) keeps one child for the session (`sources.streams`), stopped when the source closes;
  each poll takes its newest record (`sources.stream_poll`) in place of the required calls.

Costs: one fork+exec per query per interval (a few ms of CPU for a C tool); the figures are
in ``Frame.monitor_cpu_pct`` so the monitor's own cost is always on screen. Per-card
enrichments and process lists run on one poll in `DEFAULT_ENRICH_EVERY` (``enrich_every``;
what that costs: `sources.tool_queries`).
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Protocol

from gpusat_tui.analysis.verdicts.probe_only import NO_TOOL_LINE
from gpusat_tui.collectors.base import ToolSpec
from gpusat_tui.errors import GpusatError, ToolMissing
from gpusat_tui.host.probes.probe_files import ProbePoller
from gpusat_tui.host.scheduler.jobs import add_probe_cards
from gpusat_tui.model import (
    CardProcess,
    CardReading,
    Frame,
    HostSample,
    JobContext,
    ProcessSample,
    ToolError,
)
from gpusat_tui.sources.options import DEFAULT_ENRICH_EVERY
from gpusat_tui.sources.polling.outside_stacks import OutsideStacks
from gpusat_tui.sources.polling.tool_discovery import find_tools, missing_tool_message
from gpusat_tui.sources.polling.tool_poll import ToolPoller
from gpusat_tui.sources.polling.tool_queries import PollResult, ToolQueries, ToolState

__all__ = [
    "LiveSource",
    "ProcessMonitorLike",
    "SourceClosed",
]


class ProcessReportLike(Protocol):
    processes: list[ProcessSample]
    host: HostSample
    notes: list[str]
    errors: list[ToolError]


class ProcessMonitorLike(Protocol):
    """What `host.monitor.processes.ProcessMonitor` offers; injected in tests. (It also has
    ``sample_if_cheap``, used where present: see `LiveSource._sample_processes`.)"""

    def sample(self, card_processes: Sequence[CardProcess] = ...) -> ProcessReportLike: ...


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
        self._groups: list[list[ToolState]] | None = None
        self._seq = 0
        self._lock = asyncio.Lock()
        self._closed = False
        self._cpu_mark: tuple[float, float] | None = None
        #: Notes for the next Frame (discovery, the process monitor, a query's fallback).
        self._pending_notes: list[str] = []
        #: Runs each tool's queries (`sources.tool_queries`); appends to ``_pending_notes``.
        self._queries = ToolQueries(self.timeout, self.enrich_every, clock, self._pending_notes)
        #: Polls each group (`sources.tool_poll`); updates ``versions`` in place.
        self._poller = ToolPoller(self._queries, clock, self.versions)
        self._inflight: asyncio.Future[list[PollResult]] | None = None
        self._probes = ProbePoller()
        #: Stack dumps of trainers with no probe (py-spy), when they look stalled or pegged.
        self._outside = OutsideStacks(clock, path)
        #: Set by `use_probes_only`: where the tools were looked for (the no-tool message).
        self.no_tool: str | None = None
        #: Set by `use_probes_only` when no trainer published yet (it waits for one).
        self.waiting = False

    # --- discovery ---------------------------------------------------------------------------

    def _all_specs(self) -> list[ToolSpec]:
        if self._specs is None:
            from gpusat_tui.collectors import all_specs

            self._specs = all_specs()
        return self._specs

    def discover(self) -> dict[str, str]:
        """Find every tool (tool -> executable, or "in-process" for NVML).

        Raises `ToolMissing` listing, per tool, what was searched when nothing at all is found.
        """
        found = find_tools(self._all_specs(), overrides=self.overrides, path=self.path,
                           enrich_every=self.enrich_every, streams=self.streams,
                           interval=self.interval, timeout=self.timeout)
        self.tools = found.tools
        self.searched = found.searched
        self.versions.update(found.versions)
        # An in-process reader's notes (no GPM counters here, say) go on the first Frame.
        self._pending_notes.extend(n for n in found.notes if n not in self._pending_notes)
        self._groups = found.groups
        if not self.tools:
            raise ToolMissing(self.missing_message())
        return dict(self.tools)

    def use_probes_only(self, wait: bool = False) -> bool:
        """After `discover` found no tool: poll the host's processes and the probe files alone,
        when a trainer publishes one now (or, ``wait``, whether one does yet or not: a monitor
        started before the job picks it up when it starts). False (nothing changed) when none
        does and ``wait`` is not set, so the caller keeps the no-tool message. Every Frame then
        has no card; the first says why. A trainer given with ``--pid`` counts as one, probe
        or not: its verdict stands on the host's figures and a stack dump read from outside
        (`analysis.unprobed_job`). One found only by its DataLoader workers does not: with no
        card to tie a process to, any job on the machine would be taken for this one."""
        samples, _ = self._probes.reader.sample()
        found = bool(samples) or self._census_finds_trainer()
        if not found and not wait:
            return False
        self._groups = []
        self.waiting = not found
        self.no_tool = self.missing_message()
        self._pending_notes.append(NO_TOOL_LINE)
        self._pending_notes.extend(self.no_tool.splitlines())
        return True

    def _census_finds_trainer(self) -> bool:
        """Whether a trainer given with ``--pid`` runs now (one process scan)."""
        monitor = self._get_monitor()
        if monitor is None or not self.pids:
            return False
        try:
            report = monitor.sample([])
        except Exception:  # no process figures: nothing found, as with no monitor
            return False
        return any(p.role == "trainer" and p.pid in self.pids for p in report.processes)

    def missing_message(self) -> str:
        """Plain words: no tool found, and where each one was looked for."""
        return missing_tool_message(self.searched)

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
                asyncio.gather(*(self._poller.poll_group(g, self.tools) for g in self._groups))
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
            # Drained in place: the list is shared with `_queries`.
            notes: list[str] = self._pending_notes.copy()
            self._pending_notes.clear()
            raw: dict[str, str] = {}
            for res in results:
                cards.extend(res.cards)
                processes.extend(res.processes)
                errors.extend(e for e in res.errors if e not in errors)
                notes.extend(n for n in res.notes if n not in notes)
                raw.update(res.raw)
            self._groups = [g for g in self._groups if g]
            samples: list[ProcessSample] = []
            jobs: list[JobContext] = []
            host: HostSample | None = None
            # Trainers that publish a probe file are found with no --pid.
            probes, probe_pids = self._probes.poll(cards, processes, notes)
            if self.no_tool is not None:
                # No card to tie them to: every probed trainer is followed all the same (an
                # empty card id), with its workers, even with num_workers=0.
                probe_pids += [CardProcess(pid=p.pid, card_id="") for p in probes
                               if p.card_id is None]
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
                    probed = {p.pid for p in probes}
                    samples = report.processes
                    if self.no_tool is not None and not self.pids:
                        samples = _probed_jobs_only(samples, probed)
                    samples = self._outside.attach(samples, probed, t)
                    jobs = add_probe_cards(list(getattr(report, "jobs", None) or []), probes)
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
                jobs=jobs,
            )
            self._seq += 1
            return frame

    async def frames(self) -> AsyncGenerator[Frame, None]:
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
            self._outside.cancel()

    async def aclose(self) -> None:
        """Stop polling; a poll in flight is cancelled, which kills and reaps its tools."""
        self._closed = True
        self._stop_streams()
        self._outside.cancel()
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
                from gpusat_tui.host.monitor.processes import ProcessMonitor

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
        report: ProcessReportLike | None = (
            cheap(card_processes) if cheap is not None else None
        )
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


def _probed_jobs_only(samples: Sequence[ProcessSample],
                      probed: set[int]) -> list[ProcessSample]:
    """With no tool and no ``--pid``: the processes less the trainers with no probe (found by
    their DataLoader workers: another user's job, perhaps) and their workers."""
    dropped = {s.pid for s in samples if s.role == "trainer" and s.pid not in probed}
    if not dropped:
        return list(samples)
    return [s for s in samples if s.pid not in dropped and s.trainer_pid not in dropped]


class SourceClosed(GpusatError):
    """`poll_once` after (or during) `aclose`."""
