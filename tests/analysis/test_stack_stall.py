"""Stalls told by the trainer's sampled stack, on hand-built windows: a stack that stands still
with no batch is a stall whatever other threads do (and, waiting in a collective, whatever the
card's utilisation says); a stack that moves, a batch, or a short stillness is not."""

from __future__ import annotations

from gpusat_tui.analysis.probe_reading.probe_facts import ProbeFacts, probe_facts
from gpusat_tui.analysis.probe_reading.probe_words import frozen_lines, ranks_words
from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CardReading, CodeLine, Frame, ProbeSample, ProcessSample

#: 40 polls a second apart: the window is 39 s, past the stall time (20 s).
N = 40


def card(util: float = 0.0) -> CardReading:
    return CardReading(vendor="nvidia", index=0, util_pct=util, power_w=80.0,
                       power_cap_w=400.0, mem_used_mib=50000.0, mem_total_mib=80000.0)


def probe(i: int, *, still: float | None, phase: str = "other", pid: int = 100,
          rank: int | None = None, where: str | None = None, line: int = 88,
          last_batch: float = 0.0, sig: str = "0badc0de") -> ProbeSample:
    """Publication ``i`` (at ``100 + i`` s) of a trainer whose last batch came at
    ``last_batch`` and whose stack has stood still ``still`` seconds."""
    return ProbeSample(
        pid=pid, rank=rank, world_size=2 if rank is not None else None, card_id="nvidia:0",
        tie="device", data_wait_pct=0.0, step_ms=180.0, batches_per_s=5.0, batches=50,
        steps=50, data_wait_s=1.0, elapsed_s=100.0 + i, last_batch_s=last_batch,
        age_s=0.3, stack_hz=20.0, stack_samples=2000 + 20 * i, stack_still_s=still,
        stack_phase=phase, stack_where=where, stack_sig=sig,
        stack_line=CodeLine(file="/home/u/train.py", line=line, function="main"),
    )


def trainer(pid: int = 100, syscalls: float = 10.0, cpu: float = 0.5) -> ProcessSample:
    """A trainer at low CPU whose heartbeat thread makes ``syscalls`` read/write calls/s."""
    return ProcessSample(pid=pid, role="trainer", name="python", cpu_pct=cpu,
                         syscalls_per_s=syscalls, rchar_per_s=0.0, wchar_per_s=400.0,
                         ctx_switches_per_s=2.0)


def frames(util: float, probes: list[list[ProbeSample]],
           procs: list[ProcessSample]) -> list[Frame]:
    return [Frame(t=1000.0 + i, seq=i, cards=[card(util)], probes=probes[i], processes=procs)
            for i in range(N)]


def test_a_still_stack_beside_a_heartbeat_is_stalled_with_its_place() -> None:
    window = frames(0.0, [[probe(i, still=30.0 + i)] for i in range(N)], [trainer()])
    v = judge(window).cards["nvidia:0"]
    assert v.kind == "stalled", v
    assert "the training thread's stack has not changed" in v.why[0]
    assert "the trainer (PID 100) has waited 69 s at train.py:88" in v.why
    assert any("heartbeat" in w for w in v.why), v.why


def test_the_same_counters_with_a_moving_stack_are_not_a_stall() -> None:
    for still in (None, 0.5):  # an older probe, and a stack that moves
        window = frames(0.0, [[probe(i, still=still)] for i in range(N)], [trainer()])
        assert judge(window).cards["nvidia:0"].kind != "stalled"


def test_a_batch_after_the_stack_stood_still_is_another_thread_training() -> None:
    window = frames(0.0, [[probe(i, still=30.0 + i, last_batch=99.0 + i)] for i in range(N)],
                    [trainer()])
    assert judge(window).cards["nvidia:0"].kind != "stalled"


def test_a_collective_that_spins_the_card_is_stalled_and_other_work_is_not() -> None:
    spinning = frames(100.0, [[probe(i, still=30.0 + i, phase="collective",
                                     where="torch.distributed.all_reduce")]
                              for i in range(N)], [trainer(cpu=100.0)])
    v = judge(spinning).cards["nvidia:0"]
    assert v.kind == "stalled", v
    assert "a wait that spins, not work" in v.why[0]
    assert "the trainer (PID 100) has waited 69 s in torch.distributed.all_reduce " \
           "(train.py:88)" in v.why
    computing = frames(100.0, [[probe(i, still=30.0 + i, phase="forward")] for i in range(N)],
                       [trainer(cpu=100.0)])
    assert judge(computing).cards["nvidia:0"].kind != "stalled"


def test_the_rank_whose_stack_differs_is_named() -> None:
    def rank(r: int, phase: str, where: str | None, line: int, sig: str) -> ProbeFacts:
        sample = probe(0, still=42.0, phase=phase, pid=100 + r, rank=r, where=where,
                       line=line, sig=sig)
        [facts] = probe_facts(Frame(t=0.0, seq=0, probes=[sample]))
        return facts

    collective = [rank(r, "collective", "torch.distributed.all_reduce", 88, "aaaaaaaa")
                  for r in range(7)]
    loader = rank(7, "data", "torch.utils.__next__", 60, "bbbbbbbb")
    lines = frozen_lines([*collective, loader])
    assert lines[0] == "rank 0 has waited 42 s in torch.distributed.all_reduce (train.py:88)"
    assert lines[-1] == ("ranks 0–6 wait in a collective; rank 7 is elsewhere (in "
                         "torch.utils.__next__ (train.py:60)): the likely culprit")
    # No collective: the one stack unlike the others'
    odd = [rank(r, "other", None, 50, "cccccccc") for r in range(3)] + [
        rank(3, "other", None, 70, "dddddddd")]
    assert frozen_lines(odd)[-1] == ("rank 3's stack differs from the other ranks' "
                                     "(at train.py:70): the likely culprit")
    assert ranks_words([0, 2, 5]) == "ranks 0, 2, 5"


def test_why_quotes_where_the_step_goes_with_its_hottest_line() -> None:
    """A host-bound step: the verdict's why quotes its phases over the window and its
    hottest user line, from the sampler's cumulative counts."""
    def at(i: int) -> ProbeSample:
        return probe(i, still=0.1).model_copy(update={
            "stack_samples": 100 * (i + 1), "batches": 50 + 5 * i, "last_batch_s": 100.0 + i,
            "phase_samples": {"data": 62 * (i + 1), "forward": 20 * (i + 1),
                              "other": 18 * (i + 1)},
            "user_lines": (CodeLine(file="/home/u/train.py", line=40, function="collate_fn",
                                    samples=58 * (i + 1)),),
        })
    window = frames(90.0, [[at(i)] for i in range(N)], [trainer(cpu=100.0)])
    v = judge(window).cards["nvidia:0"]
    assert ("step 180 ms: data 62 % · forward 20 % · other 18 %; hottest line train.py:40 "
            "collate_fn 58 % (the trainer's sampled stack)") in v.why, v.why
