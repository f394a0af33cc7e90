"""Running real jobs under ``gpusat-tui run`` for the probe tests.

``probed_job`` is the sequence every real-job test repeats (start the job, wait for its READY
line and its probe file, stop it and hold it to a clean exit); ``check_beside`` runs ``check
--json`` beside a fake vendor tool; ``assert_note_never_a_number`` is what a job whose data wait
cannot be measured must show.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpusat_tui.collectors import all_specs
from gpusat_tui.host.monitor.processes import ProcessMonitor
from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin

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


def stop_job(proc: subprocess.Popen[str], timeout: float = 120.0) -> tuple[int, str, str]:
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


# --- check --json beside a fake vendor tool --------------------------------------------------

#: Busy utilisation and high power: "saturated" from outside, whatever the trainer waits on.
BUSY = FakeCard(index=0, name="Fake DCU", util_pct=95.0, mem_used_mib=50000.0,
                mem_total_mib=100000.0, power_w=250.0, power_cap_w=300.0, temp_c=60.0)


def check(fakes: FakeBin, probe_dir: Path, duration: float = 3.0) -> dict[str, Any]:
    """``check --json`` over ``duration`` seconds with the fake tools in ``fakes`` on PATH."""
    env = fakes.env({"GPUSAT_PROBE_DIR": str(probe_dir)})
    done = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", str(duration),
         "--interval", "0.5"], env=env, capture_output=True, text=True, timeout=90, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def check_beside(fake_bin: FakeBin, probe_dir: Path, card: FakeCard = BUSY) -> dict[str, Any]:
    """``check --json`` beside a fake ``hy-smi`` showing one ``card`` (Hygon: any vendor would
    do; the verdict's input is the card's figures and the probe's)."""
    spec = next(s for s in all_specs() if s.tool == "hy-smi")
    fake_bin.add_for_spec(spec, [[card]])
    return check(fake_bin, probe_dir)


# --- a real job, from READY to its exit ------------------------------------------------------

Doc = dict[str, Any]


def has_batches(doc: Doc) -> bool:
    """The probe has timed at least one batch."""
    return bool(doc["batches"] > 0)


def has_steps(doc: Doc) -> bool:
    """The probe has counted three steps and published a step time."""
    return bool(doc["steps"] >= 3 and doc["step_ms"] is not None)


def wait_for_published(
    probe_dir: Path, pid: int, ok: Callable[[Doc], bool], timeout: float = 120.0
) -> Doc:
    """The first probe file of ``pid`` that ``ok`` accepts."""
    deadline = time.monotonic() + timeout
    doc: Doc | None = None
    while time.monotonic() < deadline:
        doc = probe_docs(probe_dir).get(pid)
        if doc is not None and ok(doc):
            return doc
        time.sleep(0.05)
    raise AssertionError(f"PID {pid} never published what was awaited: {doc}")


@dataclass(frozen=True)
class ProbedJob:
    """A running job: the PID it printed with READY and its first awaited probe file."""

    proc: subprocess.Popen[str]
    probe_dir: Path
    pid: int
    first: Doc

    def latest(self) -> Doc:
        """Its probe file now."""
        return probe_docs(self.probe_dir)[self.pid]

    def trainer(self, report: dict[str, Any]) -> dict[str, Any]:
        """Its row in ``check --json``'s processes (exactly one)."""
        [row] = [p for p in report["processes"] if p["pid"] == self.pid]
        return row


@contextmanager
def probed_job(
    probe_dir: Path, *job: str, extra: Mapping[str, str] | None = None,
    until: Callable[[Doc], bool] = has_batches, ready_timeout: float = 240.0,
    doc_timeout: float = 120.0, stop_timeout: float = 120.0,
) -> Iterator[ProbedJob]:
    """``gpusat-tui run -- JOB...``, yielded once it printed READY and published a probe file
    ``until`` accepts; stopped on the way out, where it must exit 0.

    If the body fails, the job is still stopped (killed if it does not stop in
    ``stop_timeout``), and the body's failure is the one reported.
    """
    proc = start_job(probe_dir, argv=run_argv(*job), extra=extra)
    try:
        pid = wait_ready(proc, timeout=ready_timeout)
        first = wait_for_published(probe_dir, pid, until, timeout=doc_timeout)
        yield ProbedJob(proc, probe_dir, pid, first)
    except BaseException:
        with suppress(Exception):
            stop_or_kill(proc, stop_timeout)
        raise
    rc, _, err = stop_or_kill(proc, stop_timeout)
    assert rc == 0, f"the job exited {rc}: {err[-3000:]}"


def stop_or_kill(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str, str]:
    """``stop_job``; a job that does not stop in ``timeout`` is killed and fails the test."""
    try:
        return stop_job(proc, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"the job did not stop in {timeout} s: {err[-3000:]}") from None


def edge_pct(spans: Sequence[Sequence[float]], t0: float, t1: float) -> float:
    """How far two readings of one window's wait share may differ at its edges, in percent of
    the window [t0, t1]: the whole length of each wait ``spans`` has across t0 or t1. A probe
    counts a wait once it ends, so a publication during a wait leaves it out at one edge and
    in at the other; a loaded machine makes single waits long."""
    cut = sum(end - start for start, end in spans if start < t0 < end or start < t1 < end)
    return 100.0 * cut / (t1 - t0)


def roles_over(pid: int, seconds: float) -> dict[int, str]:
    """The role of each of the job's processes, by PID, from two samples ``seconds`` apart."""
    monitor = ProcessMonitor(pids=[pid], rescan_s=0.0)
    try:
        monitor.sample()
        time.sleep(seconds)
        return {p.pid: p.role for p in monitor.sample().processes}
    finally:
        monitor.close()


# --- a data wait that cannot be measured: a note, never a number ----------------------------

def assert_doc_says_not_measured(doc: Doc, note: str) -> None:
    """The probe file carries ``note`` and no data wait figure."""
    assert (doc["data_wait_note"], doc["data_wait_pct"]) == (note, None), doc


def assert_note_never_a_number(report: dict[str, Any], job: ProbedJob, note: str) -> None:
    """``check --json`` quotes ``note`` in the card's why, never a data wait figure, and the
    trainer's probe summary has the note and no figure (window or run)."""
    [card] = report["cards"]
    why = card["verdict"]["why"]
    assert any(line.startswith(note) for line in why), why
    assert not any(re.match(r"data wait \d", line) for line in why), why
    probe = job.trainer(report)["probe"]
    assert probe["data_wait_note"] == note, probe
    assert (probe["data_wait_pct"]["mean"], probe["data_wait_pct"]["max"]) == (None, None), probe
    assert probe["run"] is None or probe["run"]["data_wait_pct"] is None, probe
