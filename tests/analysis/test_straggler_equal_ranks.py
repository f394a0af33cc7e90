"""Ranks that are all input-bound are not imbalanced, however the slack splits.

Two ranks with equally slow input, stepping in lock-step: each step's slack splits between the
data wait and the all-reduce wait at random, so one window reads 60 % and 35 %, the next the
other way round. One run in three used to name one of them the straggler.
"""

from __future__ import annotations

import pytest

from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CardReading, Frame, ProbeSample


def card(index: int) -> CardReading:
    return CardReading(vendor="nvidia", index=index, util_pct=60.0, power_w=200.0,
                       power_cap_w=400.0, mem_used_mib=30000.0, mem_total_mib=80000.0)


def rank_probe(rank: int, wait_pct: float, i: int) -> ProbeSample:
    # Lock-step: the same steps and step time on both ranks; only the data wait differs.
    return ProbeSample(
        pid=100 + rank, rank=rank, world_size=2, card_id=f"nvidia:{rank}", tie="device",
        data_wait_s=wait_pct / 100 * i, elapsed_s=float(i), batches=4 * (i + 1),
        steps=4 * (i + 1), last_batch_s=float(i), last_step_s=float(i), batch_size=8,
        age_s=0.2,
    )


def frames(wait0: float, wait1: float) -> list[Frame]:
    return [Frame(t=float(i), seq=i, cards=[card(0), card(1)],
                  probes=[rank_probe(0, wait0, i), rank_probe(1, wait1, i)])
            for i in range(6)]


@pytest.mark.parametrize(("wait0", "wait1"), [(60.0, 35.0), (35.0, 60.0), (78.0, 45.0),
                                              (25.0, 75.0), (50.0, 50.0)])
def test_equal_input_bound_ranks_are_not_imbalanced(wait0: float, wait1: float) -> None:
    a = judge(frames(wait0, wait1))
    assert a.job is None or a.job.kind != "imbalanced", a.job
    for card_id in ("nvidia:0", "nvidia:1"):
        verdict = a.cards[card_id]
        assert (verdict.kind, verdict.cause) == ("starving", "input-bound"), verdict
        assert verdict.why[0].startswith("data wait"), verdict.why


def test_a_rank_alone_in_waiting_on_data_is_still_the_straggler() -> None:
    a = judge(frames(3.0, 76.0))
    assert a.job is not None and (a.job.kind, a.job.cause) == ("imbalanced", "straggler")
    assert a.job.why[0].startswith("rank 1 (PID 101, nvidia:1) waits 76 %")
