"""End to end, with real processes: the phases a verdict must not confuse.

``gpusat-tui check --json`` polls a fake vendor tool (the card figures of a labelled scenario,
`tests.scenarios`) beside a real job that the tool lists on the card, so the host side (CPU,
states, progress counters, the launcher's variables) is read from real processes:

* an evaluation loop (real torch DataLoader workers) sleeping on a slow local server
  (127.0.0.1): not stalled, not paused; the workers' counters move (``rchar`` with ``read(2)``,
  only wake-ups with ``recv(2)``), so it is starving on the fetch (io-bound);
* a checkpoint written with ``O_DIRECT`` through a throttled loop device (cgroup v2 ``io.max``
  where the io controller is there, else cgroup v1 ``blkio.throttle``; root only, else
  skipped saying why): starving (checkpoint), never the dataset advice;
* a trainer spinning at 100 % CPU beside a busy card with ``WORLD_SIZE=2`` and no peer card:
  collective-wait, never host-bound (and light-kernels without the variable);
* a hang (everything blocked): unknown (paused) until 20 s, stalled from then, never before
  and never starving, judged poll by poll from the run's recording.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.sources.recording.replay import read_recording
from tests.commands.test_check_verdicts import (
    REPO,
    processes_of,
    run_check,
    scenario_steps,
    spec_named,
)
from tests.fakes.tool import FakeBin
from tests.proctree import kill_group, subreaper
from tests.scenarios import SCENARIOS, TRAINER_PID

#: A sample's answer takes this long: the workers sleep on it most of the time.
ANSWER_DELAY_S = 0.02


@dataclass
class Job:
    trainer: int
    workers: list[int]


@contextlib.contextmanager
def job(argv: list[str], env: Mapping[str, str] | None = None, ready: str | None = None,
        start_s: float = 180.0) -> Iterator[Job]:
    """Run ``python -m <argv>`` in its own session; yield once it printed its worker PIDs
    (or ``ready``); kill the whole group (and reap it) after."""
    with subreaper():
        proc = subprocess.Popen(
            [sys.executable, "-m", *argv], cwd=REPO, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, start_new_session=True,
        )
        try:
            assert proc.stdout is not None
            deadline = time.monotonic() + start_s
            line = proc.stdout.readline()
            while ready is not None and line.strip() != ready:
                assert line and time.monotonic() < deadline, f"{argv} did not start"
                line = proc.stdout.readline()
            assert line, f"{argv} did not start"
            workers = [] if ready is not None else [int(p) for p in line.split()]
            yield Job(proc.pid, workers)
        finally:
            kill_group(proc.pid)
            proc.wait(timeout=10)
            if proc.stdout is not None:
                proc.stdout.close()


def tool_for(fake_bin: FakeBin, name: str, trainer: int, polls: int) -> None:
    """The fake nvidia-smi shows ``name``'s cards and lists ``trainer`` on them."""
    scenario = SCENARIOS[name]
    steps = scenario_steps(scenario, range(polls), {TRAINER_PID: trainer})
    fake_bin.add_for_spec(spec_named("nvidia-smi"), steps)


def card_verdict(report: dict[str, Any]) -> tuple[str, str | None, list[str], list[str]]:
    v = report["cards"][0]["verdict"]
    return v["kind"], v["cause"], v["why"], v["advice"]


def proc_of(report: dict[str, Any], pid: int) -> dict[str, Any]:
    return next(p for p in report["processes"] if p["pid"] == pid)


# --- an evaluation on a slow fetch ---------------------------------------------------------------


