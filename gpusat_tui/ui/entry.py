"""The command line's dashboard: which source and app the parsed arguments ask for, and running it.

Apart from `ui.app` so that the app stays what it shows and how it reacts, whatever feeds it:
live polling, a replay, the fleet view or the bundled demo are chosen here.
"""

from __future__ import annotations

from argparse import Namespace
from pathlib import Path
from typing import Any

from gpusat_tui.errors import GpusatError, ToolMissing
from gpusat_tui.ui.app import GpusatApp

#: The bundled demo session replayed by ``--fallback-demo`` (package data).
DEMO_SESSION = Path(__file__).resolve().parent.parent / "data" / "demo.jsonl"


def build_app(args: Namespace) -> GpusatApp:
    """The app for parsed CLI args: replay, live, demo fallback or the no-tool screen.

    Raises `GpusatError` for a recording that cannot be read (one clear message, no TUI).
    """
    record = getattr(args, "record", None)
    source: Any
    banner = None
    interval: float | None = None
    tracker = None
    if getattr(args, "prometheus", None):  # the fleet view (sources/fleet.py)
        from gpusat_tui.sources.fleet import build_fleet

        source, tracker = build_fleet(args.prometheus, args.match or (), args.interval)
        interval = args.interval
    elif getattr(args, "replay", None):
        from gpusat_tui.sources.replay import ReplaySource

        source = ReplaySource(
            args.replay, speed=args.speed, follow=getattr(args, "follow", False)
        )
    else:
        from gpusat_tui.sources.live import DEFAULT_ENRICH_EVERY, LiveSource

        live = LiveSource(
            interval=args.interval, overrides=args.tool, pids=args.pid,
            enrich_every=getattr(args, "enrich_every", None) or DEFAULT_ENRICH_EVERY,
        )
        try:
            live.discover()
            source = live
            interval = args.interval
        except ToolMissing as exc:
            if not getattr(args, "fallback_demo", False):
                return GpusatApp(None, no_tool=str(exc))
            from gpusat_tui.sources.replay import ReplaySource

            source = ReplaySource(DEMO_SESSION, speed=args.speed)
            banner = (
                "DEMO: no accelerator tool was found on this machine, so this is a replay of "
                "a recorded demo session, not your hardware. Run without --fallback-demo to "
                "see what was searched."
            )
            record = None  # recording a replayed demo would only copy the demo
    if record:
        from gpusat_tui.sources.recorder import RecordingSource, make_header, rotation_limits

        tools = dict(getattr(source, "versions", {}) or {})
        for tool in getattr(source, "tools", {}) or {}:
            tools.setdefault(tool, None)
        header = make_header(tools, args.interval)
        from gpusat_tui.cli import record_mode

        replayed = getattr(args, "replay", None) or []
        source = RecordingSource(
            source, record, header, mode=record_mode(args),  # type: ignore[arg-type]
            protect=list(replayed), **rotation_limits(args),
        )
    view = getattr(args, "view", "auto")
    app = GpusatApp(source, interval=interval, banner=banner, tracker=tracker,
                    view=None if view == "auto" else view, freeze_heap=True)
    if _is_live(args, banner):
        _watch_verdicts(app, args, interval)
    return app


def _is_live(args: Namespace, banner: str | None) -> bool:
    """Live polling of this machine: not a replay, the demo or the fleet view."""
    return not (getattr(args, "prometheus", None) or getattr(args, "replay", None) or banner)


def _watch_verdicts(app: GpusatApp, args: Namespace, interval: float | None) -> None:
    """The status file for ``gpusat-tui status`` and the notifications when the verdict turns
    (`gpusat_tui.notify`), fed by the app's verdicts; closed by `run_app`."""
    import socket

    from gpusat_tui.commands.status_file import StatusFileWriter
    from gpusat_tui.notify.notifier import notifier_from_args

    status_file = StatusFileWriter("dashboard", interval)
    notifier = notifier_from_args(args, host=socket.gethostname(), source="dashboard",
                                  prog="gpusat-tui", terminal=app.write_terminal)

    def on_verdict(frame: Any, assessment: Any) -> None:
        status = status_file.publish(frame, assessment)
        if notifier is not None:
            notifier.observe(frame.t, status)

    app.on_verdict = on_verdict
    app.closers = [status_file.close, *([notifier.close] if notifier is not None else [])]


def run_app(args: Namespace) -> int:
    """Entry point for ``gpusat-tui`` without a sub-command; returns the exit status."""
    try:
        app = build_app(args)
    except GpusatError as exc:
        from gpusat_tui.output import say

        say("gpusat-tui", exc)
        return 2
    try:
        result = app.run()
    finally:
        for close in app.closers:
            close()
    failure = getattr(app.source, "failure", None)
    if failure:  # the recording stopped (disk full...): said on the status line, and here
        from gpusat_tui.output import say

        say("gpusat-tui", failure)
    if app.no_tool is not None:
        return 2
    return int(app.return_code or result or 0)
