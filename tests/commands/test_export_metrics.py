"""The exporter's exposition: figures and verdicts as Prometheus text, parsed back with
prometheus_client's own parser, and the metric names pinned as an interface."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpusat_tui.commands.export_metrics import ExportState
from gpusat_tui.commands.metric_table import CARD_LABELS, METRICS, METRICS_VERSION, MIB
from gpusat_tui.model import (
    VERDICT_KINDS,
    Assessment,
    CardReading,
    Frame,
    HostSample,
    JobContext,
    ProbeSample,
    ProcessSample,
    ToolError,
    Verdict,
)
from tests.prom.exposition import exposed_samples

REPO = Path(__file__).resolve().parents[2]
#: The Grafana dashboard, beside the alerting and recording rules (the mixin layout).
DASHBOARD = "contrib/prometheus/dashboards/gpusat-fleet.json"
T0 = 1_767_225_600.0


def card(index: int, util: float | None, **kw: object) -> CardReading:
    values: dict[str, object] = dict(
        name="NVIDIA H100 80GB HBM3", uuid=f"GPU-{index}", mem_used_mib=40960.0,
        mem_total_mib=81920.0, power_w=350.0, power_cap_w=700.0, temp_c=61.0, tool="nvidia-smi",
    )
    values.update(kw)
    return CardReading(vendor="nvidia", index=index, util_pct=util, **values)  # type: ignore[arg-type]


def job(pid: int = 4242, cpu: float = 80.0, workers: tuple[float, ...] = (90.0, 100.0)) -> list:
    procs = [ProcessSample(pid=pid, role="trainer", name="python train.py", cpu_pct=cpu)]
    procs += [
        ProcessSample(pid=pid + 1 + i, role="dataloader_worker", name="pt_data_worker",
                      cpu_pct=c, trainer_pid=pid)
        for i, c in enumerate(workers)
    ]
    return procs


STARVING = Verdict(kind="starving", cause="input-bound")
SATURATED = Verdict(kind="saturated")


def scrape(state: ExportState) -> dict[str, list]:
    """name -> samples, through the real text exposition and the real parser."""
    by_name: dict[str, list] = {}
    for sample in exposed_samples(state):
        by_name.setdefault(sample.name, []).append(sample)
    return by_name


def one(samples: dict[str, list], metric: str, **labels: str) -> float:
    found = [
        s for s in samples.get(metric, []) if all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (metric, labels, samples.get(metric))
    return float(found[0].value)


def test_card_figures_in_base_units_with_every_label() -> None:
    state = ExportState(host="node-7")
    frame = Frame(t=T0, cards=[card(0, 87.0), card(1, None, stale_s=4.0)])
    state.update(frame, Assessment(cards={"nvidia:0": SATURATED}, job=SATURATED))
    samples = scrape(state)
    util = samples["gpusat_card_utilization_ratio"]
    assert len(util) == 1  # card 1 has no figure: no sample, never a made-up 0
    assert util[0].value == pytest.approx(0.87)
    assert util[0].labels == {
        "host": "node-7", "vendor": "nvidia", "card": "nvidia:0", "index": "0",
        "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0",
    }
    assert one(samples, "gpusat_card_memory_used_bytes", card="nvidia:0") == 40960 * MIB
    assert one(samples, "gpusat_card_memory_total_bytes", card="nvidia:1") == 81920 * MIB
    assert one(samples, "gpusat_card_memory_used_ratio", card="nvidia:0") == pytest.approx(0.5)
    assert one(samples, "gpusat_card_power_watts", card="nvidia:0") == 350.0
    assert one(samples, "gpusat_card_power_limit_watts", card="nvidia:0") == 700.0
    assert one(samples, "gpusat_card_temperature_celsius", card="nvidia:0") == 61.0
    assert one(samples, "gpusat_card_figures_age_seconds", card="nvidia:0") == 0.0
    assert one(samples, "gpusat_card_figures_age_seconds", card="nvidia:1") == 4.0
    assert one(samples, "gpusat_exporter_last_poll_timestamp_seconds") == T0
    info = samples["gpusat_exporter_info"][0].labels
    assert info["host"] == "node-7" and info["metrics_version"] == str(METRICS_VERSION)


def test_verdict_is_one_series_per_kind_with_only_the_current_one_at_1() -> None:
    state = ExportState(host="h")
    frame = Frame(t=T0, cards=[card(0, 30.0), card(1, 95.0)])
    job_verdict = Verdict(kind="imbalanced", cause="straggler")
    state.update(frame, Assessment(cards={"nvidia:0": STARVING, "nvidia:1": SATURATED},
                                   job=job_verdict))
    samples = scrape(state)
    for card_id, verdict in (("nvidia:0", STARVING), ("nvidia:1", SATURATED)):
        series = [s for s in samples["gpusat_card_verdict"] if s.labels["card"] == card_id]
        assert sorted(s.labels["kind"] for s in series) == sorted(VERDICT_KINDS)
        on = [s for s in series if s.value == 1.0]
        assert [(s.labels["kind"], s.labels["cause"]) for s in on] == [
            (verdict.kind, verdict.cause or "")
        ]
        assert all(s.labels["cause"] == "" for s in series if s.value == 0.0)
    jobs = samples["gpusat_job_verdict"]
    assert sorted(s.labels["kind"] for s in jobs) == sorted(VERDICT_KINDS)
    assert [(s.labels["kind"], s.labels["cause"]) for s in jobs if s.value == 1.0] == [
        ("imbalanced", "straggler")
    ]
    # A card the tracker has no verdict for yet reads unknown, not nothing.
    state.update(Frame(t=T0 + 1, cards=[card(2, 50.0)]), Assessment())
    on = [s for s in scrape(state)["gpusat_card_verdict"] if s.value == 1.0]
    assert [(s.labels["card"], s.labels["kind"]) for s in on] == [("nvidia:2", "unknown")]


def test_counters_integrate_shares_over_the_polls_and_skip_long_gaps() -> None:
    state = ExportState(host="h", interval_s=1.0)
    verdicts = Assessment(cards={"nvidia:0": SATURATED})
    utils = [50.0, 100.0, 0.0, 100.0]
    for i, util in enumerate(utils):
        state.update(Frame(t=T0 + i, cards=[card(0, util)], processes=job()), verdicts)
    samples = scrape(state)
    # The first poll starts the clock; each later one adds interval x its share.
    assert one(samples, "gpusat_card_busy_seconds_total") == pytest.approx(1.0 + 0.0 + 1.0)
    assert one(samples, "gpusat_trainer_cpu_seconds_total", pid="4242") == pytest.approx(3 * 0.8)
    assert one(samples, "gpusat_trainer_workers_cpu_seconds_total", pid="4242") == (
        pytest.approx(3 * 1.9)
    )
    # A 60 s gap (suspended, or a hung poll) is not guessed at; a stale figure is no evidence.
    state.update(Frame(t=T0 + 63, cards=[card(0, 100.0)], processes=job()), verdicts)
    state.update(Frame(t=T0 + 64, cards=[card(0, 100.0, stale_s=1.0)], processes=job()), verdicts)
    samples = scrape(state)
    assert one(samples, "gpusat_card_busy_seconds_total") == pytest.approx(2.0)
    assert one(samples, "gpusat_trainer_cpu_seconds_total", pid="4242") == pytest.approx(3.2)


def test_trainer_figures_and_gone_trainers_drop_out() -> None:
    state = ExportState(host="h")
    state.update(Frame(t=T0, processes=job(workers=(90.0, 100.0, None))), Assessment())  # type: ignore[arg-type]
    samples = scrape(state)
    assert one(samples, "gpusat_trainer_cpu_ratio", pid="4242", name="python train.py") == 0.8
    assert one(samples, "gpusat_trainer_workers", pid="4242") == 3
    assert one(samples, "gpusat_trainer_workers_cpu_ratio", pid="4242") == pytest.approx(1.9)
    assert one(samples, "gpusat_trainer_worker_cpu_max_ratio", pid="4242") == pytest.approx(1.0)
    state.update(Frame(t=T0 + 1, processes=job(pid=5000)), Assessment())
    samples = scrape(state)
    assert {s.labels["pid"] for s in samples["gpusat_trainer_cpu_ratio"]} == {"5000"}
    assert {s.labels["pid"] for s in samples["gpusat_trainer_cpu_seconds_total"]} == {"5000"}


def test_tool_errors_host_and_own_cpu() -> None:
    state = ExportState(host="h")
    hung = ToolError(tool="nvidia-smi", message="no answer in 1 s", kind="timeout")
    for i in range(3):
        errors = [hung] if i else []
        if i == 2:
            errors.append(ToolError(tool="rocm-smi", message="garbage", kind="parse"))
        state.update(Frame(t=T0 + i, errors=errors, monitor_cpu_pct=0.7,
                           host=HostSample(cpu_pct=40.0, iowait_pct=5.0)), Assessment())
    samples = scrape(state)
    assert one(samples, "gpusat_tool_errors_total", tool="nvidia-smi", kind="timeout") == 2
    assert one(samples, "gpusat_tool_errors_total", tool="rocm-smi", kind="parse") == 1
    assert one(samples, "gpusat_host_cpu_ratio") == pytest.approx(0.4)
    assert one(samples, "gpusat_host_iowait_ratio") == pytest.approx(0.05)
    assert one(samples, "gpusat_monitor_cpu_ratio") == pytest.approx(0.007)
    assert one(samples, "gpusat_exporter_cpu_seconds_total") > 0
    assert one(samples, "gpusat_exporter_polls_total") == 3


def test_before_the_first_poll_only_the_exporters_own_series() -> None:
    samples = scrape(ExportState(host="h"))
    assert set(samples) == {
        "gpusat_exporter_info", "gpusat_exporter_cpu_seconds_total", "gpusat_exporter_polls_total"
    }


def test_label_values_with_quotes_and_newlines_survive_the_exposition() -> None:
    state = ExportState(host='we"ird\nhost')
    state.update(Frame(t=T0, cards=[card(0, 10.0, name='A "quoted"\\ name\n')]), Assessment())
    sample = scrape(state)["gpusat_card_utilization_ratio"][0]
    assert sample.labels["host"] == 'we"ird\nhost'
    assert sample.labels["name"] == 'A "quoted"\\ name\n'


def probe(**kw: object) -> ProbeSample:
    values: dict[str, object] = {
        "pid": 4242, "rank": 1, "local_rank": 1, "world_size": 2, "device_index": 0,
        "card_id": "nvidia:0", "data_wait_pct": 40.0, "step_ms": 250.0, "batches_per_s": 4.0,
        "samples_per_s": 128.0, "batches": 10, "steps": 12, "age_s": 0.1,
    }
    values.update(kw)
    return ProbeSample.model_validate(values)


def test_probe_figures_when_the_frame_carries_probes() -> None:
    state = ExportState(host="h", interval_s=1.0)
    for i in range(3):
        state.update(Frame(t=T0 + i, probes=[probe()]), Assessment())
    samples = scrape(state)
    labels = {"pid": "4242", "rank": "1", "card": "nvidia:0"}
    assert one(samples, "gpusat_probe_data_wait_ratio", **labels) == pytest.approx(0.4)
    # No cumulative figure from the probe: the share integrated over the 2 s between polls.
    assert one(samples, "gpusat_probe_data_wait_seconds_total", **labels) == pytest.approx(0.8)
    assert one(samples, "gpusat_probe_steps_total", **labels) == 12
    assert one(samples, "gpusat_probe_step_seconds", **labels) == pytest.approx(0.25)
    assert one(samples, "gpusat_probe_samples_per_second", **labels) == 128.0
    assert one(samples, "gpusat_probe_age_seconds", **labels) == pytest.approx(0.1)
    # The probe's own cumulative wait is exact: it wins over the integration.
    state.update(Frame(t=T0 + 3, probes=[probe(data_wait_s=17.5, rank=None)]), Assessment())
    samples = scrape(state)
    assert one(samples, "gpusat_probe_data_wait_seconds_total", rank="") == 17.5



def test_phase_samples_per_trainer_give_the_step_s_shares() -> None:
    state = ExportState(host="h", interval_s=1.0)
    state.update(Frame(t=T0, probes=[probe(stack_samples=200, stack_still_s=42.0,
                                           phase_samples={"data": 150, "backward": 50})]),
                 Assessment())
    samples = scrape(state)
    labels = {"pid": "4242", "rank": "1", "card": "nvidia:0"}
    assert one(samples, "gpusat_probe_phase_samples_total", phase="data", **labels) == 150
    assert one(samples, "gpusat_probe_phase_samples_total", phase="backward", **labels) == 50
    assert len(samples["gpusat_probe_phase_samples_total"]) == 2  # never-sampled: absent
    assert one(samples, "gpusat_probe_stack_still_seconds", **labels) == 42.0
    # An older probe: no phase series, no still figure
    state.update(Frame(t=T0 + 1, probes=[probe()]), Assessment())
    samples = scrape(state)
    assert not samples.get("gpusat_probe_phase_samples_total")
    assert not samples.get("gpusat_probe_stack_still_seconds")


# --- the names are an interface ------------------------------------------------------------

#: Pinned: renaming a metric or a label, or changing a type, must fail here (and bump
#: METRICS_VERSION, and say so in docs/prometheus.md).
PINNED = {
    "gpusat_exporter_info": ("info", "host version metrics_version"),
    "gpusat_card_utilization_ratio": ("gauge", "CARD"),
    "gpusat_card_busy_seconds_total": ("counter", "CARD"),
    "gpusat_card_memory_used_bytes": ("gauge", "CARD"),
    "gpusat_card_memory_total_bytes": ("gauge", "CARD"),
    "gpusat_card_memory_used_ratio": ("gauge", "CARD"),
    "gpusat_card_power_watts": ("gauge", "CARD"),
    "gpusat_card_power_limit_watts": ("gauge", "CARD"),
    "gpusat_card_temperature_celsius": ("gauge", "CARD"),
    "gpusat_card_figures_age_seconds": ("gauge", "CARD"),
    "gpusat_card_energy_joules_total": ("counter", "CARD"),
    "gpusat_card_verdict": ("gauge", "CARD kind cause"),
    "gpusat_job_verdict": ("gauge", "host kind cause"),
    "gpusat_job_info": ("info", "host job_key scheduler job_id step name user partition "
                                "namespace pod_uid"),
    "gpusat_card_job_info": ("info", "host card job_key"),
    "gpusat_trainer_cpu_ratio": ("gauge", "host pid name"),
    "gpusat_trainer_cpu_seconds_total": ("counter", "host pid name"),
    "gpusat_trainer_workers": ("gauge", "host pid name"),
    "gpusat_trainer_workers_cpu_ratio": ("gauge", "host pid name"),
    "gpusat_trainer_worker_cpu_max_ratio": ("gauge", "host pid name"),
    "gpusat_trainer_workers_cpu_seconds_total": ("counter", "host pid name"),
    "gpusat_trainer_cpu_quota_ratio": ("gauge", "host pid name"),
    "gpusat_trainer_cpu_throttled_ratio": ("gauge", "host pid name"),
    "gpusat_probe_data_wait_ratio": ("gauge", "host pid rank card"),
    "gpusat_probe_data_wait_seconds_total": ("counter", "host pid rank card"),
    "gpusat_probe_steps_total": ("counter", "host pid rank card"),
    "gpusat_probe_step_seconds": ("gauge", "host pid rank card"),
    "gpusat_probe_samples_per_second": ("gauge", "host pid rank card"),
    "gpusat_probe_age_seconds": ("gauge", "host pid rank card"),
    "gpusat_probe_info": ("gauge", "host pid rank card framework"),
    "gpusat_probe_phase_samples_total": ("counter", "host pid rank card phase"),
    "gpusat_probe_stack_still_seconds": ("gauge", "host pid rank card"),
    "gpusat_host_cpu_ratio": ("gauge", "host"),
    "gpusat_host_iowait_ratio": ("gauge", "host"),
    "gpusat_tool_errors_total": ("counter", "host tool kind"),
    "gpusat_monitor_cpu_ratio": ("gauge", "host"),
    "gpusat_exporter_cpu_seconds_total": ("counter", "host"),
    "gpusat_exporter_polls_total": ("counter", "host"),
    "gpusat_exporter_last_poll_timestamp_seconds": ("gauge", "host"),
}


def test_metric_names_types_and_labels_are_pinned() -> None:
    assert METRICS_VERSION == 1
    assert CARD_LABELS == ("host", "vendor", "card", "index", "name", "uuid")
    actual = {
        m.name: (m.type, " ".join(m.labels).replace(" ".join(CARD_LABELS), "CARD"))
        for m in METRICS
    }
    assert actual == PINNED


def test_metric_names_follow_the_prometheus_rules() -> None:
    units = ("_ratio", "_bytes", "_watts", "_celsius", "_seconds", "_total", "_info",
             "_workers", "_per_second", "_verdict")
    for metric in METRICS:
        assert re.fullmatch(r"gpusat_[a-z][a-z0-9_]*", metric.name), metric.name
        assert (metric.type == "counter") == metric.name.endswith("_total"), metric.name
        assert metric.name.endswith(units), metric.name
        assert "percent" not in metric.name  # shares are ratios, consistently
        assert metric.help and metric.labels[0] == "host"


def test_every_metric_is_in_the_readme_table() -> None:
    readme = (REPO / "docs" / "prometheus.md").read_text()
    rows = set(re.findall(r"^\| `(gpusat_[a-z0-9_]+)`", readme, flags=re.M))
    assert rows == {m.name for m in METRICS}


def test_a_real_scrape_serves_exactly_the_documented_names() -> None:
    state = ExportState(host="h", interval_s=1.0)
    for i in range(2):
        quota = [p.model_copy(update={"cpu_quota_cores": 2.0, "cpu_throttled_pct": 5.0})
                 for p in job()]
        state.update(
            Frame(t=T0 + i, cards=[card(0, 50.0)], processes=quota,
                  host=HostSample(cpu_pct=1.0, iowait_pct=0.0), monitor_cpu_pct=1.0,
                  errors=[ToolError(tool="x", message="m", kind="exit")],
                  jobs=[JobContext(scheduler="plain", job_id="4242", pids=[4242],
                                   card_ids=["nvidia:0"])]),
            Assessment(cards={"nvidia:0": SATURATED}, job=SATURATED),
        )
    served = set(scrape(state))
    documented = {m.name for m in METRICS}
    assert served <= documented
    probe_names = {m.name for m in METRICS if m.name.startswith("gpusat_probe_")}
    assert documented - served == probe_names  # everything but the probe (no probe here)


def dashboard_exprs() -> list[str]:
    import json

    doc = json.loads((REPO / DASHBOARD).read_text())
    return [t["expr"] for p in doc["panels"] for t in p["targets"]]


def test_the_grafana_dashboard_uses_only_exported_names() -> None:
    exprs = dashboard_exprs()
    used = {name for e in exprs for name in re.findall(r"gpusat_[a-z0-9_]+", e)}
    assert used and used <= {m.name for m in METRICS}, used - {m.name for m in METRICS}
    assert DASHBOARD in (REPO / "docs" / "prometheus.md").read_text()


def test_a_trainers_cpu_quota_and_its_throttled_share() -> None:
    state = ExportState(host="h", interval_s=1.0)
    procs = [p.model_copy(update={"cpu_quota_cores": 0.5, "cpu_throttled_pct": held})
             for p, held in zip(job(), (40.0, 78.0, 60.0), strict=True)]
    state.update(Frame(t=T0, cards=[card(0, 20.0)], processes=procs),
                 Assessment(cards={"nvidia:0": STARVING}))
    samples = scrape(state)
    assert one(samples, "gpusat_trainer_cpu_quota_ratio", pid="4242") == 0.5
    # The most throttled of the trainer and its workers.
    assert one(samples, "gpusat_trainer_cpu_throttled_ratio", pid="4242") == pytest.approx(0.78)
    state.update(Frame(t=T0 + 1, cards=[card(0, 20.0)], processes=job()),
                 Assessment(cards={"nvidia:0": STARVING}))
    assert "gpusat_trainer_cpu_quota_ratio" not in scrape(state)  # no quota: no series
