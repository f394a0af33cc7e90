"""``gpusat-tui status``: the line for each verdict kind in every format, the status file as an
interface (atomic, versioned, fresh only while its writer runs), and the command as a process:
from a monitor's file without starting a tool, from an exporter's /metrics on 127.0.0.1, and
from a quick poll of its own under a hard time limit."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpusat_tui.commands.export_metrics import ExportState
from gpusat_tui.commands.status import render, status_from_metrics
from gpusat_tui.model import Assessment, CardReading, Frame, ProbeSample, Verdict
from gpusat_tui.notify.status_file import (
    CACHE_NAME,
    LAYOUT_1_KEYS,
    JobStatus,
    StatusFileWriter,
    read_fresh,
    summarise,
)
from tests.fakes.tool import FakeBin, Step
from tests.prom.hosts import REPO, fake_host

NOW = 1_767_225_600.0


@pytest.fixture
def probe_dir(private_probe_dir: Path) -> Path:
    """This test's probe folder (``GPUSAT_PROBE_DIR``), where status files go too."""
    return private_probe_dir

#: (status, plain line, tmux colour) for every verdict kind the line can show.
CASES = [
    (JobStatus("saturated", util_pct=97.0), "GPU ▮▮▮▮ SATURATED", "green"),
    (JobStatus("starving", "input-bound", util_pct=45.0, data_wait_pct=41.2),
     "GPU ▮▮▯▯ STARVING 41% wait", "yellow"),
    (JobStatus("starving", "io-bound", util_pct=20.0), "GPU ▮▯▯▯ STARVING io-bound", "yellow"),
    (JobStatus("stalled", since=NOW - 250, util_pct=0.0), "GPU ▯▯▯▯ STALLED 4m", "red"),
    (JobStatus("fragmenting", util_pct=80.0, lagging=("nvidia:2",)),
     "GPU ▮▮▮▯ FRAGMENTING nvidia:2", "magenta"),
    (JobStatus("imbalanced", "straggler", util_pct=70.0, lagging=("nvidia:3", "nvidia:5")),
     "GPU ▮▮▮▯ STRAGGLER nvidia:3+1", "colour208"),
    (JobStatus("imbalanced", "throttled", util_pct=60.0), "GPU ▮▮▯▯ THROTTLED", "colour208"),
    (JobStatus("idle", util_pct=0.0), "GPU ▯▯▯▯ IDLE", "colour244"),
    (JobStatus("unknown"), "GPU UNKNOWN", "colour244"),
    (None, "GPU –", "colour244"),
]


@pytest.mark.parametrize(("status", "plain", "colour"), CASES)
def test_the_line_for_each_verdict_kind(status: JobStatus | None, plain: str,
                                        colour: str) -> None:
    assert render(status, "plain", NOW) == plain
    assert render(status, "tmux", NOW) == f"#[fg={colour}]{plain}#[default]"
    polybar = render(status, "polybar", NOW)
    assert polybar.startswith("%{F#") and polybar.endswith(f"{plain}%{{F-}}")
    waybar = json.loads(render(status, "waybar", NOW))
    assert waybar["text"] == plain
    assert waybar["class"] == (status.kind if status else "none")


def test_text_from_a_monitor_cannot_escape_the_bar() -> None:
    hostile = JobStatus("fragmenting", lagging=("#[fg=red]\x1b]0;x\x07nv",), util_pct=50.0)
    tmux = render(hostile, "tmux", NOW)
    assert "\x1b" not in tmux and "\x07" not in tmux
    assert "##[fg=red]" in tmux  # tmux shows a doubled # as one, never as a style
    assert tmux.count("#[") - tmux.count("##[") == 2  # only the line's own colour and reset


# --- the status file ------------------------------------------------------------------------


def frame_and_verdicts(kind: str = "starving", wait: float | None = 41.0) -> tuple:
    cards = [CardReading(vendor="nvidia", index=i, util_pct=u) for i, u in enumerate((40, 60))]
    probes = [ProbeSample(pid=42, data_wait_pct=wait)] if wait is not None else []
    verdict = Verdict(kind=kind, cause="input-bound" if kind == "starving" else None,
                      why=["the loop waits for data"])
    return (Frame(t=time.time(), cards=cards, probes=probes),
            Assessment(cards={c.id: verdict for c in cards}, job=verdict))


