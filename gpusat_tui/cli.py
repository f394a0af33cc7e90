"""Command line: the live dashboard (default), ``check``, ``report``, ``export`` and ``run``.

The edge: `parse` turns the arguments into one command's typed options (`commands.options`),
and nothing below sees argparse. Commands are imported lazily, so that ``check`` and
``report`` never load Textual.

Exit statuses common to every front end (see `gpusat_tui.output` and the README's Reliability
section): 2 for a usage error (bad flag, unknown ``--tool`` key, a record target that exists or
is the replayed file), 130 for Ctrl-C anywhere (no traceback), 74 when the result could not be
written to stdout, 141 when the reader of stdout went away.
"""

from __future__ import annotations

import argparse
import os
import sys

from gpusat_tui.commands.option_values import (
    byte_size,
    duration,
    notify_duration,
    parse_tool_override,
    positive_float,
    positive_int,
    seconds_within,
    webhook_url,
)
from gpusat_tui.output import EXIT_INTERRUPTED, OutputFailed, guard_standard_fds, say

# ``gpusat-tui status`` runs on every refresh of a status bar: its path (`_run_status`) imports
# only argparse, the status command and the status file. Every other command's options
# (dataclasses, and `sources`, whose package loads the pydantic model) are imported where they
# are built.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from gpusat_tui.commands.options import CommandOptions
    from gpusat_tui.commands.status_options import StatusOptions
    from gpusat_tui.notify.options import NotifyOptions
    from gpusat_tui.sources.options import PollOptions, RecordMode, RecordOptions


def _add_rotation_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--record-max-size", type=byte_size, default=None, metavar="SIZE",
        help="start the next part of the recording (run.0001.jsonl.zst...) at this size",
    )
    parser.add_argument(
        "--record-max-age", type=duration, default=None, metavar="DURATION",
        help="start the next part of the recording after this long (e.g. 6h, 1d)",
    )


