"""The shipped ``GpusatJobStarving`` alert fires on a real Prometheus while the job's cause
evidence is noisy.

A ``gpusat-tui export --interval 0.5`` process watches a fake card that starves the whole time
(tests/prom/hosts.py's ``starving`` scenario) and, with ``--pid``, a real process tree
(`tests/jobs/busy_tree.py --alternate-s`) whose DataLoader workers and trainer take turns
burning a core, 0.5 to 2.5 s each: input-bound and host-bound evidence in runs of a few polls,
as on a shared host. A real Prometheus scrapes it every 0.5 s and evaluates the shipped rules at
the same interval. The shipped ``for`` is 10m; the test's copy of alerts.yaml shortens only
that line of ``GpusatJobStarving`` to 15s, its expression and labels untouched. A ``cause``
label that changed every few polls would restart ``for`` and the alert would never fire.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.commands.test_check_verdicts import busy_tree
from tests.commands.test_prometheus_rules import ALERTS, RECORDING, alert_blocks
from tests.conftest import leftover_processes
from tests.prom.hosts import fake_host, start_exporter
from tests.prom.server import PromServer, prometheus, prometheus_binary

pytestmark = pytest.mark.skipif(
    prometheus_binary() is None,
    reason="no prometheus binary (apt-get install prometheus; .ci/run installs it)",
)

ALERT = "GpusatJobStarving"
SHORT_FOR = "15s"


def rules_with_short_for(folder: Path) -> list[Path]:
    """The shipped rules, with only ``GpusatJobStarving``'s ``for: 10m`` made 15 s."""
    text = ALERTS.read_text()
    block = alert_blocks(text)[ALERT]
    assert re.search(r"^\s+for: 10m$", block, flags=re.M), block
    short = re.sub(r"^(\s+for: )10m$", rf"\g<1>{SHORT_FOR}", block, count=1, flags=re.M)
    alerts = folder / "alerts.yaml"
    alerts.write_text(text.replace(block, short))
    recording = folder / "rules.yaml"
    recording.write_text(RECORDING.read_text())
    return [recording, alerts]


def alert_states(prom: PromServer) -> list[tuple[str, str, str]]:
    return [(a["labels"]["alertname"], a["state"], a["annotations"].get("cause", ""))
            for a in prom.get("alerts")["alerts"]]


def test_the_starving_alert_fires_at_half_second_polls_with_noisy_cause_evidence(
    tmp_path: Path,
) -> None:
    fakes = fake_host(tmp_path / "node", "starving", cards=1)
    rules = rules_with_short_for(tmp_path)
    with busy_tree("--workers", "1", "--alternate-s", "2.5", max_s=300) as tree:
        exporter = start_exporter(fakes, "node-s", "--pid", str(tree.trainer),
                                  "--enrich-every", "1", interval=0.5)
        try:
            with prometheus(tmp_path / "prom", {"gpusat": [exporter.address]},
                            scrape_interval="500ms", rule_files=rules) as prom:
                deadline = time.monotonic() + 150
                states: list[tuple[str, str, str]] = []
                while time.monotonic() < deadline:
                    states = [s for s in alert_states(prom) if s[0] == ALERT]
                    if any(state == "firing" for _, state, _ in states):
                        break
                    time.sleep(0.5)
                else:
                    raise AssertionError(f"{ALERT} never fired: {states}\n"
                                         f"{exporter.log.read_text()}")
                [(_, _, cause)] = states
                assert cause  # the annotation names the current cause ("unknown" at worst)
                # The job was starving all along, and its evidence took turns: the trainer
                # and its worker each burned while the other idled, in stored samples.
                held = prom.query(f'min_over_time(gpusat_job_verdict{{kind="starving"}}'
                                  f"[{SHORT_FOR}])")
                assert held and max(float(s["value"][1]) for s in held) == 1.0, held
                trainer = prom.query("gpusat_trainer_cpu_ratio[2m]")
                worker = prom.query("gpusat_trainer_worker_cpu_max_ratio[2m]")
                assert trainer and worker, (trainer, worker)
                pairs = list(zip((float(v) for _, v in trainer[0]["values"]),
                                 (float(v) for _, v in worker[0]["values"]), strict=False))
                assert any(t > w + 0.3 for t, w in pairs), pairs  # host-bound evidence
                assert any(w > t + 0.3 for t, w in pairs), pairs  # input-bound evidence
        finally:
            assert exporter.stop() == 0, exporter.log.read_text()
    assert not leftover_processes(tmp_path, grace=2.0)
