"""Advice on DataLoader workers counts every trainer on the host, not only the card's: it must
agree with the process panel (``2 trainers · 8 workers``) beside it."""

from __future__ import annotations

from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CardReading, Frame, HostSample, ProcessSample

T0 = 1_700_000_000.0
#: Utilisation swinging between bursts and idle: a card waiting on its input.
SWING = [95.0, 2.0, 3.0, 1.0, 97.0, 0.0, 4.0, 2.0, 96.0, 1.0]


def card(index: int, util: float) -> CardReading:
    return CardReading(vendor="nvidia", index=index, name="H100", util_pct=util,
                       power_w=140.0, power_cap_w=400.0, mem_used_mib=49152.0,
                       mem_total_mib=81920.0)


def job(trainer_pid: int, card_ids: list[str]) -> list[ProcessSample]:
    """A trainer and its 4 pegged DataLoader workers."""
    return [ProcessSample(pid=trainer_pid, role="trainer", name="python", cpu_pct=30.0,
                          state="running", card_ids=card_ids)] + [
        ProcessSample(pid=trainer_pid + 1 + i, role="dataloader_worker",
                      name="pt_data_worker", cpu_pct=97.0, state="running",
                      trainer_pid=trainer_pid)
        for i in range(4)
    ]


def frames(procs: list[ProcessSample], host_cpu: float = 52.0) -> list[Frame]:
    host = HostSample(cpu_pct=host_cpu, iowait_pct=1.0, cpu_count=16)
    return [Frame(t=T0 + i, seq=i, cards=[card(0, u), card(1, u)], processes=procs, host=host)
            for i, u in enumerate(SWING)]


def test_two_jobs_on_one_host_share_its_free_cores() -> None:
    # One trainer per card: each card's advice counts the other job's 5 processes too.
    result = judge(frames(job(100, ["nvidia:0"]) + job(200, ["nvidia:1"])))
    for card_id in ("nvidia:0", "nvidia:1"):
        verdict = result.cards[card_id]
        assert (verdict.kind, verdict.cause) == ("starving", "input-bound")
        assert verdict.advice[0] == (
            "Raise DataLoader num_workers from 4 towards 7: 16 cores, 10 of them busy with "
            "the 2 trainers on this host and their 8 workers, about 6 free (host CPU 52 %)")


def test_one_job_of_two_trainers_is_advised_per_trainer() -> None:
    # No card ids: both trainers serve both cards (one job). num_workers is each
    # DataLoader's, so the advice speaks of 4 per trainer, not of the 8 they have together.
    verdict = judge(frames(job(100, []) + job(200, []))).job
    assert verdict.cause == "input-bound"
    assert verdict.advice[0] == (
        "Raise DataLoader num_workers from 4 towards 7 in each of the 2 trainers: 16 cores, "
        "10 of them busy with the 2 trainers on this host and their 8 workers, about 6 free "
        "(host CPU 52 %)")


def test_the_host_cpu_counts_where_it_says_more_cores_are_busy() -> None:
    # 75 % of 16 cores is 12 busy (work the process scan does not see): 4 free, 2 each.
    verdict = judge(frames(job(100, ["nvidia:0"]) + job(200, ["nvidia:1"]), 75.0))
    assert verdict.cards["nvidia:0"].advice[0].startswith(
        "Raise DataLoader num_workers from 4 towards 6: 16 cores, 12 of them busy")


def test_too_few_free_cores_for_every_trainer_says_so() -> None:
    # 3 jobs: 15 processes on 16 cores leave 1, which no trainer can share.
    procs = job(100, ["nvidia:0"]) + job(200, ["nvidia:1"]) + job(300, ["nvidia:1"])
    advice = judge(frames(procs)).cards["nvidia:0"].advice[0]
    assert advice == (
        "16 cores, 15 of them busy with the 3 trainers on this host and their 12 workers, "
        "about 1 free (host CPU 52 %): too few for more workers in each trainer; make each "
        "sample cheaper")
