"""``gpusat-tui export``: the dashboard's poller and verdicts, headless, as a Prometheus target.

The same `LiveSource` and `VerdictTracker` as the dashboard and ``check`` run in the main
thread's event loop; prometheus_client's WSGI app, on a threading HTTP server in a daemon
thread, serves ``/metrics`` through `export_metrics.ExportCollector`, which reads the snapshot
the last poll left. The server is ours only for its listen backlog (`LISTEN_BACKLOG`; the
library's ``start_http_server`` keeps Python's 5, and a burst of scrapers then waited a second
each past the fifth, on the kernel's SYN retry). A scrape
therefore never waits on a tool call, and a hung tool shows up as ageing figures
(``gpusat_card_figures_age_seconds``) and a counted error, not as a slow scrape.

Listening: the default is loopback (``127.0.0.1:9478``). The figures name the host, its cards,
its training processes and their command names, and the endpoint has no authentication, so
serving them to every network the node is on is a choice the user makes explicitly with
``--listen 0.0.0.0:PORT`` (or the address of the cluster network).

Never imports Textual (a test checks ``sys.modules``). Exit status: 0 after SIGINT, SIGTERM or
SIGHUP (a service that was asked to stop), 1 when no accelerator tool was found, 2 when the
address cannot be listened on or ``--record`` cannot be written.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
import threading
from typing import TYPE_CHECKING, Any

from gpusat_tui.commands.options import ExportOptions
from gpusat_tui.commands.stopping import stopped_by_signals
from gpusat_tui.errors import GpusatError, ToolMissing
from gpusat_tui.output import say

if TYPE_CHECKING:  # the CLI imports this module to parse --listen: keep that import light
    from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
    from gpusat_tui.commands.export_metrics import ExportState
    from gpusat_tui.notify.notifier import Notifier
    from gpusat_tui.notify.status_file import StatusFileWriter

__all__ = ["DEFAULT_LISTEN", "LISTEN_BACKLOG", "parse_listen", "run_export", "serve"]

DEFAULT_LISTEN = "127.0.0.1:9478"
#: Connections the kernel completes and queues before the server accepts them (Linux caps it at
#: ``net.core.somaxconn``, 4096 on current kernels). A fleet's Prometheus servers and their
#: replicas scraping at once stay well under it; a queued connection costs the kernel a few
#: hundred bytes.
LISTEN_BACKLOG = 1024


def parse_listen(text: str) -> tuple[str, int]:
    """``127.0.0.1:9478``, ``0.0.0.0:9478``, ``[::1]:9478`` -> (address, port).

    An address is required: ``:9478`` would mean every interface in most exporters, and that
    must be asked for by name (see the module docstring). Port 0 picks a free port (tests).
    """
    address, sep, port_text = text.strip().rpartition(":")
    address = address.strip()
    if address.startswith("[") and address.endswith("]"):
        address = address[1:-1]
    if not sep or not address:
        raise argparse.ArgumentTypeError(
            f"--listen expects ADDRESS:PORT, got {text!r}: 127.0.0.1:9478 for this machine "
            "only, 0.0.0.0:9478 for every interface"
        )
    try:
        port = int(port_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--listen: not a port number: {port_text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"--listen: port out of range: {port}")
    return address, port


def serve(state: ExportState, address: str, port: int) -> tuple[Any, str]:
    """Start the HTTP server thread; returns (server, the URL of its /metrics).

    Raises OSError when the address cannot be bound (in use, not ours, no permission).
    """
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from prometheus_client import CollectorRegistry, make_wsgi_app
    from prometheus_client.exposition import ThreadingWSGIServer
    from prometheus_client.process_collector import ProcessCollector

    from gpusat_tui.commands.export_metrics import ExportCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(ExportCollector(state))
    ProcessCollector(registry=registry)  # the library's standard process_* metrics
    # As start_http_server does (an IPv6 address needs an IPv6 socket), plus the backlog.
    family, _, _, _, sockaddr = socket.getaddrinfo(
        address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]

    class Server(ThreadingWSGIServer):
        address_family = family
        request_queue_size = LISTEN_BACKLOG

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """No line on stderr per scrape."""

    server = make_server(str(sockaddr[0]), port, make_wsgi_app(registry), Server,
                         handler_class=QuietHandler)
    threading.Thread(target=server.serve_forever, name="gpusat-export-http", daemon=True).start()
    bound = server.server_port
    shown = f"[{address}]" if ":" in address else address
    return server, f"http://{shown}:{bound}/metrics"


async def _poll_forever(
    source: Any, tracker: VerdictTracker, state: ExportState,
    status_file: StatusFileWriter | None = None, notifier: Notifier | None = None,
) -> int | None:
    """Poll and publish until a stop signal; returns the signal (None if the source ended).

    Each poll also leaves the job's status for ``gpusat-tui status`` and tells the notifier
    (whose webhooks post from their own thread: a poll never waits on one)."""
    from gpusat_tui.notify.notifier import publish_poll

    async with stopped_by_signals() as received:
        try:
            async with contextlib.aclosing(source.frames()) as frames:
                async for frame in frames:
                    # No focus: the exporter serves kinds and causes, which never depend on
                    # the evidence window's figures, so none are computed (a third of the cost).
                    assessment = tracker.push(frame, focus=())
                    state.update(frame, assessment)
                    if status_file is not None:
                        publish_poll(frame, assessment, status_file, notifier)
        finally:
            await source.aclose()
    return received[0] if received else None


def run_export(options: ExportOptions) -> int:
    """Entry point of ``gpusat-tui export`` (exit statuses in the module docstring)."""
    from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
    from gpusat_tui.commands.export_metrics import ExportState
    from gpusat_tui.notify.notifier import notifier_from_options
    from gpusat_tui.notify.status_file import StatusFileWriter
    from gpusat_tui.sources.build import build_source
    from gpusat_tui.sources.recording.recording_source import print_failure

    address, port = options.listen
    host = options.host_label or socket.gethostname()
    try:
        built = build_source(options.source, on_record_failure=print_failure)
    except ToolMissing as exc:
        say("gpusat-tui export", exc, lines=True)
        return 1
    except GpusatError as exc:  # a recording that cannot be written
        say("gpusat-tui export", exc)
        return 2
    interval_s = options.source.poll.interval_s
    # psutil: the process scan's errors (denied, process) are counted under that name.
    state = ExportState(host=host, interval_s=interval_s, tools=(*built.tools, "psutil"))
    try:
        server, url = serve(state, address, port)
    except OSError as exc:
        say("gpusat-tui export", f"cannot listen on {address}:{port}: {exc}")
        with contextlib.suppress(Exception):
            asyncio.run(built.source.aclose())
        return 2
    tools = ", ".join(built.tools) or "none (the probe files and the host only)"
    say("gpusat-tui export", f"serving {url} (host={host}; tools: {tools}; every {interval_s:g} s)")
    status_file = StatusFileWriter("export", interval_s)
    notifier = notifier_from_options(options.notify, host=host, source="export",
                                     prog="gpusat-tui export")
    try:
        asyncio.run(_poll_forever(built.source, VerdictTracker(window_s=30.0), state,
                                  status_file, notifier))
    finally:
        status_file.close()
        if notifier is not None:
            notifier.close()
        server.shutdown()
        server.server_close()
    return 0
