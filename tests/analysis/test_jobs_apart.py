"""Cards are compared only inside one job (`Frame.jobs`): pure windows."""

from __future__ import annotations

from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CardReading, Frame, JobContext, ProbeSample, ProcessSample
from tests.scenarios import T0


def _card(index: int, util: float, power: float) -> CardReading:
    return CardReading(vendor="nvidia", index=index, util_pct=util, mem_used_mib=40000.0,
                       mem_total_mib=80000.0, power_w=power, power_cap_w=400.0)


def _trainer(pid: int, cards: list[str], **extra: object) -> ProcessSample:
    return ProcessSample(pid=pid, role="trainer", name="python", cpu_pct=30.0, state="running",
                         card_ids=cards, **extra)


def _frames(procs: list[ProcessSample], jobs: list[JobContext], n: int = 20) -> list[Frame]:
    return [Frame(t=T0 + i, seq=i, cards=[_card(0, 92.0, 340.0), _card(1, 28.0, 120.0)],
                  processes=procs, jobs=jobs) for i in range(n)]


def test_two_jobs_on_two_cards_are_not_compared() -> None:
    procs = [_trainer(100, ["nvidia:0"]), _trainer(200, ["nvidia:1"])]
    jobs = [JobContext(job_id="100", pids=[100], card_ids=["nvidia:0"]),
            JobContext(job_id="200", pids=[200], card_ids=["nvidia:1"])]
    result = judge(_frames(procs, jobs))
    assert result.job.kind != "imbalanced"
    assert "imbalanced" not in {v.kind for v in result.cards.values()}
    # The same cards without jobs told apart: one job, and card 1 its straggler (as before).
    old = judge(_frames(procs, []))
    assert old.job.kind == "imbalanced"


def test_one_job_on_two_cards_is_still_compared() -> None:
    procs = [_trainer(100, ["nvidia:0"], world_size=2, rank=0),
             _trainer(101, ["nvidia:1"], world_size=2, rank=1)]
    jobs = [JobContext(job_id="localhost:29500", pids=[100, 101],
                       card_ids=["nvidia:0", "nvidia:1"])]
    result = judge(_frames(procs, jobs))
    assert (result.job.kind, result.job.cause) == ("imbalanced", "straggler")
    assert result.cards["nvidia:1"].kind == "imbalanced"


def test_a_shared_card_names_its_jobs_and_is_compared_with_neither() -> None:
    procs = [_trainer(100, ["nvidia:0"]), _trainer(200, ["nvidia:0", "nvidia:1"])]
    jobs = [JobContext(job_id="100", pids=[100], card_ids=["nvidia:0"]),
            JobContext(job_id="200", pids=[200], card_ids=["nvidia:0", "nvidia:1"])]
    result = judge(_frames(procs, jobs))
    assert result.cards["nvidia:0"].why[0].startswith("shared by 2 jobs: plain:100, plain:200")
    assert not result.cards["nvidia:1"].why[0].startswith("shared")
    assert result.job.kind != "imbalanced"


def test_two_jobs_with_no_card_named_take_no_evidence_from_each_other() -> None:
    # A tool that lists no PID: with two jobs on the host, neither's processes are evidence
    # for a card (either could drive it), so the cause is unknown, not one job's figures.
    procs = [_trainer(100, []),
             ProcessSample(pid=101, role="dataloader_worker", name="pt_data_worker",
                           cpu_pct=99.0, state="running", trainer_pid=100),
             _trainer(200, [])]
    jobs = [JobContext(job_id="100", pids=[100]), JobContext(job_id="200", pids=[200])]
    frames = [Frame(t=T0 + i, seq=i, cards=[_card(0, u, 90.0)], processes=procs, jobs=jobs)
              for i, u in enumerate([95.0, 2.0, 3.0, 1.0, 97.0, 0.0, 4.0, 2.0, 96.0, 1.0])]
    verdict = judge(frames).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "unknown")
    one_job = [Frame(t=f.t, seq=f.seq, cards=f.cards, processes=procs[:2], jobs=jobs[:1])
               for f in frames]
    assert judge(one_job).cards["nvidia:0"].cause == "input-bound"


def _probe(pid: int, card: int, wait_pct: float, i: int, ranked: bool) -> ProbeSample:
    return ProbeSample(
        pid=pid, rank=card if ranked else None, world_size=2 if ranked else None,
        card_id=f"nvidia:{card}", tie="device", data_wait_s=wait_pct / 100 * i,
        elapsed_s=float(i), batches=4 * (i + 1), steps=4 * (i + 1), last_batch_s=float(i),
        last_step_s=float(i), batch_size=8, age_s=0.2,
    )


def _probed(ranked: bool, jobs: list[JobContext]) -> list[Frame]:
    cards = [CardReading(vendor="nvidia", index=i, util_pct=60.0, power_w=200.0,
                         power_cap_w=400.0, mem_used_mib=30000.0, mem_total_mib=80000.0)
             for i in (0, 1)]
    return [Frame(t=float(i), seq=i, cards=cards, jobs=jobs,
                  probes=[_probe(100, 0, 3.0, i, ranked), _probe(200, 1, 76.0, i, ranked)])
            for i in range(6)]


def test_probed_trainers_without_ranks_are_no_straggler_of_each_other() -> None:
    # Two single-process jobs, one waiting on its data 76 % of the time, the other 3 %:
    # nobody waits for anybody in a collective.
    result = judge(_probed(ranked=False, jobs=[]))
    assert result.job.kind != "imbalanced", result.job
    assert result.cards["nvidia:1"].cause == "input-bound"
    assert not any("waits in the collective" in w or "straggler" in w
                   for v in result.cards.values() for w in v.why)
    # Ranks of one job (world size 2): the waiting rank is the straggler, as before.
    assert judge(_probed(ranked=True, jobs=[])).job.kind == "imbalanced"


def test_ranks_of_two_jobs_are_not_compared() -> None:
    jobs = [JobContext(job_id="a:1", pids=[100], card_ids=["nvidia:0"]),
            JobContext(job_id="b:2", pids=[200], card_ids=["nvidia:1"])]
    result = judge(_probed(ranked=True, jobs=jobs))
    assert result.job.kind != "imbalanced", result.job
