"""The alerting and recording rules shipped in ``contrib/prometheus/``: checked and unit-tested
with the real ``promtool`` (every alert firing and not firing), their shape (severity, summary,
description, a ``for`` of at least two scrape intervals), the names they read, and the error
counters they rely on being served at 0 from the first scrape."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from gpusat_tui.commands.export_metrics import ExportState
from gpusat_tui.commands.metric_table import METRICS
from gpusat_tui.model import TOOL_ERROR_KINDS, Assessment, CardReading, Frame, ToolError
from tests.commands.test_export_cli import samples
from tests.prom.exposition import exposed_samples
from tests.prom.hosts import fake_host, start_exporter

REPO = Path(__file__).resolve().parents[2]
RULES_DIR = REPO / "contrib" / "prometheus"
ALERTS = RULES_DIR / "alerts.yaml"
RECORDING = RULES_DIR / "rules.yaml"
UNIT_TESTS = sorted((RULES_DIR / "tests").glob("*_test.yaml"))
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="no promtool (it comes with Debian's prometheus package; .ci/run installs it)",
)

#: Two scrape intervals at the slowest common interval (1m): the shortest `for` allowed.
MIN_FOR_S = 120.0
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def promtool(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def alert_blocks(text: str) -> dict[str, str]:
    """alert name -> its block of YAML (up to the next rule), read line by line (no YAML
    library is a dependency; promtool checks the syntax)."""
    blocks: dict[str, str] = {}
    parts = re.split(r"^\s+- (?=alert:|record:)", text, flags=re.M)
    for part in parts[1:]:
        match = re.match(r"alert:\s*(\w+)", part)
        if match:
            blocks[match.group(1)] = part
    return blocks


def seconds(text: str) -> float:
    return sum(float(n) * _UNITS[u] for n, u in re.findall(r"(\d+)([smh])", text))


ALERT_NAMES = sorted(alert_blocks(ALERTS.read_text()))


@needs_promtool
def test_promtool_checks_the_rules() -> None:
    result = promtool("check", "rules", str(RECORDING), str(ALERTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@needs_promtool
def test_promtool_unit_tests_pass() -> None:
    assert UNIT_TESTS
    result = promtool("test", "rules", *map(str, UNIT_TESTS))
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_the_unit_tests_catch_a_changed_threshold(tmp_path: Path) -> None:
    """A rule changed under the tests fails them: they pin behaviour, not just syntax."""
    copy = tmp_path / "prometheus"
    shutil.copytree(RULES_DIR, copy)
    alerts = copy / "alerts.yaml"
    text = alerts.read_text()
    assert "gpusat:probe_data_wait:ratio_rate5m > 0.20" in text
    alerts.write_text(text.replace("gpusat:probe_data_wait:ratio_rate5m > 0.20",
                                   "gpusat:probe_data_wait:ratio_rate5m > 0.50"))
    result = promtool("test", "rules", "tests/alerts_test.yaml", cwd=copy)
    assert result.returncode != 0
    assert "GpusatJobInputStarved" in result.stdout + result.stderr


def test_the_issue_s_alerts_are_all_there() -> None:
    wanted = {
        "GpusatJobInputStarved", "GpusatJobStarving", "GpusatJobStalled",
        "GpusatCardFragmenting", "GpusatHostStraggler", "GpusatExporterDown",
        "GpusatExporterNotPolling", "GpusatProbeStale", "GpusatToolFailing",
    }
    assert wanted <= set(ALERT_NAMES)


@pytest.mark.parametrize("name", ALERT_NAMES)
def test_each_alert_has_severity_summary_description_and_a_long_enough_for(name: str) -> None:
    block = alert_blocks(ALERTS.read_text())[name]
    severity = re.search(r"^\s+severity:\s*(\w+)", block, flags=re.M)
    assert severity and severity.group(1) in {"critical", "warning", "info"}
    assert re.search(r"^\s+summary:\s*\S", block, flags=re.M)
    assert re.search(r"^\s+description:\s*\S", block, flags=re.M)
    duration = re.search(r"^\s+for:\s*(\S+)", block, flags=re.M)
    assert duration and seconds(duration.group(1)) >= MIN_FOR_S


@pytest.mark.parametrize("name", ALERT_NAMES)
def test_each_alert_is_unit_tested_firing_and_not_firing(name: str) -> None:
    firing = quiet = 0
    for path in UNIT_TESTS:
        cases = re.split(r"^\s+- alertname:\s*", path.read_text(), flags=re.M)[1:]
        for case in cases:
            if not case.startswith(f"{name}\n"):
                continue
            if re.search(r"exp_alerts:\s*\[\]", case):
                quiet += 1
            elif "exp_labels:" in case:
                firing += 1
    assert firing >= 1 and quiet >= 1, (name, firing, quiet)


def test_the_rules_read_only_exported_names() -> None:
    exported = {m.name for m in METRICS}
    used = set()
    for path in (ALERTS, RECORDING):
        exprs = re.findall(r"expr:\s*\|?\n?((?:.*\n)*?)(?=\s+(?:for|labels|- record|- alert)|\Z)",
                           path.read_text())
        used |= {n for e in exprs for n in re.findall(r"\bgpusat_[a-z0-9_]+", e)}
    assert used and used <= exported, used - exported
    recorded = set(re.findall(r"record:\s*(\S+)", RECORDING.read_text()))
    read = set(re.findall(r"\bgpusat:[a-z0-9_:]+", ALERTS.read_text()))
    assert read <= recorded, read - recorded


# --- every known label set of a counter starts at 0 -----------------------------------------


def test_error_counters_of_known_tools_are_served_at_zero_from_the_first_scrape() -> None:
    state = ExportState(host="h", tools=("nvidia-smi", "psutil"))
    errors = [s for s in exposed_samples(state) if s.name == "gpusat_tool_errors_total"]
    assert {(s.labels["tool"], s.labels["kind"]) for s in errors} == {
        (tool, kind) for tool in ("nvidia-smi", "psutil") for kind in TOOL_ERROR_KINDS
    }
    assert all(s.value == 0 for s in errors)
    state.update(
        Frame(t=time.time(), cards=[CardReading(vendor="nvidia", index=0, util_pct=50.0)],
              errors=[ToolError(tool="nvidia-smi", message="timed out", kind="timeout")]),
        Assessment(),
    )
    after = {(s.labels["tool"], s.labels["kind"]): s.value for s in exposed_samples(state)
             if s.name == "gpusat_tool_errors_total"}
    assert after[("nvidia-smi", "timeout")] == 1
    assert after[("nvidia-smi", "exit")] == 0 and after[("psutil", "denied")] == 0


def test_a_healthy_exporter_serves_its_tools_error_counters_at_zero(tmp_path: Path) -> None:
    """The real process: before any tool fails, rate()/increase() must see 0, not nothing."""
    fakes = fake_host(tmp_path / "h", "saturated", steps=20)
    exporter = start_exporter(fakes, "node-0")
    try:
        deadline = time.monotonic() + 20
        got = samples(exporter.scrape())
        while not got.get("gpusat_exporter_polls_total") and time.monotonic() < deadline:
            time.sleep(0.2)
            got = samples(exporter.scrape())
    finally:
        exporter.stop()
    errors = {(s.labels["tool"], s.labels["kind"]): s.value
              for s in got.get("gpusat_tool_errors_total", [])}
    for kind in TOOL_ERROR_KINDS:
        assert errors.get(("nvidia-smi", kind)) == 0, (kind, errors)
        assert errors.get(("psutil", kind)) == 0, (kind, errors)