def _add_polling_options(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    default = argparse.SUPPRESS if suppress else None
    parser.add_argument(
        "--interval", type=positive_float, default=argparse.SUPPRESS if suppress else 1.0,
        metavar="SECONDS", help="seconds between polls (default 1)",
    )
    parser.add_argument(
        "--tool", type=parse_tool_override, action="append", default=default,
        metavar="VENDOR=PATH", help="use this executable for a vendor or tool (repeatable)",
    )
    parser.add_argument(
        "--pid", type=int, action="append", default=default, metavar="PID",
        help="training process to watch, with its DataLoader workers (repeatable)",
    )
    parser.add_argument(
        "--enrich-every", type=positive_int, default=default, metavar="N",
        help="ask for the slow-changing extras (process lists, per-card queries such as "
        "npu-smi -t usages) on one poll in N (default 5; 1: every poll)",
    )


def _add_record_mode(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """``--force`` / ``--append``: what ``--record`` may do to a file that already exists."""
    default = argparse.SUPPRESS if suppress else False
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--force", action="store_true", default=default,
        help="with --record: overwrite FILE if it exists (default: refuse)",
    )
    group.add_argument(
        "--append", action="store_true", default=default,
        help="with --record: add to the recording in FILE if it exists",
    )


def _record_mode(args: argparse.Namespace) -> RecordMode:
    """The `Recorder` mode the flags ask for."""
    if getattr(args, "force", False):
        return "overwrite"
    if getattr(args, "append", False):
        return "append"
    return "new"


def tool_keys() -> dict[str, list[str]]:
    """What ``--tool KEY=PATH`` accepts: vendors that have a collector, and tool names."""
    from gpusat_tui.collectors import all_specs
    from gpusat_tui.model import VENDORS

    specs = all_specs()
    vendors = sorted({s.vendor for s in specs}, key=lambda v: VENDORS.index(v))
    tools = sorted({name for s in specs for name in (s.tool, *s.names)})
    return {"vendors": list(vendors), "tools": tools}


def _check_tool_keys(parser: argparse.ArgumentParser, keys: list[str]) -> None:
    if not keys:
        return  # nothing to check: knowing the keys imports every collector (~50 ms)
    known = tool_keys()
    unknown = [k for k in keys if k not in known["vendors"] and k not in known["tools"]]
    if unknown:
        parser.error(
            f"--tool {unknown[0]!r} is neither a vendor nor a tool. Vendors: "
            f"{', '.join(known['vendors'])}. Tools: {', '.join(known['tools'])}."
        )


def _check_tool_paths(parser: argparse.ArgumentParser,
                      overrides: Sequence[tuple[str, str]]) -> None:
    """A ``--tool KEY=PATH`` that cannot be run is a usage error, said before any poll (it
    was a ``missing`` error on every poll of a run that exited 0)."""
    import shutil

    for key, path in overrides:
        if os.sep not in path:
            if shutil.which(path) is None:
                parser.error(f"--tool {key}={path}: no such command on PATH")
        elif not os.path.isfile(path):
            parser.error(f"--tool {key}={path}: no such file")
        elif not os.access(path, os.X_OK):
            parser.error(f"--tool {key}={path}: not executable")


def build_parser() -> argparse.ArgumentParser:
    from gpusat_tui import __version__

    parser = argparse.ArgumentParser(
        prog="gpusat-tui",
        description="Is my accelerator saturated, and if not, why?",
    )
    parser.add_argument("--version", action="version", version=f"gpusat-tui {__version__}")
    _add_polling_options(parser)
    parser.add_argument(
        "--record", metavar="FILE.jsonl",
        help="record the session to a file (.jsonl.zst: zstd, .jsonl.gz: gzip, else plain)",
    )
    _add_record_mode(parser)
    _add_rotation_options(parser)
    parser.add_argument(
        "--replay", metavar="FILE.jsonl", action="append",
        help="replay a recorded session (repeatable, globs allowed: the parts of one session)",
    )
    parser.add_argument(
        "--follow", action="store_true",
        help="with --replay: keep reading what a live recorder appends, across its rotations",
    )
    parser.add_argument(
        "--speed", type=positive_float, default=1.0, help="replay speed factor (default 1)"
    )
    parser.add_argument(
        "--view", choices=("auto", "overview", "card"), default="auto",
        help="start in every card's overview or in the card view (default auto: the overview "
        "where the pane fits it; o switches at any time)",
    )
    parser.add_argument(
        "--fallback-demo", action="store_true",
        help="when no accelerator tool is found, replay the bundled demo session (and say so)",
    )
    parser.add_argument(
        "--prometheus", metavar="URL",
        help="fleet view: read the gpusat metrics of every host from this Prometheus server",
    )
    parser.add_argument(
        "--match", action="append", default=None, metavar="LABEL=VALUE",
        help="fleet view: only series with this label (repeatable; LABEL=~REGEX too)",
    )
    _add_notify_options(parser, webhook=False, terminal=True)
    sub = parser.add_subparsers(dest="command")

    check = sub.add_parser("check", help="poll headless and print verdicts (JSON with --json)")
    _add_polling_options(check, suppress=True)
    check.add_argument(
        "--duration", type=positive_float, default=10.0, metavar="SECONDS",
        help="how long to poll (default 10)",
    )
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.add_argument(
        "--watch", action="store_true",
        help="poll until stopped and print (and --webhook) a notice each time the job's "
        "verdict turns and holds (JSON lines with --json)",
    )
    _add_notify_options(check, webhook=True, terminal=False)
    check.add_argument("--record", metavar="FILE.jsonl", help="also record the polls")
    _add_record_mode(check, suppress=True)
    _add_rotation_options(check)
    check.add_argument("--prometheus", metavar="URL", default=argparse.SUPPRESS,
                       help="judge the fleet a Prometheus server holds instead of this machine")
    check.add_argument("--match", action="append", default=argparse.SUPPRESS,
                       metavar="LABEL=VALUE", help="with --prometheus: only these series")

    _add_export_parser(sub)
    status = sub.add_parser(
        "status", help="one short line for a status bar (tmux: #(gpusat-tui status))",
    )
    add_status_options(status)

    report = sub.add_parser("report", help="summarise a recorded session")
    report.add_argument(
        "file", metavar="FILE.jsonl", nargs="+",
        help="a recording (plain, .gz or .zst), or the parts of one session (names or globs)",
    )
    report.add_argument("--json", action="store_true", help="print one JSON object")
    report.add_argument(
        "--width", type=int, default=None, help="chart width in columns (default: terminal)"
    )

    run = sub.add_parser(
        "run", help="exec a training command with the in-process probe on (data wait, steps)",
        usage="gpusat-tui run [--verbose] [--] CMD [ARGS...]",
    )
    run.add_argument("--verbose", action="store_true", help="say where the probe publishes")
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD", help="command to exec")
    return parser


def _add_notify_options(
    parser: argparse.ArgumentParser, *, webhook: bool, terminal: bool
) -> None:
    """When the job's verdict turns (starving, stalled, fragmenting, straggler) and holds."""
    parser.add_argument(
        "--notify-hold", type=notify_duration, default=60.0, metavar="DURATION",
        help="notify once a turn (or the recovery) has held this long (default 1m)",
    )
    parser.add_argument(
        "--notify-every", type=notify_duration, default=600.0, metavar="DURATION",
        help="at most one notification per this long (default 10m)",
    )
    if webhook:
        parser.add_argument(
            "--webhook", type=webhook_url, action="append", default=None, metavar="URL",
            help="POST a JSON notice to this URL when the verdict turns (repeatable)",
        )
        parser.add_argument(
            "--webhook-format", choices=("generic", "slack", "feishu", "dingtalk"),
            default="generic",
            help="body of the POST: generic JSON (default), or a Slack, Feishu/Lark or "
            "DingTalk incoming webhook's",
        )
    if terminal:
        parser.add_argument(
            "--terminal-notify", choices=("all", "bell", "off"), default="all",
            help="when the verdict turns: the bell and a desktop notification through the "
            "terminal (OSC 9 / OSC 777; all, the default), the bell only, or nothing",
        )


def add_status_options(parser: argparse.ArgumentParser) -> None:
    """``status``'s options (also parsed alone on its fast path, `_run_status`)."""
    parser.add_argument(
        "--format", choices=("tmux", "plain", "polybar", "waybar"), default="tmux",
        help="tmux: #[fg=...] colours (default); plain text; polybar: %%{F#...} colours; "
        "waybar: a JSON object (text, tooltip, class)",
    )
    parser.add_argument(
        "--max-age", type=seconds_within(0.1, 86400.0), default=None, metavar="SECONDS",
        help="use a running monitor's figures up to this old (default: 3 of its polls, 5 s "
        "at least)",
    )
    parser.add_argument(
        "--exporter", default="http://127.0.0.1:9478/metrics", metavar="URL",
        help="an exporter's /metrics to ask when no monitor of yours runs here (none: never)",
    )
    parser.add_argument(
        "--poll", type=seconds_within(0.0, 60.0), default=2.0, metavar="SECONDS",
        help="with no monitor nor exporter, poll the tools this long (default 2; 0: never)",
    )
    parser.add_argument(
        "--timeout", type=seconds_within(0.1, 300.0), default=5.0, metavar="SECONDS",
        help="hard limit on a poll of its own, discovery included (default 5)",
    )
    parser.add_argument(
        "--job", default=None, metavar="JOB",
        help="show this job only: its key (slurm:123, plain:4242), its name, or the PID of "
        "the monitor watching it (default: the job of your tmux session's monitor, else the "
        "one in the worst state, named when several are live)",
    )
    _add_polling_options(parser, suppress=True)


def _run_status(argv: list[str]) -> int:
    """``gpusat-tui status`` without building every sub-command's parser: a status bar runs it
    every few seconds, and each millisecond of start-up counts."""
    parser = argparse.ArgumentParser(
        prog="gpusat-tui status", description="One short line for a status bar.",
    )
    add_status_options(parser)
    args = parser.parse_args(argv)
    _check_tool_keys(parser, [key for key, _ in getattr(args, "tool", None) or []])
    from gpusat_tui.commands.status import run_status

    return run_status(_status_options(args))


def _status_options(args: argparse.Namespace) -> StatusOptions:
    from gpusat_tui.commands.status_options import StatusOptions

    return StatusOptions(
        format=args.format, max_age_s=args.max_age,
        exporter=None if args.exporter == "none" else args.exporter,
        poll_s=args.poll, timeout_s=args.timeout, tools=dict(getattr(args, "tool", None) or []),
        pids=tuple(getattr(args, "pid", None) or []), job=args.job,
    )


def _notify_options(args: argparse.Namespace) -> NotifyOptions:
    from gpusat_tui.notify.options import NotifyOptions

    return NotifyOptions(
        hold_s=getattr(args, "notify_hold", 60.0), every_s=getattr(args, "notify_every", 600.0),
        webhooks=tuple(getattr(args, "webhook", None) or ()),
        webhook_format=getattr(args, "webhook_format", "generic"),
        terminal=getattr(args, "terminal_notify", "off"),
    )


def _add_export_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from gpusat_tui.commands.export import DEFAULT_LISTEN, parse_listen

    export = sub.add_parser(
        "export", help="serve the figures and verdicts to Prometheus (/metrics), headless"
    )
    _add_polling_options(export, suppress=True)
    export.add_argument(
        "--listen", type=parse_listen, default=parse_listen(DEFAULT_LISTEN),
        metavar="ADDRESS:PORT",
        help=f"where to serve /metrics (default {DEFAULT_LISTEN}; every interface only with "
        "an explicit 0.0.0.0:PORT)",
    )
    export.add_argument("--record", metavar="FILE.jsonl", help="also record the polls")
    export.add_argument(
        "--host-label", metavar="NAME", default=None,
        help="value of the host label (default: this machine's host name)",
    )
    _add_notify_options(export, webhook=True, terminal=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status. Ctrl-C anywhere is 130, quietly."""
    guard_standard_fds()
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except OutputFailed as exc:
        if exc.message:
            say("gpusat-tui", exc.message)
        return exc.status


def _poll_options(args: argparse.Namespace) -> PollOptions:
    from gpusat_tui.sources.options import DEFAULT_ENRICH_EVERY, PollOptions

    return PollOptions(
        interval_s=getattr(args, "interval", None) or 1.0,
        tools=dict(getattr(args, "tool", None) or []),
        pids=tuple(getattr(args, "pid", None) or []),
        enrich_every=getattr(args, "enrich_every", None) or DEFAULT_ENRICH_EVERY,
    )


def _record_options(args: argparse.Namespace, *, rotation: bool = True,
                    protect: Sequence[str] = ()) -> RecordOptions | None:
    from gpusat_tui.sources.options import RecordOptions

    path = getattr(args, "record", None)
    if not path:
        return None
    return RecordOptions(
        path=path, mode=_record_mode(args),
        max_bytes=getattr(args, "record_max_size", None) if rotation else None,
        max_age_s=getattr(args, "record_max_age", None) if rotation else None,
        protect=tuple(protect),
    )


def parse(argv: Sequence[str] | None = None) -> CommandOptions:
    """The command line as one command's typed options (argparse exits 2 on a usage error).

    The only place that reads argparse's Namespace: options given before the sub-command apply
    to it too, and each command gets only the flags it honours."""
    from gpusat_tui.commands.options import (
        CheckOptions,
        DashboardOptions,
        ExportOptions,
        ReportOptions,
        RunOptions,
    )
    from gpusat_tui.sources.options import SourceOptions

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # said with the sub-command's usage, not the top level's
        command = getattr(args, "command", None)
        chosen = _subparsers(parser).get(command or "", parser)
        chosen.error(f"unrecognized arguments: {' '.join(extra)}")
    _check_tool_keys(parser, [key for key, _ in getattr(args, "tool", None) or []])
    _check_tool_paths(parser, getattr(args, "tool", None) or [])
    if _record_mode(args) != "new" and not getattr(args, "record", None):
        parser.error("--force and --append only apply with --record FILE")
    if getattr(args, "follow", False) and not getattr(args, "replay", None):
        parser.error("--follow needs --replay FILE")
    poll = _poll_options(args)
    match = tuple(getattr(args, "match", None) or ())
    if args.command == "check":
        return CheckOptions(
            source=SourceOptions(poll=poll, prometheus=getattr(args, "prometheus", None),
                                 match=match, record=_record_options(args)),
            duration_s=args.duration, json=args.json, watch=args.watch,
            notify=_notify_options(args),
        )
    if args.command == "run":
        return RunOptions(cmd=tuple(args.cmd), verbose=args.verbose)
    if args.command == "export":
        return ExportOptions(
            listen=args.listen, host_label=args.host_label, notify=_notify_options(args),
            source=SourceOptions(poll=poll, record=_record_options(args, rotation=False)),
        )
    if args.command == "status":
        return _status_options(args)
    if args.command == "report":
        return ReportOptions(files=tuple(args.file), json=args.json, width=args.width)
    replay = tuple(args.replay or ())
    return DashboardOptions(
        source=SourceOptions(
            poll=poll, replay=replay, follow=args.follow, speed=args.speed,
            prometheus=args.prometheus, match=match, fallback_demo=args.fallback_demo,
            record=_record_options(args, protect=replay),
        ),
        view=args.view, notify=_notify_options(args),
    )


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-commands' parsers, by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["status"]:
        return _run_status(words[1:])
    from gpusat_tui.commands.options import (
        CheckOptions,
        ExportOptions,
        ReportOptions,
        RunOptions,
    )
    from gpusat_tui.commands.status_options import StatusOptions

    options = parse(argv)
    if isinstance(options, CheckOptions):
        from gpusat_tui.commands.check import run_check

        return run_check(options)
    if isinstance(options, RunOptions):
        from gpusat_tui.commands.run import run_command

        return run_command(list(options.cmd), verbose=options.verbose)
    if isinstance(options, ExportOptions):
        from gpusat_tui.commands.export import run_export

        return run_export(options)
    if isinstance(options, StatusOptions):
        from gpusat_tui.commands.status import run_status

        return run_status(options)
    if isinstance(options, ReportOptions):
        from gpusat_tui.commands.report import run_report

        return run_report(options)
    from gpusat_tui.commands.dashboard import run_app

    return run_app(options)


if __name__ == "__main__":
    sys.exit(main())
