"""Verdicts that stand on the probe's measurements, on hand-built windows.

The real probe's figures are tested in the job tests; here each rule meets the figure it turns
on, with the card figures held fixed so that only the measurement can change the verdict.
"""

from __future__ import annotations

import dataclasses

import pytest

from gpusat_tui.analysis.facts import frame_facts
from gpusat_tui.analysis.probe_reading.measured import RUN_ADVICE
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import PreparedWindow, judge
from gpusat_tui.model import CardReading, Frame, ProbeAlloc, ProbeSample, ProcessSample

GIB = 2**30


def card(index: int = 0, util: float = 95.0, power: float = 300.0,
         mem: float = 50000.0) -> CardReading:
    return CardReading(vendor="nvidia", index=index, util_pct=util, power_w=power,
                       power_cap_w=400.0, mem_used_mib=mem, mem_total_mib=80000.0)


def probe(wait_pct: float, i: int, pid: int = 100, rank: int | None = None,
          card_id: str = "nvidia:0", alloc: ProbeAlloc | None = None, tie: str = "device",
          **kw: object) -> ProbeSample:
    """Publication ``i`` of a probe waiting ``wait_pct`` of every second."""
    return ProbeSample(
        pid=pid, rank=rank, world_size=2 if rank is not None else None, card_id=card_id,
        tie=tie, data_wait_pct=wait_pct, step_ms=180.0, batches_per_s=5.0,
        samples_per_s=1240.0, batches=5 * (i + 1), steps=5 * (i + 1),
        data_wait_s=wait_pct / 100 * i, elapsed_s=float(i), alloc=alloc, age_s=0.3, **kw,
    )


def window(cards: list[CardReading], probes: list[list[ProbeSample]] | None = None,
           processes: list[ProcessSample] | None = None, n: int = 6) -> list[Frame]:
    return [
        Frame(t=float(i), seq=i, cards=cards, probes=probes[i] if probes else [],
              processes=processes or [])
        for i in range(n)
    ]


def test_a_loop_waiting_on_data_is_starving_whatever_util_says() -> None:
    frames = window([card()], [[probe(43.0, i)] for i in range(6)])
    v = judge(frames).cards["nvidia:0"]
    assert (v.kind, v.cause) == ("starving", "input-bound")
    assert v.why[0].startswith(
        "data wait 43 % over the last 5 s, measured in the trainer (PID 100)")
    assert "step 180 ms · 1,240 samples/s" in v.why[0]
    assert any("num_workers=0" in w for w in v.why)  # no workers seen: loading in the loop


def test_the_cause_comes_from_the_workers() -> None:
    pegged = [ProcessSample(pid=100, role="trainer", name="python", cpu_pct=30.0,
                            card_ids=["nvidia:0"])] + [
        ProcessSample(pid=101 + k, role="dataloader_worker", name="pt_data_worker",
                      cpu_pct=99.0, trainer_pid=100, card_ids=["nvidia:0"]) for k in range(2)]
    frames = window([card()], [[probe(43.0, i)] for i in range(6)], pegged)
    assert judge(frames).cards["nvidia:0"].cause == "input-bound"
    blocked = [p.model_copy(update={"state": "disk-sleep", "cpu_pct": 10.0}) for p in pegged]
    frames = window([card()], [[probe(43.0, i)] for i in range(6)], blocked)
    assert judge(frames).cards["nvidia:0"].cause == "io-bound"


def test_the_same_card_with_a_low_wait_is_saturated_and_says_so() -> None:
    v = judge(window([card()], [[probe(2.0, i)] for i in range(6)])).cards["nvidia:0"]
    assert v.kind == "saturated"
    assert "the wait is low: not waiting on data" in v.why[0]


