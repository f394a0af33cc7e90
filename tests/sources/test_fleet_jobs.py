"""The fleet view's jobs: exporters' ``gpusat_job_info`` / ``gpusat_card_job_info`` series read
back into `Frame.jobs` (one job across hosts), and cards grouped by job."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpusat_tui.commands.export_metrics import ExportState
from gpusat_tui.model import Assessment, CardReading, Frame, JobContext
from gpusat_tui.sources.fleet_view.fleet_answers import (
    fleet_jobs,
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


class CountedCards:
    """The card-to-job series of a fleet, counting how often the join walks them."""

    def __init__(self, cards: list[tuple[str, str, str]]) -> None:
        self.cards = cards
        self.walks = 0

    def __iter__(self) -> Iterator[tuple[str, str, str]]:
        self.walks += 1
        return iter(self.cards)

    def __len__(self) -> int:
        return len(self.cards)

    def __getitem__(self, i: int) -> tuple[str, str, str]:
        return self.cards[i]


def test_many_jobs_join_their_cards_in_one_walk() -> None:
    # 400 hosts x 8 cards: a job of 2 cards on each host, and 100 jobs spanning 4 hosts.
    infos: dict[tuple[str, str], JobContext] = {}
    cards = []
    for h in range(400):
        host = f"gpu-{h:04d}"
        for j in range(4):
            local = f"plain:{h}-{j}"
            infos[(host, local)] = JobContext(scheduler="plain", job_id=f"{h}-{j}", host=host,
                                              source="exporter")
            cards += [(host, f"nvidia:{2 * j}", local), (host, f"nvidia:{2 * j + 1}", local)]
        wide = f"slurm:{h // 4}"
        infos[(host, wide)] = JobContext(scheduler="slurm", job_id=str(h // 4), host=host,
                                         source="exporter")
        cards.append((host, "nvidia:7", wide))
    counted = CountedCards(cards)
    jobs = {job.key: job for job in fleet_jobs(infos, counted)}
    assert counted.walks == 1  # indexed once, not once per job (quadratic at a fleet's size)
    assert len(jobs) == 400 * 4 + 100
    assert jobs["plain:17-3"].card_ids == ["gpu-0017/nvidia:6", "gpu-0017/nvidia:7"]
    wide_job = jobs["slurm:4"]
    assert wide_job.host == "gpu-0016,gpu-0017,gpu-0018,gpu-0019"
    assert wide_job.card_ids == [f"gpu-{h:04d}/nvidia:7" for h in range(16, 20)]
