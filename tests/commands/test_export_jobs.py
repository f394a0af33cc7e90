"""The exporter's job attribution (`gpusat_job_info`, `gpusat_card_job_info`) and energy counter
(`gpusat_card_energy_joules_total`), read back through the real text exposition."""

from __future__ import annotations

import pytest

from gpusat_tui.commands.export_metrics import ExportState
from gpusat_tui.model import Assessment, CardReading, Frame, JobContext
from tests.prom.exposition import exposed_samples

T0 = 1_767_225_600.0


def card(index: int, power: float | None) -> CardReading:
    return CardReading(vendor="nvidia", index=index, util_pct=90.0, power_w=power)


SLURM = JobContext(scheduler="slurm", job_id="4242", step="0", name='a "quoted"\nname',
                   user="alice", partition="gpu", pids=[10, 11],
                   card_ids=["nvidia:0", "nvidia:1"])
POD = JobContext(scheduler="kubernetes", job_id="uid-1", name="trainer-0", namespace="ml",
                 pod_uid="uid-1", pids=[20], card_ids=["nvidia:2"])


def scrape(state: ExportState) -> dict[str, list]:
    out: dict[str, list] = {}
    for sample in exposed_samples(state):
        out.setdefault(sample.name, []).append(sample)
    return out


def test_one_info_series_per_job_and_one_join_series_per_card() -> None:
    state = ExportState(host="node-1", interval_s=1.0)
    state.update(Frame(t=T0, cards=[card(0, 100.0), card(1, 100.0), card(2, 100.0)],
                       jobs=[SLURM, POD]), Assessment())
    samples = scrape(state)
    jobs = {s.labels["job_key"]: s for s in samples["gpusat_job_info"]}
    assert set(jobs) == {"slurm:4242", "kubernetes:uid-1"}
    slurm = jobs["slurm:4242"]
    assert slurm.value == 1.0
    assert {k: slurm.labels[k] for k in ("host", "scheduler", "job_id", "step", "user",
                                         "partition", "name")} == {
        "host": "node-1", "scheduler": "slurm", "job_id": "4242", "step": "0",
        "user": "alice", "partition": "gpu", "name": 'a "quoted"\nname'}
    assert jobs["kubernetes:uid-1"].labels["namespace"] == "ml"
    joins = sorted((s.labels["card"], s.labels["job_key"]) for s in samples["gpusat_card_job_info"])
    assert joins == [("nvidia:0", "slurm:4242"), ("nvidia:1", "slurm:4242"),
                     ("nvidia:2", "kubernetes:uid-1")]
    # No job label anywhere else: the card series keep their labels.
    assert "job_key" not in samples["gpusat_card_power_watts"][0].labels


def test_no_job_no_job_series() -> None:
    state = ExportState(host="h")
    state.update(Frame(t=T0, cards=[card(0, 100.0)]), Assessment())
    samples = scrape(state)
    assert "gpusat_job_info" not in samples and "gpusat_card_job_info" not in samples


def test_energy_counter_integrates_power_and_skips_gaps_and_cards_without_power() -> None:
    state = ExportState(host="h", interval_s=1.0)
    times = [0.0, 1.0, 2.0, 3.0, 60.0, 61.0]  # a 57 s gap: not bridged
    for t in times:
        state.update(Frame(t=T0 + t, cards=[card(0, 300.0), card(1, None)]), Assessment())
    samples = scrape(state)
    [energy] = samples["gpusat_card_energy_joules_total"]
    assert energy.labels["card"] == "nvidia:0"
    assert energy.value == pytest.approx(300.0 * 4)
    # A card that leaves drops out, as the other counters do.
    state.update(Frame(t=T0 + 62, cards=[card(1, None)]), Assessment())
    assert "gpusat_card_energy_joules_total" not in scrape(state)
