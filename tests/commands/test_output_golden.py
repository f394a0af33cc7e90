"""Golden tests of two interfaces: the exact bytes of ``check --json`` (and of its JSON schema)
and of the exporter's /metrics text for fixed polls and verdicts (tests/commands/output_frames.py).
A reordered, renamed or retyped field, a changed default, a metric's name, label, help text or
order: each changes the bytes and fails here. A deliberate, additive change rewrites the files
under tests/commands/golden/ with ``GPUSAT_WRITE_GOLDEN=1`` (and says so in its commit)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from gpusat_tui.commands import export_metrics
from gpusat_tui.commands.check_report import CheckBuilder
from gpusat_tui.commands.check_schema import CheckReport
from gpusat_tui.commands.metric_table import METRICS
from tests.commands.output_frames import ASSESSMENT, full_frames

GOLDEN = Path(__file__).parent / "golden"


def _same_as_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("GPUSAT_WRITE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed"


def test_check_json_is_byte_for_byte_the_golden() -> None:
    builder = CheckBuilder()
    for frame in full_frames():
        builder.add(frame, ASSESSMENT)
    text = builder.report(3.0).model_dump_json()
    data = json.loads(text)
    # The world fills what it claims to (else the golden would pin only defaults).
    card, _ = data["cards"]
    trainer = data["processes"][0]
    assert card["extras"] and card["throttle"] and data["errors"] and data["jobs"]
    assert trainer["probe"]["alloc"] and trainer["probe"]["stack"] and trainer["stack_dump"]
    _same_as_golden("check_full.json", text + "\n")


def test_check_json_schema_is_byte_for_byte_the_golden() -> None:
    schema = json.dumps(CheckReport.model_json_schema(), indent=1)
    _same_as_golden("check_schema.json", schema + "\n")


def test_metrics_text_is_byte_for_byte_the_golden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export_metrics, "exporter_cpu_seconds", lambda: 12.5)
    state = export_metrics.ExportState(host="node-7", tools=("nvidia-smi",))
    for frame in full_frames():
        state.update(frame, ASSESSMENT)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(export_metrics.ExportCollector(state))
    text = generate_latest(registry).decode()
    helped = {line.split()[2] for line in text.splitlines() if line.startswith("# HELP")}
    # Every family is served (a counter's HELP names it without ``_total``).
    assert all({m.name, m.name.removesuffix("_total")} & helped for m in METRICS)
    _same_as_golden("metrics_full.txt", text)
