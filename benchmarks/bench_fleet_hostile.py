#!/usr/bin/env python3
"""How long ``check --prometheus`` takes against a Prometheus that misbehaves at the HTTP level
(`tests.prom.hostile` on 127.0.0.1): trickling its answer (a byte every 0.5 s), hanging after
its headers, closing in the middle of the body, trickling its status line, sending without end.

Run by hand (``python benchmarks/bench_fleet_hostile.py [MODE...]``). Each server misbehaves for
``--run-s`` seconds per connection; ``check --duration 1 --interval 0.5`` should take one
request deadline (2 s) plus the interpreter's start, whatever the server does. Prints, per mode:
the wall time of the process, the ``duration_s`` the report gives, the errors it reports.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    from tests.prom.hostile import MODES, HostileServer

    parser = argparse.ArgumentParser()
    parser.add_argument("modes", nargs="*", default=list(MODES))
    parser.add_argument("--run-s", type=float, default=40.0)
    parser.add_argument("--gap-s", type=float, default=0.5)
    args = parser.parse_args()
    for mode in args.modes:
        with HostileServer(mode, gap_s=args.gap_s, run_s=args.run_s) as url:
            start = time.monotonic()
            result = subprocess.run(
                [sys.executable, "-m", "gpusat_tui", "check", "--prometheus", url,
                 "--duration", "1", "--interval", "0.5", "--json"],
                capture_output=True, text=True, cwd=REPO, timeout=args.run_s * 3 + 60,
            )
            wall = time.monotonic() - start
        try:
            report = json.loads(result.stdout)
            said = "; ".join(f"{e['kind']} x{e['count']}: {e['message']}"
                             for e in report["errors"])
            duration = f"{report['duration_s']:.1f} s"
        except (ValueError, KeyError):
            said, duration = result.stderr.strip()[-200:], "?"
        print(f"{mode:16s} exit {result.returncode}  wall {wall:5.1f} s  report {duration}  "
              f"({said})", flush=True)


if __name__ == "__main__":
    main()