def test_low_util_with_a_low_wait_is_not_input_bound() -> None:
    slow = card(util=40.0, power=120.0)
    workers = [ProcessSample(pid=101 + k, role="dataloader_worker", name="pt_data_worker",
                             cpu_pct=99.0, trainer_pid=100) for k in range(2)]
    trainer = ProcessSample(pid=100, role="trainer", name="python", cpu_pct=100.0)
    # From outside alone the pegged workers say input-bound ...
    assert judge(window([slow], None, [trainer, *workers])).cards["nvidia:0"].cause == (
        "input-bound")
    # ... but the loop does not wait on data: its own thread is what holds the card back.
    v = judge(window([slow], [[probe(1.0, i)] for i in range(6)], [trainer, *workers]))
    assert (v.cards["nvidia:0"].kind, v.cards["nvidia:0"].cause) == ("starving", "host-bound")
    calm = trainer.model_copy(update={"cpu_pct": 20.0})
    v = judge(window([slow], [[probe(1.0, i)] for i in range(6)], [calm, *workers]))
    assert v.cards["nvidia:0"].cause == "unknown"
    assert "synchronisation" in " ".join(v.cards["nvidia:0"].why)


def test_a_moderate_wait_is_quoted_and_keeps_the_outside_cause() -> None:
    slow = card(util=40.0, power=120.0)
    v = judge(window([slow], [[probe(12.0, i)] for i in range(6)])).cards["nvidia:0"]
    assert v.kind == "starving" and "some waiting for batches" in v.why[0]
    assert "input-bound" not in v.why[0]


def test_fragmenting_is_measured_from_the_allocator() -> None:
    quiet = card(util=5.0, power=90.0, mem=76000.0)
    churn = [[probe(0.0, i, alloc=ProbeAlloc(allocated_bytes=20 * GIB, reserved_bytes=70 * GIB,
                                              inactive_split_bytes=(8 + i) * GIB,
                                              alloc_retries=3 * i, ooms=0))] for i in range(6)]
    v = judge(window([quiet], churn)).cards["nvidia:0"]
    assert v.kind == "fragmenting"
    assert v.why[0] == ("allocator measured in the trainer (PID 100): 20.0 GiB allocated of "
                        "70.0 GiB reserved (3.5x)")
    assert "15 allocation retries in the window" in v.why[1]
    # The VRAM swing that the heuristic reads as churn, with a healthy allocator: not churn.
    swing = [card(util=2.0, power=90.0, mem=m) for m in (74000.0, 78000.0)] * 3
    healthy = [[probe(0.0, i, alloc=ProbeAlloc(allocated_bytes=70 * GIB,
                                                reserved_bytes=72 * GIB,
                                                inactive_split_bytes=GIB, alloc_retries=0,
                                                ooms=0))] for i in range(6)]
    frames = [Frame(t=float(i), seq=i, cards=[swing[i]]) for i in range(6)]
    assert judge(frames).cards["nvidia:0"].kind == "fragmenting"  # heuristic, without probe
    with_probe = [f.model_copy(update={"probes": healthy[i]}) for i, f in enumerate(frames)]
    assert judge(with_probe).cards["nvidia:0"].kind != "fragmenting"


def test_the_rank_waiting_on_data_is_the_straggler() -> None:
    cards = [card(0), card(1)]  # even utilisation: outside figures see no imbalance
    probes = [[probe(3.0, i, pid=100, rank=0, card_id="nvidia:0"),
               probe(45.0, i, pid=101, rank=1, card_id="nvidia:1")] for i in range(6)]
    a = judge(window(cards, None))
    assert a.job.kind != "imbalanced"
    a = judge(window(cards, probes))
    assert (a.job.kind, a.job.cause) == ("imbalanced", "straggler")
    assert a.job.why[0].startswith("rank 1 (PID 101, nvidia:1) waits 45 % of the window on "
                                   "its DataLoader while rank 0 waits 3 %")
    # Through the tracker too (the dashboard's and check's path).
    tracker = VerdictTracker()
    for f in window(cards, probes):
        assessment = tracker.push(f)
    assert assessment.job.kind == "imbalanced"


