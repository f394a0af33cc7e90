"""``gpusat-tui`` with no sub-command: build the source the options ask for (`sources.build`)
and run the Textual app on it.

Apart from `ui.app` so that the app stays what it shows and how it reacts, whatever feeds it:
live polling, a replay, the fleet view or the bundled demo are chosen by the builder.
"""

from __future__ import annotations

from gpusat_tui.commands.options import DashboardOptions
from gpusat_tui.errors import GpusatError, ToolMissing
from gpusat_tui.model import Assessment, Frame
from gpusat_tui.output import say
from gpusat_tui.sources.build import BuiltSource, build_source
from gpusat_tui.ui.app import GpusatApp


def build_app(options: DashboardOptions) -> GpusatApp:
    """The app for these options: replay, live, fleet, demo fallback or the no-tool screen.

    Raises `GpusatError` for a recording that cannot be read (one clear message, no TUI).
    With no tool and no probed trainer yet, the no-tool screen is shown over a source that
    keeps reading the probe files: a job started after the dashboard replaces it.
    """
    try:
        built = build_source(options.source, wait_for_job=True, fleet_view=True)
    except ToolMissing as exc:
        return GpusatApp(None, no_tool=str(exc))
    banner = built.banner
    if built.record_dropped and banner:
        banner = f"{banner} {built.record_dropped}."
    app = GpusatApp(built.source, interval=built.interval_s, banner=banner,
                    tracker=built.tracker, no_tool=built.waiting,
                    view=None if options.view == "auto" else options.view, freeze_heap=True,
                    pids=options.source.poll.pids)
    if is_live(built):
        watch_verdicts(app, options, built.interval_s)
    return app


def is_live(built: BuiltSource) -> bool:
    """Live polling of this machine (with a vendor tool or on the probe files alone): not a
    replay, the demo or the fleet view, whose verdicts are not this host's job's."""
    return built.live


def watch_verdicts(app: GpusatApp, options: DashboardOptions, interval: float | None) -> None:
    """The status file for ``gpusat-tui status`` and the notifications when the verdict turns
    (`gpusat_tui.notify`), fed by the app's verdicts; closed by `run_app`."""
    import socket

    from gpusat_tui.notify.notifier import notifier_from_options, publish_poll
    from gpusat_tui.notify.status_file import StatusFileWriter

    status_file = StatusFileWriter("dashboard", interval)
    notifier = notifier_from_options(options.notify, host=socket.gethostname(),
                                     source="dashboard", prog="gpusat-tui",
                                     terminal=app.write_terminal)

    def on_verdict(frame: Frame, assessment: Assessment) -> None:
        publish_poll(frame, assessment, status_file, notifier)

    app.on_verdict = on_verdict
    app.closers = [status_file.close, *([notifier.close] if notifier is not None else [])]


def run_app(options: DashboardOptions) -> int:
    """Entry point for ``gpusat-tui`` without a sub-command; returns the exit status."""
    try:
        app = build_app(options)
    except GpusatError as exc:
        say("gpusat-tui", exc)
        return 2
    try:
        result = app.run()
    finally:
        for close in app.closers:
            close()
    failure = getattr(app.source, "failure", None)
    if failure:  # the recording stopped (disk full...): said on the status line, and here
        say("gpusat-tui", failure)
    if app.no_tool is not None:  # like `check`: 1 when no accelerator tool was found
        return 1
    return int(app.return_code or result or 0)
