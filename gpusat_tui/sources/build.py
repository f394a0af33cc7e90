"""The one place that turns `SourceOptions` into a source: live, replay (followed or not), the
fleet view or the bundled demo, wrapped in a recording when asked. The dashboard, ``check`` and
``export`` all build theirs here, so a flag means the same in each."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpusat_tui.analysis.verdicts.probe_only import NO_TOOL_LINE
from gpusat_tui.errors import ToolMissing
from gpusat_tui.sources import FrameSource
from gpusat_tui.sources.options import RecordOptions, SourceOptions

if TYPE_CHECKING:
    from gpusat_tui.analysis.fleet import FleetTracker
    from gpusat_tui.sources.polling.live import LiveSource

#: The bundled demo session replayed by ``--fallback-demo`` (package data).
DEMO_SESSION = Path(__file__).resolve().parent.parent / "data" / "demo.jsonl"

#: The demo is built (tools/make_demo.py), not observed: no machine at hand fits its story, and
#: the banner says so rather than pass it off as a recording of real hardware.
DEMO_BANNER = (
    "DEMO: no accelerator tool was found on this machine, so this replays a constructed session "
    "(two H100s, one DDP job), not your hardware. Run without --fallback-demo to see what was "
    "searched."
)

#: The banner of a live source with no accelerator tool, polling the host and probe files.
NO_TOOL_BANNER = (
    f"{NO_TOOL_LINE.capitalize()} (no vendor tool found; `gpusat-tui check` lists where it "
    "looked). The verdict stands on each probed trainer's measured data wait."
)


@dataclass
class BuiltSource:
    """A source and what its consumer must know of it."""

    source: FrameSource
    #: The fleet view's tracker (verdicts come from the exporters); None: judge locally.
    tracker: FleetTracker | None = None
    #: Seconds between polls of a live or fleet source; None for a replay (its own pace).
    interval_s: float | None = None
    #: A line to show above everything (the demo says it is one).
    banner: str | None = None
    #: Set when ``--record`` was dropped, and why (a replayed demo is not recorded).
    record_dropped: str | None = None
    #: The tools a live source found, in order (for a start-up line).
    tools: tuple[str, ...] = ()
    #: Live polling of this machine (not a replay, the demo or the fleet view): its verdicts
    #: are this host's job's, for the status file and the notifications.
    live: bool = False
    #: With no tool and no probed trainer yet (``wait_for_job``): the no-tool message, shown
    #: until a trainer publishes.
    waiting: str | None = None


def live_source(options: SourceOptions, wait_for_job: bool = False) -> LiveSource:
    """A live source over the tools found. With none but a probed trainer publishing, a source
    of the host and the probe files alone (`LiveSource.use_probes_only`); with ``wait_for_job``
    that source is built even before a trainer publishes (a monitor that runs until stopped).
    Raises `ToolMissing` (it says where it looked) when there is neither."""
    from gpusat_tui.sources.polling.live import LiveSource

    poll = options.poll
    source = LiveSource(
        interval=poll.interval_s, overrides=dict(poll.tools), pids=list(poll.pids),
        enrich_every=poll.enrich_every,
    )
    try:
        source.discover()
    except ToolMissing:
        if not source.use_probes_only(wait=wait_for_job):
            raise
    return source


def build_source(
    options: SourceOptions, *, fleet_history: bool = True, fleet_view: bool = False,
    on_record_failure: Callable[[str], None] | None = None, wait_for_job: bool = False,
) -> BuiltSource:
    """Build the source ``options`` ask for.

    Raises `ToolMissing` when live polling finds no tool (unless the demo stands in), and
    `GpusatError` for a recording that cannot be read or written, a bad URL or ``--match``.
    ``fleet_history``: fill the fleet view's charts from a start-up range query;
    ``fleet_view``: ask Prometheus only for what the dashboard shows (its summary and rows),
    not for every card (``check`` and a recording want every card);
    ``on_record_failure``: told once when a write fails later (headless: a line on stderr);
    ``wait_for_job``: with no tool, poll the probe files even before a trainer publishes one
    (the dashboard and ``check --watch``; not with ``--fallback-demo``, whose demo stands in).
    """
    built: BuiltSource
    if options.prometheus:
        from gpusat_tui.sources.fleet_view.fleet import build_fleet

        source, tracker = build_fleet(options.prometheus, options.match,
                                      options.poll.interval_s, view=fleet_view)
        source.history = fleet_history
        built = BuiltSource(source, tracker=tracker, interval_s=options.poll.interval_s)
    elif options.replay:
        from gpusat_tui.sources.recording.replay import ReplaySource

        built = BuiltSource(ReplaySource(list(options.replay), speed=options.speed,
                                         follow=options.follow))
    else:
        try:
            live = live_source(options, wait_for_job and not options.fallback_demo)
            built = BuiltSource(live, interval_s=options.poll.interval_s,
                                tools=tuple(sorted(live.tools)),
                                banner=NO_TOOL_BANNER if live.no_tool else None, live=True,
                                waiting=live.no_tool if live.waiting else None)
        except ToolMissing:
            if not options.fallback_demo:
                raise
            from gpusat_tui.sources.recording.replay import ReplaySource

            built = BuiltSource(ReplaySource(DEMO_SESSION, speed=options.speed),
                                banner=DEMO_BANNER)
            if options.record is not None:
                built.record_dropped = (
                    f"--record {options.record.path} ignored: the demo is a replay of a "
                    "bundled recording, not this machine"
                )
                return built
    if options.record is not None:
        built.source = recording_source(built.source, options.record, options.poll.interval_s,
                                        on_failure=on_record_failure)
    return built


def recording_source(
    source: FrameSource, record: RecordOptions, interval_s: float,
    on_failure: Callable[[str], None] | None = None,
) -> FrameSource:
    """Wrap ``source`` so that every Frame is also appended to the recording.

    Raises `RecordingError` when the file cannot be opened or exists without ``--force`` /
    ``--append``. A write that fails later stops the recording only (``failure``)."""
    from gpusat_tui.sources.recording.recorder import make_header
    from gpusat_tui.sources.recording.recording_source import RecordingSource

    tools: dict[str, str | None] = dict(getattr(source, "versions", None) or {})
    for tool in getattr(source, "tools", None) or {}:
        tools.setdefault(tool, None)
    return RecordingSource(
        source, record.path, make_header(tools, interval_s), mode=record.mode,
        protect=list(record.protect), max_bytes=record.max_bytes, max_age_s=record.max_age_s,
        on_failure=on_failure,
    )