def test_the_straggler_and_the_ranks_waiting_for_it_are_badged_by_the_probe() -> None:
    """Even utilisation (the waiting rank's all-reduce reads busy): without the probe both cards
    look saturated; with it the straggler's card is imbalanced and its peer's starving
    (collective-wait), each saying why with the measured figures."""
    cards = [card(0), card(1)]
    probes = [[probe(3.0, i, pid=100, rank=0, card_id="nvidia:0"),
               probe(45.0, i, pid=101, rank=1, card_id="nvidia:1")] for i in range(12)]
    plain = judge(window(cards, None)).cards
    assert plain["nvidia:0"].kind == "saturated"
    a = judge(window(cards, probes[:6]))
    late, peer = a.cards["nvidia:1"], a.cards["nvidia:0"]
    assert (late.kind, late.cause) == ("imbalanced", "straggler")
    assert late.why[0].startswith("rank 1 (PID 101, nvidia:1) waits 45 %")
    assert late.why[1].startswith("on its own figures: starving")
    assert any("rank 1" in line for line in late.advice)
    assert (peer.kind, peer.cause) == ("starving", "collective-wait")
    assert peer.why[0] == (
        "waits in the collective for rank 1 (nvidia:1): rank 1 waits 45 % of the window on "
        "its DataLoader, rank 0 on this card 3 %; GPU-Util counts the time spent waiting in "
        "the all-reduce as busy"
    )
    assert peer.why[1] == "on its own figures: saturated"
    assert peer.advice[0].startswith("Nothing to tune on this card: it waits for rank 1")
    # The tracker (the dashboard's and check's path) shows the same badges.
    tracker = VerdictTracker()
    for f in window(cards, probes, n=12):
        assessment = tracker.push(f)
    assert assessment.cards["nvidia:0"].cause == "collective-wait"
    assert assessment.cards["nvidia:1"].kind == "imbalanced"


def test_badges_stay_where_the_card_of_a_rank_is_a_guess() -> None:
    """A rank tied to its card by local rank order only: the job is still imbalanced, but no
    card is re-badged (it could be the wrong one)."""
    cards = [card(0), card(1)]
    probes = [[probe(3.0, i, pid=100, rank=0, card_id="nvidia:0"),
               probe(45.0, i, pid=101, rank=1, card_id="nvidia:1", tie="guess")]
              for i in range(6)]
    a = judge(window(cards, probes))
    assert (a.job.kind, a.job.cause) == ("imbalanced", "straggler")
    assert a.cards["nvidia:0"].cause != "collective-wait"
    assert a.cards["nvidia:1"].kind != "imbalanced"


def test_a_step_time_straggler_does_not_make_its_peers_wait() -> None:
    """Out of line by step time alone (ranks not in lock-step): the job says so, the peers'
    badges stay their own."""
    cards = [card(0), card(1)]
    probes = [[probe(3.0, i, pid=100, rank=0, card_id="nvidia:0"),
               probe(3.0, i, pid=101, rank=1, card_id="nvidia:1").model_copy(
                   update={"step_ms": 900.0})]
              for i in range(6)]
    a = judge(window(cards, probes))
    assert (a.job.kind, a.job.cause) == ("imbalanced", "straggler")
    assert "steps in 900 ms" in a.job.why[0]
    assert a.cards["nvidia:0"].cause != "collective-wait"
    assert a.cards["nvidia:1"].kind != "imbalanced"


def test_the_straggler_rank_also_lagging_in_utilisation_quotes_both() -> None:
    # The measured straggler and an uneven utilisation at once: the probe names the rank,
    # the utilisation lag is quoted after it (this raised AttributeError before).
    cards = [card(0, util=95.0, power=350.0), card(1, util=30.0, power=120.0)]
    probes = [[probe(3.0, i, pid=100, rank=0, card_id="nvidia:0"),
               probe(45.0, i, pid=101, rank=1, card_id="nvidia:1")] for i in range(12)]
    job = judge(window(cards, probes, n=12)).job
    assert (job.kind, job.cause) == ("imbalanced", "straggler")
    assert job.why[0].startswith("rank 1 (PID 101, nvidia:1) waits 45 %")
    assert job.why[1] == ("nvidia:1 at 30 % while nvidia:0 run at 95 % (GPU-Util levels, "
                          "the mean of the middle half)")