def test_a_writer_leaves_a_versioned_file_that_status_reads(probe_dir: Path) -> None:
    writer = StatusFileWriter("dashboard", 1.0)
    frame, assessment = frame_and_verdicts()
    written = writer.publish(frame, assessment)
    assert writer.path is not None and Path(writer.path).parent == probe_dir
    doc = json.loads(Path(writer.path).read_text())
    assert tuple(doc) == LAYOUT_1_KEYS and doc["layout"] == 1 and doc["pid"] == os.getpid()
    assert not [p for p in probe_dir.iterdir() if p.name.endswith(".tmp")]  # replaced whole
    assert oct(Path(writer.path).stat().st_mode & 0o777) == "0o600"
    got = read_fresh()
    assert got == JobStatus("starving", "input-bound", since=frame.t, util_pct=50.0,
                            data_wait_pct=41.0, cards=2, lagging=(),
                            headline="the loop waits for data", t=frame.t, writer="dashboard",
                            pid=os.getpid())
    assert got == written.__class__(**{**{n: getattr(written, n) for n in written.__slots__},
                                       "writer": "dashboard", "pid": os.getpid()})
    writer.close()
    assert read_fresh() is None and not Path(writer.path).exists()


def test_since_is_when_the_kind_began(probe_dir: Path) -> None:
    writer = StatusFileWriter("export", 1.0)
    frame, assessment = frame_and_verdicts("stalled", None)
    first = writer.publish(frame, assessment)
    later = writer.publish(frame.model_copy(update={"t": frame.t + 30}), assessment)
    assert first.since == later.since == frame.t
    assert later.t == frame.t + 30
    writer.close()


def test_old_figures_a_dead_writer_and_a_newer_layout_are_not_fresh(probe_dir: Path) -> None:
    now = time.time()
    base = dict(layout=1, writer="dashboard", pid=os.getpid(), t=now, interval_s=1.0,
                fresh_s=5.0, kind="starving")
    (probe_dir / "status-1.json").write_text(json.dumps({**base, "t": now - 6}))
    assert read_fresh(now) is None  # 6 s old, fresh for 5
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (probe_dir / "status-2.json").write_text(json.dumps({**base, "pid": int(dead)}))
    assert read_fresh(now) is None  # its writer is gone
    (probe_dir / "status-3.json").write_text(json.dumps({**base, "layout": 2}))
    (probe_dir / "status-4.json").write_text("{not json")
    (probe_dir / "status-5.json").write_text(json.dumps([1, 2]))
    assert read_fresh(now) is None
    (probe_dir / "status-6.json").write_text(json.dumps({**base, "kind": "stalled"}))
    (probe_dir / "status-7.json").write_text(json.dumps({**base, "t": now - 1}))
    got = read_fresh(now)
    assert got is not None and got.kind == "stalled"  # the freshest


