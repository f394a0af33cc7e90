"""With no vendor tool, everything around the verdict works on a real probed job: a watcher or a
dashboard started before the job picks it up, the status file names its verdict for
``gpusat-tui status``, the dashboard rings, a webhook hears the turn and the recovery, and the
exporter serves the job's verdict.

PATH holds no tool (`fake_bin` is empty); the job runs under ``gpusat-tui run`` and sleeps in its
DataLoader while a switch file exists (starving), then computes (not starving).
"""

from __future__ import annotations

import http.server
import json
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.cli import parse as parse_command
from gpusat_tui.commands.dashboard import build_app
from gpusat_tui.commands.options import DashboardOptions
from gpusat_tui.notify.status_file import read_fresh
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.widgets.screens import NoToolScreen
from tests.fakes.tool import FakeBin
from tests.probe_helpers import REPO, start_job, stop_job, wait_ready
from tests.ui.conftest import screen_text, settle

STARVING_JOB = ("--sleep-ms", "60", "--compute-ms", "20")


def wait_for(what: str, check: Callable[[], Any], timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def receiver() -> Iterator[tuple[str, queue.Queue[dict[str, Any]]]]:
    """A webhook receiver on 127.0.0.1 (a port of its own): every POSTed JSON body, in order."""
    bodies: queue.Queue[dict[str, Any]] = queue.Queue()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            bodies.put(json.loads(self.rfile.read(length)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            """Quiet."""

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/hook", bodies
    finally:
        server.shutdown()
        server.server_close()


def next_event(bodies: queue.Queue[dict[str, Any]], event: str,
               timeout: float = 90.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {event!r} notice")
        try:
            body = bodies.get(timeout=left)
        except queue.Empty:
            raise AssertionError(f"no {event!r} notice") from None
        if body["event"] == event:
            return body


def gpusat(fakes: FakeBin, probe_dir: Path, *args: str) -> subprocess.Popen[str]:
    env = fakes.env({"GPUSAT_PROBE_DIR": str(probe_dir)})
    return subprocess.Popen([sys.executable, "-m", "gpusat_tui", *args], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def status_line(fakes: FakeBin, probe_dir: Path) -> str:
    env = fakes.env({"GPUSAT_PROBE_DIR": str(probe_dir)})
    done = subprocess.run([sys.executable, "-m", "gpusat_tui", "status", "--format", "plain"],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=60)
    return done.stdout


def test_a_watcher_started_before_the_job_tells_the_turn_and_the_recovery(
    fake_bin: FakeBin, private_probe_dir: Path, tmp_path: Path,
    receiver: tuple[str, queue.Queue[dict[str, Any]]],
) -> None:
    url, bodies = receiver
    watcher = gpusat(fake_bin, private_probe_dir, "check", "--watch", "--json",
                     "--interval", "0.5", "--notify-hold", "1", "--notify-every", "1",
                     "--webhook", url)
    switch = tmp_path / "slow-loader"
    switch.touch()
    job = None
    try:
        # Started first, it waits for a job instead of saying "no tool" and exiting.
        assert watcher.stderr is not None
        said = ""
        while "watching" not in said:
            line = watcher.stderr.readline()
            assert line, f"the watcher ended (rc {watcher.wait()}): {said}"
            said += line
        assert "waiting for a job" in said, said
        assert watcher.poll() is None
        job = start_job(private_probe_dir, *STARVING_JOB, "--switch-file", str(switch))
        wait_ready(job)
        turned = next_event(bodies, "turned")
        assert (turned["problem"], turned["kind"], turned["cause"]) == (
            "starving", "starving", "input-bound"), turned
        # The status file names the verdict, and `status` shows it.
        assert "STARVING" in wait_for("the status line",
                                      lambda: (s := status_line(fake_bin, private_probe_dir))
                                      and "STARVING" in s and s)
        switch.unlink()  # the loader is fast now: the job computes
        recovered = next_event(bodies, "recovered")
        assert recovered["problem"] == "starving" and recovered["kind"] == "unknown", recovered
        assert recovered["cause"] == "not-starving", recovered
    finally:
        if job is not None:
            stop_job(job)
        watcher.send_signal(signal.SIGTERM)
        out, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["event"] for line in lines][:2] == ["turned", "recovered"], lines


def test_a_watcher_says_recovered_when_the_job_ends(
    fake_bin: FakeBin, private_probe_dir: Path,
    receiver: tuple[str, queue.Queue[dict[str, Any]]],
) -> None:
    url, bodies = receiver
    job = start_job(private_probe_dir, *STARVING_JOB)
    watcher = None
    try:
        wait_ready(job)
        watcher = gpusat(fake_bin, private_probe_dir, "check", "--watch", "--interval", "0.5",
                         "--notify-hold", "1", "--notify-every", "1", "--webhook", url)
        assert next_event(bodies, "turned")["problem"] == "starving"
        stop_job(job)
        recovered = next_event(bodies, "recovered")
        assert (recovered["kind"], recovered["cause"]) == ("unknown", "no-job"), recovered
    finally:
        if job.poll() is None:
            stop_job(job)
        if watcher is not None:
            watcher.send_signal(signal.SIGTERM)
            watcher.communicate(timeout=60)


async def test_a_dashboard_started_before_the_job_picks_it_up_and_rings(
    fake_bin: FakeBin, private_probe_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", fake_bin.env()["PATH"])
    options = parse_command(["--notify-hold", "1", "--interval", "0.5"])
    assert isinstance(options, DashboardOptions)
    written: list[str] = []  # headless, the app writes to no terminal: catch what it would
    monkeypatch.setattr(GpusatApp, "write_terminal", lambda self, data: written.append(data))
    app = build_app(options)
    job = None
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await settle(pilot, lambda: isinstance(app.screen, NoToolScreen))
            assert "Waiting for a probed job" in screen_text(app)
            await settle(pilot, lambda: app.frame is not None)  # polling the probe files
            assert read_fresh() is None  # no job, nothing for `status` to show as UNKNOWN
            job = start_job(private_probe_dir, *STARVING_JOB)
            wait_ready(job)
            await settle(pilot, lambda: not isinstance(app.screen, NoToolScreen)
                         and "STARVING (input-bound)" in screen_text(app), timeout=90.0)
            status = read_fresh()
            assert status is not None and status.writer == "dashboard", status
            assert (status.kind, status.cause) == ("starving", "input-bound")
            await settle(pilot, lambda: bool(written), timeout=60.0)
    finally:
        if job is not None:
            stop_job(job)
        for close in app.closers:
            close()
    # The bell, then the desktop notification's OSC 9 / 777 (`notify.terminal`).
    assert written[0].startswith("\a") and "STARVING" in written[0], written
    assert "\x1b]" in written[0], written


def test_the_exporter_serves_the_job_verdict_with_no_tool(
    fake_bin: FakeBin, private_probe_dir: Path,
) -> None:
    job = start_job(private_probe_dir, *STARVING_JOB)
    exporter = None
    try:
        wait_ready(job)
        exporter = gpusat(fake_bin, private_probe_dir, "export", "--listen", "127.0.0.1:0",
                          "--interval", "0.5")
        assert exporter.stderr is not None
        start = exporter.stderr.readline()
        assert "tools: none" in start and "tools: ;" not in start, start
        metrics_url = start.split("serving ", 1)[1].split(" ", 1)[0]

        def starving() -> str | None:
            with urllib.request.urlopen(metrics_url, timeout=10) as answer:
                text = answer.read().decode()
            lines = [line for line in text.splitlines()
                     if line.startswith("gpusat_job_verdict{") and line.endswith(" 1.0")]
            found = lines and 'kind="starving"' in lines[0] and 'cause="input-bound"' in lines[0]
            return text if found else None

        text = wait_for("gpusat_job_verdict starving", starving)
        assert 'kind="saturated"} 0.0' in text  # the other kinds, at 0
    finally:
        stop_job(job)
        if exporter is not None:
            exporter.send_signal(signal.SIGTERM)
            exporter.communicate(timeout=60)
