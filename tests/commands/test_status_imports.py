"""``gpusat-tui status`` runs on every refresh of a status bar: its path must import only what it
uses. Checked on the real entry point, in a fresh interpreter, with a live monitor's file (the
common case: a few file reads and a line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpusat_tui.notify.status_file import JobStatus, StatusFileWriter
from tests.prom.hosts import REPO

#: Modules the status path must never load: each costs more than the whole command should.
HEAVY = ("pydantic", "gpusat_tui.model", "gpusat_tui.sources", "gpusat_tui.analysis",
         "textual", "rich", "psutil", "prometheus_client", "asyncio", "typing", "dataclasses",
         "urllib.request", "importlib.metadata")

PROGRAM = """
import json, sys
from gpusat_tui.cli import main
main(["status", *sys.argv[1:]])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {%s}
                        or m in {%s})))
"""


def loaded(*args: str) -> tuple[str, list[str]]:
    roots = ", ".join(repr(m) for m in HEAVY if "." not in m)
    dotted = ", ".join(repr(m) for m in HEAVY if "." in m)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TMUX", None)
    done = subprocess.run([sys.executable, "-c", PROGRAM % (roots, dotted), *args], env=env,
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    line, modules = done.stdout.splitlines()
    return line, json.loads(modules)


def test_the_status_path_imports_nothing_heavy(private_probe_dir: Path) -> None:
    writer = StatusFileWriter("dashboard", 1.0)
    writer.write(JobStatus("starving", "input-bound", util_pct=45.0, data_wait_pct=41.0,
                           t=__import__("time").time()))
    try:
        for fmt in ("tmux", "plain", "polybar", "waybar"):
            line, modules = loaded("--format", fmt)
            assert "STARVING" in line
            assert modules == [], f"the status path imported {modules}"
    finally:
        writer.close()
