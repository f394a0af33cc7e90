"""``gpusat-tui check``: poll headless for a while, then say what each card was doing.

Never imports Textual (a test enforces it): this runs on a bare training node, over ssh, in CI.
The JSON shape and `CheckBuilder`, which folds Frames into it, are in `check_report` (pure, and
shared with ``report``); this module polls, stops on signals and prints.

Exit status: 0 when it ran (even if a tool failed every poll: ``errors`` says so), 1 when no
accelerator tool was found and no probed trainer publishes (stderr says where it looked; with
``--json`` the object is printed all the same, an ``errors`` entry of kind ``no-tool`` and the
places in ``notes``). With no tool but a probed trainer, it runs on the probe files and the host
(``no_tool`` is true, the verdict is the job's), 2 on a usage error (argparse). On
Ctrl-C (SIGINT), SIGTERM or SIGHUP polling stops, the tool in flight is killed, the report of
what was gathered so far is printed as usual, and the exit status is 128 + the signal (130 for
SIGINT, 143 for SIGTERM, 129 for SIGHUP), the
shell convention, so a script can tell an interrupted run from a complete one. ``--record FILE``
also appends every Frame to FILE (see `sources.recorder`); a FILE that cannot be opened, or
that exists without ``--force``/``--append``, is a usage error (2). A write that fails later
(a full disk) stops only the recording: one line on stderr, a note in the report, and polling
and the report go on. A report that cannot be written to stdout is 74 (one line on stderr); a
reader that went away (``| head``) is 141, quietly (`gpusat_tui.output`). ``--prometheus URL``
judges the fleet a Prometheus server holds instead of this machine (`sources.fleet`,
`analysis.fleet`); a bad URL or ``--match`` is a usage error (2). ``--watch`` polls until
stopped and notifies when the job's verdict turns (`gpusat_tui.commands.watch`; exit 0 after a
stop signal); with no tool and no probed trainer yet it waits for one instead of exiting 1.

The human summary shows every name and message through `gpusat_tui.text.clean`: a tool's
stderr or a process name cannot move the cursor, retitle the terminal or split a row. The JSON
carries the exact strings (JSON escapes control characters itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import TYPE_CHECKING

from gpusat_tui.analysis.verdicts.probe_only import NO_TOOL_LINE
from gpusat_tui.analysis.verdicts.tracker import EVIDENCE_WINDOW_S, VerdictTracker
from gpusat_tui.commands.check_report import CheckBuilder
from gpusat_tui.commands.check_schema import CheckError, CheckReport, Stats
from gpusat_tui.commands.job_lines import energy_line, job_words
from gpusat_tui.commands.options import CheckOptions
from gpusat_tui.commands.probe_lines import probe_line, stack_lines
from gpusat_tui.commands.stopping import stopped_by_signals
from gpusat_tui.errors import GpusatError, ToolMissing
from gpusat_tui.output import emit, say
from gpusat_tui.sources import FrameSource
from gpusat_tui.text import clean, clean_block

if TYPE_CHECKING:
    from gpusat_tui.analysis.fleet import FleetTracker

__all__ = ["render_human", "run_check"]


# --- human summary ---------------------------------------------------------------------------


def _fmt(value: float | None, width: int = 5) -> str:
    return f"{value:{width}.0f}" if value is not None else f"{'–':>{width}}"


def _range(stats: Stats) -> str:
    """``mean [min–max]``, right-aligned in 15 columns."""
    if stats.mean is None or stats.min is None or stats.max is None:
        return f"{'–':>15}"
    return f"{stats.mean:.0f} [{stats.min:.0f}–{stats.max:.0f}]".rjust(15)


def render_human(report: CheckReport) -> str:
    """A short table per card (mean [min–max]), its verdict, why, and what to try.

    Every string that came from a tool, a process or a recording goes through `clean`.
    """
    lines = [
        f"gpusat-tui check: {report.samples} polls over {report.duration_s:.1f} s"
        f" — overall: {clean(report.verdict, 40)}",
        "",
    ]
    if report.cards:
        lines.append(
            f"{'CARD':<12} {'NAME':<22} {'UTIL %':>15} {'VRAM %':>15} {'POWER W':>15}"
            f" {'CAP W':>6} {'TEMP °C':>15}  VERDICT"
        )
        for card in report.cards:
            name = clean(card.name or "", 22)
            lines.append(
                f"{clean(card.id, 40):<12} {name:<22} {_range(card.util_pct)}"
                f" {_range(card.mem_pct)} {_range(card.power_w)} {_fmt(card.power_cap_w, 6)}"
                f" {_range(card.temp_c)}  {clean(card.verdict.kind, 40)}"
                + (f" ({clean(card.verdict.cause, 40)})" if card.verdict.cause else "")
            )
            lines.append(f"    energy: {energy_line(card.energy)}")
            for why in card.verdict.why:
                lines.append(f"    why: {clean(why, 500)}")
            for advice in card.verdict.advice:
                lines.append(f"    try: {clean(advice, 500)}")
        lines.append("    (figures: mean [min–max] over the polls that answered)")
    elif report.no_tool and report.job is not None:
        job = report.job
        lines.append(f"{NO_TOOL_LINE.capitalize()}.")
        lines.append(f"JOB  {clean(job.kind, 40)}"
                     + (f" ({clean(job.cause, 40)})" if job.cause else ""))
        for why in job.why:
            if why != NO_TOOL_LINE:
                lines.append(f"    why: {clean(why, 500)}")
        for advice in job.advice:
            lines.append(f"    try: {clean(advice, 500)}")
    else:
        lines.append("No card reported any figure.")
    if report.jobs:
        lines += ["", "Jobs:"]
        lines += [f"  {job_words(job)}" for job in report.jobs]
    if report.processes:
        lines += ["", "Processes (CPU % of one core, mean [min–max]):"]
        for proc in report.processes:
            lines.append(
                f"  {proc.pid:>7} {proc.role:<18} {clean(proc.name, 20):<20}"
                f" {_range(proc.cpu_pct)}  {clean(', '.join(proc.card_ids), 200)}"
            )
            if proc.probe is not None:
                lines.append(f"          measured in the trainer: {probe_line(proc.probe)}")
                lines += [f"          {line}" for line in stack_lines(proc.probe)]
    if report.errors:
        lines += ["", "Errors:"]
        for err in report.errors:
            times = "once" if err.count == 1 else f"{err.count} polls"
            lines.append(f"  [{clean(err.kind, 20)}] {clean(err.message, 500)} ({times})")
    notes = without_search_list(report.notes) if report.no_tool else report.notes
    if notes:
        lines += ["", "Notes:"]
        lines += [f"  {clean(note, 500)}" for note in notes]
    return clean_block("\n".join(lines))


def without_search_list(notes: list[str]) -> list[str]:
    """The notes less the list of places searched for a tool (one line says where it is), and
    less the no-tool line the summary starts with."""
    out: list[str] = []
    listing = False
    for note in notes:
        if note.startswith("No accelerator tool found"):
            listing = True
            out.append("No accelerator tool found (`gpusat-tui check --json` lists where it "
                       "looked).")
            continue
        if listing:
            listing = not note.startswith("Use --tool")
            continue
        if note != NO_TOOL_LINE:
            out.append(note)
    return out


def no_tool_report(message: str) -> CheckReport:
    """The report of a check that found no tool and no probed trainer: an ``errors`` entry of
    kind ``no-tool`` and the places searched in ``notes``."""
    lines = message.splitlines()
    return CheckReport(
        duration_s=0.0, samples=0, no_tool=True,
        errors=[CheckError(tool="gpusat-tui", message=lines[0] if lines else message, count=1,
                           kind="no-tool")],
        notes=[line.strip() for line in lines[1:] if line.strip()],
    )


# --- running ---------------------------------------------------------------------------------


def pid_exists(pid: int) -> bool:
    """Whether a process has this PID (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return pid > 0
    return pid > 0


async def _collect(
    source: FrameSource, builder: CheckBuilder, duration: float, interval_s: float,
    tracker: VerdictTracker | FleetTracker | None = None,
) -> tuple[float, int | None]:
    """Poll until ``duration`` is covered or a signal arrives. Returns (seconds, signal)."""
    tracker = tracker or VerdictTracker(window_s=EVIDENCE_WINDOW_S)
    start = time.monotonic()
    async with stopped_by_signals() as received:
        try:
            async with contextlib.aclosing(source.frames()) as frames:
                async for frame in frames:
                    assessment = tracker.push(frame)
                    builder.add(frame, assessment)
                    # Poll k starts at k * interval: stop when the next one would start at or
                    # past the end (or when overrunning polls already used the time up).
                    next_start = builder.samples * interval_s
                    if next_start >= duration - 1e-6 or time.monotonic() - start >= duration:
                        break
        finally:
            await source.aclose()
    return time.monotonic() - start, (received[0] if received else None)


def run_check(options: CheckOptions) -> int:
    """Entry point of ``gpusat-tui check`` (see the module docstring for exit statuses)."""
    from gpusat_tui.sources.build import build_source
    from gpusat_tui.sources.recording.recording_source import print_failure

    for pid in options.source.poll.pids:
        if not pid_exists(pid):
            say("gpusat-tui check", f"--pid {pid}: no such process (nothing of it will show)")
    try:
        # The fleet view's check judges live polls only (no start-up history): ``samples``
        # counts polls of the server. A watcher runs until stopped: with no tool it waits
        # for a probed job to start.
        built = build_source(options.source, fleet_history=False,
                             on_record_failure=print_failure, wait_for_job=options.watch)
    except ToolMissing as exc:
        say("gpusat-tui check", exc, lines=True)
        if options.json:  # a pipe into jq still gets its object, the error in it
            emit(no_tool_report(str(exc)).model_dump_json())
        return 1
    except GpusatError as exc:  # a bad URL or --match, a recording that cannot be written
        say("gpusat-tui check", exc)
        return 2
    if options.watch:
        import socket

        if built.waiting:
            say("gpusat-tui check", "no accelerator tool and no probed job yet: waiting for a "
                "job started as `gpusat-tui run -- python train.py`")

        from gpusat_tui.commands.watch import run_watch

        tracker = built.tracker or VerdictTracker(window_s=EVIDENCE_WINDOW_S)
        host = options.source.prometheus or socket.gethostname()
        return run_watch(options, built.source, tracker, host=host)
    builder = CheckBuilder()
    # The recording source closes (and fsyncs) its file in aclose(), even on a signal.
    elapsed, signum = asyncio.run(
        _collect(built.source, builder, options.duration_s, options.source.poll.interval_s,
                 built.tracker)
    )
    report = builder.report(elapsed)
    # OutputFailed (full or closed stdout, a reader gone) is turned into 74 / 141 by the CLI.
    emit(report.model_dump_json() if options.json else render_human(report))
    if signum is not None:
        return 128 + signum
    return 0