def test_a_writer_that_cannot_write_says_so_and_stops(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    writer = StatusFileWriter("dashboard", 1.0, folder=str(blocker / "sub"))
    writer.publish(*frame_and_verdicts())
    assert writer.failure and "status" in writer.failure
    writer.publish(*frame_and_verdicts())  # no retry, no raise


def test_summarise_names_the_cards_that_are_the_problem() -> None:
    frame, _ = frame_and_verdicts(wait=None)
    assessment = Assessment(
        cards={"nvidia:0": Verdict(kind="starving"), "nvidia:1": Verdict(kind="imbalanced")},
        job=Verdict(kind="imbalanced", cause="straggler"))
    status = summarise(frame, assessment)
    assert status.lagging == ("nvidia:1",) and status.data_wait_pct is None
    assert render(status, "plain", NOW) == "GPU ▮▮▯▯ STRAGGLER nvidia:1"


# --- the command ----------------------------------------------------------------------------


def run_status(
    fakes: FakeBin | None, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess:
    env = fakes.env() if fakes is not None else {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "gpusat_tui", "status", *args], env=env,
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_with_a_running_monitor_it_reads_the_file_and_starts_no_tool(
    tmp_path: Path, probe_dir: Path,
) -> None:
    fakes = fake_host(tmp_path / "h", "saturated")
    writer = StatusFileWriter("dashboard", 1.0)
    writer.publish(*frame_and_verdicts())
    result = run_status(fakes)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "#[fg=yellow]GPU ▮▮▯▯ STARVING 41% wait#[default]\n"
    assert fakes.tools["nvidia-smi"].calls() == 0
    assert run_status(fakes, "--format", "plain").stdout == "GPU ▮▮▯▯ STARVING 41% wait\n"
    writer.close()


@pytest.fixture
def exporter_like() -> Iterator[str]:
    """A local HTTP server on 127.0.0.1 serving a real exposition of a stalled job."""
    state = ExportState(host="h", interval_s=1.0)
    frame, _ = frame_and_verdicts()
    stalled = Verdict(kind="stalled")
    state.update(frame, Assessment(cards={c.id: stalled for c in frame.cards}, job=stalled))
    from prometheus_client import CollectorRegistry, generate_latest

    from gpusat_tui.commands.export_metrics import ExportCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(ExportCollector(state))
    text = generate_latest(registry)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(text)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/metrics"
    server.shutdown()
    server.server_close()


def test_without_a_file_it_asks_the_local_exporter(
    tmp_path: Path, probe_dir: Path, exporter_like: str,
) -> None:
    fakes = fake_host(tmp_path / "h", "saturated")
    result = run_status(fakes, "--format", "plain", "--exporter", exporter_like)
    assert result.stdout == "GPU ▮▮▯▯ STALLED\n", result.stderr
    assert fakes.tools["nvidia-smi"].calls() == 0


def test_status_from_metrics_reads_the_exporter_s_own_verdicts() -> None:
    assert status_from_metrics("# nothing here\n") is None
    state = ExportState(host="h")
    frame, assessment = frame_and_verdicts()
    state.update(frame, assessment)
    from prometheus_client import CollectorRegistry, generate_latest

    from gpusat_tui.commands.export_metrics import ExportCollector

    registry = CollectorRegistry(auto_describe=False)
    registry.register(ExportCollector(state))
    status = status_from_metrics(generate_latest(registry).decode())
    assert status is not None
    assert (status.kind, status.cause, status.util_pct, status.data_wait_pct) == (
        "starving", "input-bound", pytest.approx(50.0), pytest.approx(41.0))


def test_alone_it_polls_once_then_reuses_its_answer(tmp_path: Path, probe_dir: Path) -> None:
    fakes = fake_host(tmp_path / "h", "saturated")
    first = run_status(fakes, "--format", "plain", "--exporter", "none", "--poll", "1")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("GPU ") and first.stdout != "GPU –\n", first.stdout
    calls = fakes.tools["nvidia-smi"].calls()
    assert calls >= 1 and (probe_dir / CACHE_NAME).exists()
    second = run_status(fakes, "--format", "plain", "--exporter", "none", "--poll", "1")
    assert second.stdout == first.stdout
    assert fakes.tools["nvidia-smi"].calls() == calls  # no tool started for the second


def test_a_hung_tool_cannot_hold_the_status_bar(tmp_path: Path, probe_dir: Path) -> None:
    fakes = fake_host(tmp_path / "h", "saturated")
    from gpusat_tui.collectors import all_specs

    spec = next(s for s in all_specs() if s.tool == "nvidia-smi")
    fakes.add_for_spec(spec, [Step(mode="hang")] * 3)
    started = time.monotonic()
    result = run_status(fakes, "--format", "plain", "--exporter", "none", "--poll", "30",
                        "--timeout", "2")
    assert result.returncode == 0
    assert result.stdout.startswith("GPU")
    assert time.monotonic() - started < 30  # the hard limit, not the 30 s poll


def test_no_tool_no_monitor_says_so_in_one_line(fake_bin: FakeBin, probe_dir: Path) -> None:
    result = run_status(fake_bin, "--exporter", "none")
    assert result.returncode == 0
    assert result.stdout == "#[fg=colour244]GPU –#[default]\n"
