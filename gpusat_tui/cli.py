"""Command line: the live dashboard (default), ``check`` (headless JSON) and ``report``.

The UI is imported lazily so that ``check`` and ``report`` never load Textual.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gpusat_tui import __version__
from gpusat_tui.model import VENDORS


def parse_tool_override(text: str) -> tuple[str, str]:
    """``--tool hygon=/opt/hyhal/bin/hy-smi`` -> ("hygon", path). Key: a vendor or a tool name."""
    key, sep, path = text.partition("=")
    if not sep or not key or not path:
        raise argparse.ArgumentTypeError(
            f"--tool expects VENDOR=PATH or TOOL=PATH (vendors: {', '.join(VENDORS)}), got {text!r}"
        )
    return key.strip(), path.strip()


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpusat-tui",
        description="Is my accelerator saturated, and if not, why?",
    )
    parser.add_argument("--version", action="version", version=f"gpusat-tui {__version__}")
    _add_polling_options(parser)
    parser.add_argument("--record", metavar="FILE.jsonl", help="record the session to a file")
    parser.add_argument("--replay", metavar="FILE.jsonl", help="replay a recorded session")
    parser.add_argument(
        "--speed", type=positive_float, default=1.0, help="replay speed factor (default 1)"
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
    sub = parser.add_subparsers(dest="command")

    check = sub.add_parser("check", help="poll headless and print verdicts (JSON with --json)")
    _add_polling_options(check, suppress=True)
    check.add_argument(
        "--duration", type=positive_float, default=10.0, metavar="SECONDS",
        help="how long to poll (default 10)",
    )
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.add_argument("--record", metavar="FILE.jsonl", help="also record the polls")
    check.add_argument("--prometheus", metavar="URL", default=argparse.SUPPRESS,
                       help="judge the fleet a Prometheus server holds instead of this machine")
    check.add_argument("--match", action="append", default=argparse.SUPPRESS,
                       metavar="LABEL=VALUE", help="with --prometheus: only these series")

    _add_export_parser(sub)

    report = sub.add_parser("report", help="summarise a recorded session")
    report.add_argument("file", metavar="FILE.jsonl")
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


def _add_export_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from gpusat_tui.export import DEFAULT_LISTEN, parse_listen

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Options given before the sub-command apply to it too.
    for name, default in (("interval", 1.0), ("tool", None), ("pid", None)):
        if not hasattr(args, name):
            setattr(args, name, default)
    args.tool = dict(args.tool or [])
    args.pid = list(args.pid or [])
    if args.command == "check":
        from gpusat_tui.check import run_check

        return run_check(args)
    if args.command == "run":
        from gpusat_tui.launch import run_command

        return run_command(args.cmd, verbose=args.verbose)
    if args.command == "export":
        from gpusat_tui.export import run_export

        return run_export(args)
    if args.command == "report":
        from gpusat_tui.report import run_report

        return run_report(args)
    from gpusat_tui.ui.app import run_app

    return run_app(args)


if __name__ == "__main__":
    sys.exit(main())
