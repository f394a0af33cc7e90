"""Running real torch jobs under ``gpusat-tui run`` for the probe tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
JOBS = REPO / "tests" / "probe_jobs"
TRAIN_JOB = JOBS / "train_job.py"

#: Publish four times a second in tests, so a few seconds of training give several figures.
PROBE_INTERVAL = "0.25"


def job_env(probe_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["GPUSAT_PROBE_DIR"] = str(probe_dir)
    env["GPUSAT_PROBE_INTERVAL"] = PROBE_INTERVAL
    env.pop("GPUSAT_PROBE", None)
    env.update(extra or {})
    return env


def run_argv(*cmd: str) -> list[str]:
    """``gpusat-tui run -- CMD...`` with this interpreter."""
    return [sys.executable, "-m", "gpusat_tui", "run", "--", *cmd]


def start_job(
    probe_dir: Path, *job_args: str, extra: Mapping[str, str] | None = None,
    argv: Sequence[str] | None = None,
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        list(argv) if argv is not None else run_argv(sys.executable, str(TRAIN_JOB), *job_args),
        env=job_env(probe_dir, extra), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=REPO,
    )


def wait_ready(proc: subprocess.Popen[str], timeout: float = 90.0) -> int:
    """The PID the job prints with READY (after its first batches)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"job ended before READY (rc {proc.wait()}): {err[-2000:]}")
        if line.startswith("READY "):
            return int(line.split()[1])
    raise AssertionError("job not ready in time")


def stop_job(proc: subprocess.Popen[str], timeout: float = 30.0) -> tuple[int, str, str]:
    out, err = proc.communicate(input="", timeout=timeout)
    return proc.returncode, out, err


def probe_docs(probe_dir: Path) -> dict[int, dict[str, Any]]:
    """Every probe file in the folder, by the PID in its name."""
    docs: dict[int, dict[str, Any]] = {}
    for path in probe_dir.glob("probe-*.json"):
        try:
            docs[int(path.name[6:-5])] = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
    return docs


def wait_for_doc(probe_dir: Path, pid: int, timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = probe_docs(probe_dir).get(pid)
        if doc is not None and doc["batches"] > 0:
            return doc
        time.sleep(0.05)
    raise AssertionError(f"no probe file of PID {pid} in {sorted(probe_dir.iterdir())}")
