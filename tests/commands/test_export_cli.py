"""``gpusat-tui export`` as a process: listening, exit statuses, signals, a hung tool, recording."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpusat_tui.cli import build_parser
from gpusat_tui.collectors import all_specs
from gpusat_tui.commands.export import parse_listen
from tests.conftest import leftover_processes
from tests.fakes.tool import FakeBin, Step
from tests.prom.hosts import REPO, fake_host, scenario_cards, start_exporter


def samples(text: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append(s)
    return out


def test_listen_needs_an_address_and_defaults_to_loopback() -> None:
    assert parse_listen("127.0.0.1:9478") == ("127.0.0.1", 9478)
    assert parse_listen("0.0.0.0:9100") == ("0.0.0.0", 9100)
    assert parse_listen("[::1]:9478") == ("::1", 9478)
    for bad in (":9478", "9478", "localhost", "host:port", "1.2.3.4:70000", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_listen(bad)
    args = build_parser().parse_args(["export"])
    assert args.listen == ("127.0.0.1", 9478) and args.host_label is None


def run_export(fakes: FakeBin, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "export", *args], env=fakes.env(), cwd=REPO,
        capture_output=True, text=True, timeout=timeout,
    )


def test_no_tool_exits_1_and_says_where_it_looked(fake_bin: FakeBin) -> None:
    result = run_export(fake_bin)
    assert result.returncode == 1
    assert "No accelerator tool found" in result.stderr


def test_an_address_in_use_exits_2_with_the_reason(tmp_path: Path) -> None:
    fakes = fake_host(tmp_path / "h", "saturated", steps=3)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_export(fakes, "--listen", f"127.0.0.1:{port}")
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert not leftover_processes(fakes.dir, grace=1.0)


def test_serves_scrapes_records_and_stops_on_sigterm(tmp_path: Path) -> None:
    fakes = fake_host(tmp_path / "h", "saturated", cards=3, steps=20)
    record = tmp_path / "export.jsonl"
    exporter = start_exporter(fakes, "gpu-node-7", "--record", str(record))
    try:
        deadline = time.monotonic() + 20
        while True:
            got = samples(exporter.scrape())
            polls = got.get("gpusat_exporter_polls_total", [])
            if (polls and polls[0].value >= 4) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        util = got["gpusat_card_utilization_ratio"]
        assert sorted(s.labels["card"] for s in util) == ["nvidia:0", "nvidia:1", "nvidia:2"]
        assert {s.labels["host"] for s in util} == {"gpu-node-7"}
        cards = [c for k in range(20) for c in scenario_cards("saturated", 3, k)]
        seen = {round(c.util_pct) / 100 for c in cards}  # type: ignore[arg-type]
        assert all(round(s.value, 2) in seen for s in util)
        on = [s for s in got["gpusat_card_verdict"] if s.value == 1]
        assert {s.labels["kind"] for s in on} == {"saturated"}
    finally:
        assert exporter.stop() == 0
    assert not leftover_processes(fakes.dir, grace=1.0)
    lines = record.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "header"
    assert len(lines) >= 5 and json.loads(lines[-1])["cards"][0]["util_pct"] is not None


def test_a_hung_tool_never_slows_a_scrape(tmp_path: Path) -> None:
    spec = next(s for s in all_specs() if s.tool == "nvidia-smi")
    fakes = FakeBin(tmp_path / "bin")
    (tmp_path / "bin").mkdir()
    steps = [Step(cards=scenario_cards("saturated", 1, k)) for k in range(3)]
    fakes.add_for_spec(spec, [*steps, Step(mode="hang")])  # then hangs on every call
    exporter = start_exporter(fakes, "h", interval=0.5)
    try:
        deadline = time.monotonic() + 30
        while True:
            started = time.monotonic()
            got = samples(exporter.scrape(timeout=5))
            took = time.monotonic() - started
            # Every known tool and kind is served from the first scrape, at 0 until it fails.
            errors = [s for s in got.get("gpusat_tool_errors_total", []) if s.value > 0]
            if (errors and errors[0].value >= 2) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        # The tool is wedged (each call waits out its 1 s timeout), yet the scrape answered
        # from the last Frame; generous bound: this is behaviour, not a benchmark.
        assert took < 1.0
        assert [(s.labels["tool"], s.labels["kind"]) for s in errors] == [("nvidia-smi", "timeout")]
        assert got["gpusat_card_figures_age_seconds"][0].value > 0
        assert got["gpusat_card_utilization_ratio"][0].value > 0.9  # the last good figure
    finally:
        assert exporter.stop() == 0
    assert not leftover_processes(fakes.dir, grace=2.0)


def test_exporter_does_not_import_textual() -> None:
    code = (
        "import sys, gpusat_tui.commands.export, gpusat_tui.commands.export_metrics, "
        "gpusat_tui.cli; "
        "gpusat_tui.cli.build_parser(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_plotext')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    assert result.stdout.strip() == "[]"