class _SlowAnswers(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        with contextlib.suppress(OSError):
            while sock.recv(64):
                time.sleep(ANSWER_DELAY_S)
                sock.sendall(b"x" * 4096)


@contextlib.contextmanager
def slow_server() -> Iterator[int]:
    """A local server (127.0.0.1) answering each request after `ANSWER_DELAY_S`."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _SlowAnswers)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("how", ["read", "recv"])
def test_an_evaluation_on_a_slow_fetch_is_starving_on_io_not_stalled(
    fake_bin: FakeBin, how: str,
) -> None:
    with slow_server() as port, job(
        ["tests.jobs.eval_fetch_job", "--port", str(port), "--how", how, "--workers", "2"],
        ready="ready",
    ) as ev:
        tool_for(fake_bin, "eval_slow_fetch", ev.trainer, 40)
        report = run_check(fake_bin, "--duration", "3", timeout=120)
    roles = processes_of(report)
    workers = [pid for pid, role in roles.items() if role == "dataloader_worker"]
    assert roles.get(ev.trainer) == "trainer" and len(workers) == 2, roles
    kind, cause, why, _ = card_verdict(report)
    figures = {pid: {k: proc_of(report, pid)[k]["mean"] for k in
                     ("cpu_pct", "rchar_per_s", "ctx_switches_per_s")} for pid in workers}
    assert (kind, cause) == ("starving", "io-bound"), (why, figures)
    assert any("sleep on reads" in w for w in why), why
    if how == "read":  # read(2) on the socket: the bytes count
        assert all(f["rchar_per_s"] >= 4096 for f in figures.values()), figures
    else:  # recv(2) counts no bytes: the wake-ups show it
        assert all(f["ctx_switches_per_s"] >= 10 for f in figures.values()), figures


# --- a checkpoint through a throttled block device -----------------------------------------------


THROTTLE_BPS = 8 * 2**20


def _device_numbers(path: str) -> str:
    st = os.stat(path)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def _v2_io_cgroup(device: str, name: str) -> Path | None:
    """A cgroup v2 child with ``io.max`` set, where a cgroup2 mount has the io controller."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[2] != "cgroup2":
            continue
        root = Path(parts[1])
        try:
            if "io" not in (root / "cgroup.controllers").read_text().split():
                continue
            with contextlib.suppress(OSError):
                (root / "cgroup.subtree_control").write_text("+io")
            group = root / name
            group.mkdir(exist_ok=True)
            (group / "io.max").write_text(f"{_device_numbers(device)} wbps={THROTTLE_BPS}")
            return group
        except OSError:
            continue
    return None


def _v1_blkio_cgroup(device: str, name: str) -> Path | None:
    root = Path("/sys/fs/cgroup/blkio")
    if not (root / "blkio.throttle.write_bps_device").exists():
        return None
    group = root / name
    try:
        group.mkdir(exist_ok=True)
        (group / "blkio.throttle.write_bps_device").write_text(
            f"{_device_numbers(device)} {THROTTLE_BPS}")
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        return None
    return group


@contextlib.contextmanager
def throttled_device() -> Iterator[tuple[str, Path, str]]:
    """A loop device over a sparse file, writes throttled to 8 MiB/s for the processes of a
    fresh cgroup: (device, cgroup, "v2"/"v1"). Skips where the machine does not allow it."""
    if os.geteuid() != 0:
        pytest.skip("needs root: attaching a loop device and throttling it in a cgroup")
    # The fake_bin fixture narrows PATH to its fakes and /bin: look where losetup lives.
    losetup = shutil.which("losetup", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if losetup is None:
        pytest.skip("no losetup: cannot make a block device to throttle")
    with tempfile.TemporaryDirectory(prefix="gpusat-ckpt-") as tmp:
        backing = Path(tmp) / "disk.img"
        with open(backing, "wb") as f:
            f.truncate(256 * 2**20)
        made = subprocess.run([losetup, "--find", "--show", str(backing)],
                              capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"cannot attach a loop device: {made.stderr.strip()}")
        device = made.stdout.strip()
        name = f"gpusat-test-{os.getpid()}"
        group, version = _v2_io_cgroup(device, name), "v2"
        if group is None:
            group, version = _v1_blkio_cgroup(device, name), "v1"
        try:
            if group is None:
                pytest.skip("no cgroup io controller here (v2 io.max) nor v1 blkio throttle")
            yield device, group, version
        finally:
            if group is not None:
                deadline = time.monotonic() + 10
                while True:  # a cgroup goes once its last process has been reaped
                    try:
                        group.rmdir()
                        break
                    except OSError:
                        if time.monotonic() > deadline:
                            break
                        time.sleep(0.05)
            subprocess.run([losetup, "-d", device], capture_output=True)


def test_a_checkpoint_through_throttled_storage_is_a_checkpoint_not_io_bound(
    fake_bin: FakeBin,
) -> None:
    with throttled_device() as (device, group, version), job(
        ["tests.jobs.phase_job", "--mode", "checkpoint", "--device", device,
         "--cgroup-procs", str(group / "cgroup.procs"), "--max-s", "60"],
    ) as ckpt:
        tool_for(fake_bin, "checkpoint_write", ckpt.trainer, 40)
        report = run_check(fake_bin, "--duration", "3", timeout=120)
    kind, cause, why, advice = card_verdict(report)
    trainer = proc_of(report, ckpt.trainer)
    writes = trainer["wchar_per_s"]["mean"]
    assert (kind, cause) == ("starving", "checkpoint"), (version, why, trainer)
    # The throttle held (8 MiB/s, cgroup {version}) and the trainer's own writes decided.
    assert 2**20 <= writes <= 2 * THROTTLE_BPS, (version, writes)
    assert any(w.startswith("the trainer writes ") for w in why), why
    assert not any("dataset" in a for a in advice), advice


# --- a rank waiting for a peer on another node ----------------------------------------------------


@pytest.mark.parametrize(("env", "expected"), [
    ({"WORLD_SIZE": "2", "RANK": "1"}, "collective-wait"),
    ({}, "light-kernels"),
])
def test_a_spinning_trainer_beside_a_busy_card_is_never_host_bound(
    fake_bin: FakeBin, env: dict[str, str], expected: str,
) -> None:
    clean = {k: "" for k in ("WORLD_SIZE", "RANK", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                             "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                             "SLURM_PROCID")}
    with job(["tests.jobs.busy_tree", "--workers", "2", "--trainer-burn", "--max-s", "60"],
             env={**clean, **env}) as spin:
        with contextlib.suppress(OSError):  # as busy_tree's tests do: a fair share of a core
            Path(f"/proc/{spin.trainer}/autogroup").write_text("-10")
        tool_for(fake_bin, "collective_wait_remote", spin.trainer, 40)
        report = run_check(fake_bin, "--duration", "3", timeout=120)
    kind, cause, why, _ = card_verdict(report)
    trainer = proc_of(report, spin.trainer)
    assert trainer["world_size"] == (2 if env else None), trainer
    assert (kind, cause) == ("starving", expected), (why, trainer["cpu_pct"])
    assert cause != "host-bound"


# --- a hang: paused until 20 s, then stalled ------------------------------------------------------


def test_a_hang_is_called_stalled_at_20_s_and_not_before(
    fake_bin: FakeBin, tmp_path: Path,
) -> None:
    record = tmp_path / "hang.jsonl"
    with job(["tests.jobs.phase_job", "--mode", "hang", "--max-s", "120"]) as hang:
        tool_for(fake_bin, "stalled", hang.trainer, 200)
        report = run_check(fake_bin, "--duration", "25", "--interval", "0.5",
                           "--record", str(record), timeout=180)
    _, reader = read_recording(record)
    frames = list(reader)
    tracker = VerdictTracker()
    shown = [tracker.push(f).cards["nvidia:0"] for f in frames]
    kinds = [(v.kind, v.cause) for v in shown]
    assert ("starving", "unknown") not in kinds and all(k != "starving" for k, _ in kinds), kinds
    assert ("unknown", "paused") in kinds, kinds
    first = next(i for i, (k, _) in enumerate(kinds) if k == "stalled")
    # The processes' first poll gives no rates (a baseline): the stall runs from the second.
    started = frames[1].t
    assert frames[first].t - started >= DEFAULT_THRESHOLDS.stall_min_s, (first, kinds)
    assert all(k == "stalled" for k, _ in kinds[first:]), kinds
    assert card_verdict(report)[0] == "stalled"
    why = " ".join(shown[-1].why)
    assert "progress counters are flat" in why, why