def test_a_probe_that_stopped_publishing_is_not_evidence() -> None:
    stale = [[probe(60.0, 0).model_copy(update={"age_s": 30.0})] for _ in range(6)]
    assert judge(window([card()], stale)).cards["nvidia:0"].kind == "saturated"


def test_without_a_probe_an_unsure_verdict_says_how_to_measure() -> None:
    v = judge(window([card(util=40.0, power=120.0)])).cards["nvidia:0"]
    assert (v.kind, v.cause) == ("starving", "unknown") and RUN_ADVICE in v.advice
    v = judge(window([card(util=40.0, power=120.0)], [[probe(43.0, i)] for i in range(6)]))
    assert RUN_ADVICE not in v.cards["nvidia:0"].advice


@pytest.mark.parametrize("wait", [19.0, 20.0])
def test_the_starving_line_is_a_threshold(wait: float) -> None:
    v = judge(window([card()], [[probe(wait, i)] for i in range(6)])).cards["nvidia:0"]
    assert v.kind == ("starving" if wait >= 20.0 else "saturated")
    lower = dataclasses.replace(DEFAULT_THRESHOLDS, data_wait_starving_pct=10.0)
    assert isinstance(lower, Thresholds)
    v = judge(window([card()], [[probe(wait, i)] for i in range(6)]), lower).cards["nvidia:0"]
    assert v.kind == "starving"


def test_a_card_judged_alone_gets_the_badge_the_probes_give_it() -> None:
    # The tracker judges a card's evidence window one card at a time (`PreparedWindow`): the
    # straggler the probes name re-badges it there as in the whole judgement.
    cards = [card(0), card(1), card(2)]
    probes = [[probe(3.0, i, pid=100, rank=0, card_id="nvidia:0"),
               probe(45.0, i, pid=101, rank=1, card_id="nvidia:1")] for i in range(8)]
    frames = window(cards, probes, n=8)
    facts = [frame_facts(f) for f in frames]
    whole = judge(frames).cards
    assert (whole["nvidia:1"].kind, whole["nvidia:0"].cause) == ("imbalanced", "collective-wait")
    alone = PreparedWindow(frames, facts)
    for cid, verdict in whole.items():
        assert alone.card(cid) == verdict, cid


def test_a_lag_over_cards_without_figures_in_this_judgement_still_gives_the_straggler() -> None:
    """The lag is found over the window's history; its group may name cards that have no
    figures in the judgement at hand (gone from the newest polls, or an earlier sub-window the
    badges ask about). The measured straggler then quotes the lag with the lag's own label
    (this raised KeyError in the tracker, found by the random-stream reference test)."""
    from gpusat_tui.analysis.probe_reading.probe_ranks import Rank
    from gpusat_tui.analysis.verdicts.imbalance import Lag
    from gpusat_tui.analysis.verdicts.job import judge_job
    from gpusat_tui.model import Verdict

    def rank(pid: int, r: int, wait: float) -> Rank:
        return Rank(pid=pid, rank=r, card_id=f"nvidia:{r}", tie="device", wait_pct=wait,
                    step_ms=180.0, samples_per_s=100.0, batches_per_s=5.0, span_s=10.0,
                    publications=10, first_alloc=None, last_alloc=None, world_size=2)

    lag = Lag(group=["nvidia:0", "nvidia:1"], stragglers=["nvidia:1"], others=["nvidia:0"],
              pattern="lag", basis="util", levels={"nvidia:0": 95.0, "nvidia:1": 30.0},
              waiters=[], grouping="trainer", seconds=10.0, stretches=3, polls=10,
              label="GPU-Util")
    saturated = Verdict(kind="saturated", why=["busy"], confidence=0.8)
    job, _ = judge_job({"nvidia:0": saturated, "nvidia:1": saturated}, {}, lambda _: lag,
                       [rank(100, 0, 3.0), rank(101, 1, 45.0)])
    assert (job.kind, job.cause) == ("imbalanced", "straggler")
    assert job.why[1] == ("nvidia:1 at 30 % while nvidia:0 run at 95 % (GPU-Util levels, "
                          "the mean of the middle half)")
