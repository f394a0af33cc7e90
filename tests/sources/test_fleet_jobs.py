"""The fleet view's jobs: exporters' ``gpusat_job_info`` / ``gpusat_card_job_info`` series read
back into `Frame.jobs` (one job across hosts), and cards grouped by job."""

from __future__ import annotations

from typing import Any

from gpusat_tui.commands.export_metrics import ExportState
from gpusat_tui.model import Assessment, CardReading, Frame, JobContext
from gpusat_tui.sources.fleet_view.fleet_answers import (
    frame_from_answer,
    group_by_job,
    instant_query,
)
from tests.prom.exposition import exposed_samples

T0 = 1_767_225_600.0


def scraped(host: str, cards: int, jobs: list[JobContext]) -> list[dict[str, Any]]:
    """What Prometheus answers for one exporter's series (the API's ``result`` entries)."""
    state = ExportState(host=host)
    state.update(Frame(t=T0, cards=[CardReading(vendor="nvidia", index=i, util_pct=90.0,
                                                power_w=300.0) for i in range(cards)],
                       jobs=jobs), Assessment())
    return [{"metric": {"__name__": s.name, **s.labels, "instance": f"{host}:9478"},
             "value": [T0, repr(s.value)]}
            for s in exposed_samples(state)]


def slurm(cards: list[str]) -> JobContext:
    return JobContext(scheduler="slurm", job_id="4242", name="train\x1b[31m", user="alice",
                      step="0", card_ids=cards, pids=[1])


def test_a_job_on_two_hosts_is_one_job_of_all_its_cards() -> None:
    plain = JobContext(scheduler="plain", job_id="99", user="bob", card_ids=["nvidia:0"],
                       pids=[99])
    result = (scraped("node-a", 2, [slurm(["nvidia:0", "nvidia:1"])])
              + scraped("node-b", 2, [slurm(["nvidia:1"])])
              + scraped("node-c", 1, [plain]))
    answer = frame_from_answer({"resultType": "vector", "result": result})
    slurm_job, plain_job = sorted(answer.jobs, key=lambda j: j.scheduler, reverse=True)
    assert slurm_job.key == "slurm:4242"
    assert slurm_job.card_ids == ["node-a/nvidia:0", "node-a/nvidia:1", "node-b/nvidia:1"]
    assert slurm_job.host == "node-a,node-b" and slurm_job.source == "exporter"
    assert (slurm_job.user, slurm_job.step) == ("alice", "0")
    assert "\x1b" not in (slurm_job.name or "")  # label values are cleaned
    assert plain_job.key == "node-c/plain:99" and plain_job.card_ids == ["node-c/nvidia:0"]
    # Grouped: the Slurm job's cards together, then the plain job's, then the rest.
    cards = list(answer.cards.values())
    grouped = [c.id for c in group_by_job(cards, [slurm_job, plain_job])]
    assert grouped == ["node-a/nvidia:0", "node-a/nvidia:1", "node-b/nvidia:1",
                       "node-c/nvidia:0", "node-b/nvidia:0"]


def test_the_query_asks_for_the_job_series_and_old_exporters_give_no_jobs() -> None:
    query = instant_query(['job="gpusat"'])
    assert 'gpusat_job_info{job="gpusat"}' in query
    assert 'gpusat_card_job_info{job="gpusat"}' in query
    answer = frame_from_answer({"resultType": "vector", "result": scraped("n", 2, [])})
    assert answer.jobs == [] and len(answer.cards) == 2
