"""The verdict engine on labelled scenarios, tick by tick, and on hand-built edge cases."""

from __future__ import annotations

import dataclasses
import math

import pytest

from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from gpusat_tui.analysis.verdicts.cause_finding import STARVING_CAUSES
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.analysis.window import (
    card_series,
    interval_s,
    num,
    power_frac_series,
    reversals,
    series_stats,
    stats,
)
from gpusat_tui.model import Assessment, CardReading, Frame, HostSample, ProcessSample
from tests.scenarios import SCENARIOS, T0, Scenario

# --- helpers -------------------------------------------------------------------------------


def run_tracker(scenario: Scenario, **kwargs: object) -> tuple[VerdictTracker, list[Assessment]]:
    tracker = VerdictTracker(**kwargs)  # type: ignore[arg-type]
    return tracker, [tracker.push(frame) for frame in scenario.frames()]


def changes(kinds: list[str]) -> list[tuple[int, str]]:
    """(poll index, new kind) for every change of the shown kind, the first one included."""
    out: list[tuple[int, str]] = []
    for i, kind in enumerate(kinds):
        if not out or out[-1][1] != kind:
            out.append((i, kind))
    return out


def card(
    util: float | None = 50.0,
    *,
    index: int = 0,
    vendor: str = "nvidia",
    mem_pct: float | None = 60.0,
    total: float = 81920.0,
    power_frac: float | None = 0.5,
    cap: float | None = 400.0,
    stale_s: float | None = None,
) -> CardReading:
    return CardReading(
        vendor=vendor,  # type: ignore[arg-type]
        index=index,
        util_pct=util,
        mem_used_mib=None if mem_pct is None else total * mem_pct / 100,
        mem_total_mib=total,
        power_w=None if power_frac is None or cap is None else cap * power_frac,
        power_cap_w=cap,
        stale_s=stale_s,
    )


def frames_of(cards_per_tick: list[list[CardReading]], **frame_kwargs: object) -> list[Frame]:
    return [
        Frame(t=T0 + i, seq=i, cards=cards, **frame_kwargs)  # type: ignore[arg-type]
        for i, cards in enumerate(cards_per_tick)
    ]


def worker(pid: int, cpu: float | None, state: str = "running", trainer: int = 100,
           cards: list[str] | None = None) -> ProcessSample:
    return ProcessSample(
        pid=pid, role="dataloader_worker", name="pt_data_worker", cpu_pct=cpu, state=state,
        trainer_pid=trainer, card_ids=cards or [],
    )


def trainer(pid: int, cpu: float | None, cards: list[str] | None = None) -> ProcessSample:
    return ProcessSample(
        pid=pid, role="trainer", name="python", cpu_pct=cpu, state="running",
        card_ids=cards or [],
    )


SWING = [95.0, 2.0, 3.0, 1.0, 97.0, 0.0, 4.0, 2.0, 96.0, 1.0]


# --- the scenario table ----------------------------------------------------------------------


def test_table_covers_the_issue_list() -> None:
    required = {
        "saturated_steady": ("saturated", None),
        "saturated_noisy": ("saturated", None),
        "starving_input_bound": ("starving", "input-bound"),
        "starving_io_bound": ("starving", "io-bound"),
        "starving_host_bound": ("starving", "host-bound"),
        "starving_no_process_data": ("starving", "unknown"),
        "fragmenting": ("fragmenting", None),
        "imbalanced_4_cards": ("imbalanced", "straggler"),
        "idle": ("idle", None),
        "step_starving_to_saturated": ("saturated", None),
    }
    for name, (kind, cause) in required.items():
        assert (SCENARIOS[name].expected_kind, SCENARIOS[name].expected_cause) == (kind, cause)
    assert len(SCENARIOS[name].cards(0)) == 1
    assert len(SCENARIOS["imbalanced_4_cards"].cards(0)) == 4


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_through_tracker(name: str) -> None:
    scenario = SCENARIOS[name]
    _tracker, shown = run_tracker(scenario)
    final = shown[-1]
    assert (final.job.kind, final.job.cause) == (scenario.expected_kind, scenario.expected_cause)
    assert final.job.why, "a verdict must say why"
    assert final.job.advice
    for index, expected in scenario.expected_cards.items():
        verdict = final.cards[f"{scenario.vendor}:{index}"]
        assert (verdict.kind, verdict.cause) == (expected.kind, expected.cause)

    # The first polls are unknown (too little data), then the badge settles and flips only
    # across a step change: once, and within 3 polls of it (the change poll included).
    min_samples = DEFAULT_THRESHOLDS.min_samples
    kinds = [a.job.kind for a in shown]
    assert kinds[: min_samples - 1] == ["unknown"] * (min_samples - 1)
    settled = changes(kinds)[1:]
    if scenario.change_at is None:
        assert settled == [(min_samples - 1, scenario.expected_kind)]
    else:
        assert scenario.before is not None
        # A state before the change that is itself unknown (paused: not yet a stall) shows
        # from the start: there is no settling into it, only the flip out of it.
        before_kinds = [] if scenario.before.kind == "unknown" else [scenario.before.kind]
        assert [kind for _, kind in settled] == [*before_kinds, scenario.expected_kind]
        flip = settled[-1][0]
        assert scenario.change_at <= flip <= scenario.change_at + 2
        before = shown[scenario.change_at - 1].job
        assert (before.kind, before.cause) == (scenario.before.kind, scenario.before.cause)
    # Every card's badge is as calm as the job's.
    for card_id in final.cards:
        card_kinds = [a.cards[card_id].kind for a in shown if card_id in a.cards]
        assert len(changes(card_kinds)) - 1 == len(settled)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_robust_to_other_noise(name: str) -> None:
    # Same scenario, other random draws: the verdict must not hang on one lucky seed.
    scenario = dataclasses.replace(SCENARIOS[name], seed=SCENARIOS[name].seed + 1000)
    _, shown = run_tracker(scenario)
    assert (shown[-1].job.kind, shown[-1].job.cause) == (
        scenario.expected_kind, scenario.expected_cause
    )
    settled = changes([a.job.kind for a in shown])[1:]
    unknown_before = scenario.before is not None and scenario.before.kind == "unknown"
    assert len(settled) == (1 if scenario.change_at is None or unknown_before else 2)


@pytest.mark.parametrize(
    "name", sorted(n for n, s in SCENARIOS.items() if s.change_at is None)
)
def test_steady_scenarios_with_plain_judge(name: str) -> None:
    scenario = SCENARIOS[name]
    job = judge(scenario.frames()).job
    assert (job.kind, job.cause) == (scenario.expected_kind, scenario.expected_cause)


def test_scenarios_are_deterministic_and_tool_processes_follow_trainers() -> None:
    s = SCENARIOS["imbalanced_4_cards"]
    assert s.frames(5) == s.frames(5)
    assert s.cards(3) == s.cards(3)
    listed = s.tool_processes(0)
    assert sorted((p.pid, p.card_index) for p in listed) == [
        (5000, 0), (5100, 1), (5200, 2), (5300, 3)
    ]
    assert [p.pid for p in SCENARIOS["starving_no_process_data"].tool_processes(0)] == [4242]
    assert SCENARIOS["idle"].tool_processes(0) == []
    step = SCENARIOS["step_starving_to_saturated"]
    assert step.expected_at(19).cause == "input-bound"
    assert step.expected_at(20).kind == "saturated"
    frames = step.frames(3, t0=100.0, interval=0.5)
    assert [f.t for f in frames] == [100.0, 100.5, 101.0]


# --- specific verdicts ---------------------------------------------------------------------


def test_false_saturation_full_util_at_30_percent_power() -> None:
    # Not saturated; without the job's processes the card's figures alone cannot name why
    # (small kernels, a collective wait and a spinning trainer look alike).
    frames = frames_of([[card(100.0, power_frac=0.30)] for _ in range(10)])
    verdict = judge(frames).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "unknown")
    text = " ".join(verdict.why)
    assert "GPU-Util reads 100 % while power is only 30 % of the 400 W cap" in text
    assert "duty cycle" in text
    assert "GPU-Util steadily high at low power: small kernels, a wait in a collective" in text
    assert any("--pid" in a for a in verdict.advice)  # no process figures were given


def test_false_saturation_with_quiet_processes_is_light_kernels() -> None:
    procs = [trainer(100, 20.0), worker(101, 2.0)]
    frames = frames_of([[card(100.0, power_frac=0.30)] for _ in range(10)], processes=procs)
    verdict = judge(frames).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "light-kernels")


def test_false_saturation_with_pegged_trainer_is_a_spin_not_host_bound() -> None:
    # A card busy all the time is not waiting on the host, whatever the trainer's CPU says:
    # the pegged trainer spins in a synchronise beside small kernels (no distributed job).
    procs = [trainer(100, 99.0), worker(101, 2.0), worker(102, 3.0)]
    frames = frames_of([[card(100.0, power_frac=0.30)] for _ in range(10)], processes=procs)
    verdict = judge(frames).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "light-kernels")
    text = " ".join(verdict.why)
    assert "duty cycle" in text
    assert "trainer at 99 % CPU beside a card busy most of the window" in text


def test_busy_util_at_middling_power_is_saturated_with_the_caveat() -> None:
    verdict = judge(frames_of([[card(98.0, power_frac=0.60)] for _ in range(10)])).job
    assert verdict.kind == "saturated"
    assert "power 60 % of 400 W cap (240 W): below the 70 % full compute usually draws" in (
        " ".join(verdict.why)
    )
    assert verdict.confidence < 0.9


def test_busy_util_without_power_says_it_is_judged_on_util_alone() -> None:
    verdict = judge(frames_of([[card(95.0, power_frac=None, cap=None)] for _ in range(10)])).job
    assert verdict.kind == "saturated"
    assert "no power figure: judged on GPU-Util alone" in " ".join(verdict.why)
    full = judge(frames_of([[card(95.0, power_frac=0.85)] for _ in range(10)])).job
    assert full.kind == "saturated"
    assert verdict.confidence < full.confidence


def test_saturated_why_quotes_the_figures() -> None:
    frames = frames_of([[card(u, power_frac=0.8)] for u in (90, 95, 100, 92, 96)])
    why = judge(frames).job.why
    assert why[0] == "GPU-Util median 95 %, mean 95 % (range 90–100 %) over 5 samples"
    assert why[1] == "power 80 % of 400 W cap (320 W)"
    assert why[2] == "VRAM 60 % used (48.0 GiB of 80.0 GiB), steady"


def test_full_vram_alone_is_not_busy() -> None:
    frames = frames_of([[card(0.0, mem_pct=97.0, power_frac=0.2)] for _ in range(10)])
    verdict = judge(frames).job
    assert verdict.kind == "starving"  # memory held, nothing computing, nothing moving
    assert "VRAM 97 % used (77.6 GiB of 80.0 GiB), steady" in verdict.why


def test_input_bound_why_and_advice_with_free_cores() -> None:
    procs = [trainer(100, 30.0)] + [worker(101 + i, 97.0) for i in range(8)]
    host = HostSample(cpu_pct=40.0, iowait_pct=1.0, cpu_count=32)
    frames = frames_of(
        [[card(u, power_frac=0.35)] for u in SWING], processes=procs, host=host
    )
    verdict = judge(frames).job
    assert (verdict.kind, verdict.cause) == ("starving", "input-bound")
    assert "GPU-Util median 2 %, mean 30 % swinging 0–97 % over 10 samples" in verdict.why
    assert "power 35 % of 400 W cap (140 W), far below it" in verdict.why
    assert "8 workers at 97 % CPU each (776 % together): the input pipeline is CPU-bound" in (
        verdict.why
    )
    assert verdict.advice[0] == (
        "Raise DataLoader num_workers from 8 towards 16: 32 cores, about 19 free (host CPU "
        "40 %)"
    )
    text = " ".join(verdict.advice)
    for word in ("pre-decode", "augmentation", "persistent_workers", "pin_memory",
                 "prefetch_factor"):
        assert word in text


def test_input_bound_with_every_core_busy_does_not_ask_for_more_workers() -> None:
    procs = [trainer(100, 30.0)] + [worker(101 + i, 97.0) for i in range(8)]
    host = HostSample(cpu_pct=97.0, iowait_pct=0.0, cpu_count=8)
    frames = frames_of([[card(u, power_frac=0.35)] for u in SWING], processes=procs, host=host)
    verdict = judge(frames).job
    assert verdict.cause == "input-bound"
    assert verdict.advice[0] == (
        "All 8 cores are busy (host CPU 97 %): more workers will not help; make each sample "
        "cheaper"
    )


def test_workers_summing_to_their_count_are_pegged_even_if_uneven() -> None:
    # Multi-threaded decoding: each worker's % varies but together they use 4 full cores.
    procs = [trainer(100, 30.0)] + [worker(101 + i, c) for i, c in enumerate((40, 60, 150, 150))]
    frames = frames_of([[card(u, power_frac=0.35)] for u in SWING], processes=procs)
    assert judge(frames).job.cause == "input-bound"


def test_io_bound_from_disk_sleep_alone() -> None:
    procs = [trainer(100, 10.0)] + [
        worker(101 + i, 5.0, state="disk-sleep" if i < 3 else "sleeping") for i in range(4)
    ]
    frames = frames_of([[card(u, power_frac=0.3)] for u in SWING], processes=procs)
    verdict = judge(frames).job
    assert (verdict.kind, verdict.cause) == ("starving", "io-bound")
    # The input pipeline's share: 3 of the 4 workers (the trainer's own waits are its writes).
    assert "DataLoader workers waiting on disk (D state) in 75 % of samples" in verdict.why
    assert any("NVMe" in a for a in verdict.advice)


def test_host_iowait_without_processes_is_no_cause() -> None:
    # Another process's disk traffic raises the host's iowait for every job on it: context,
    # never the cause of a card whose job shows nothing.
    host = HostSample(cpu_pct=10.0, iowait_pct=40.0, cpu_count=16)
    frames = frames_of([[card(u, power_frac=0.3)] for u in SWING], host=host)
    verdict = judge(frames).job
    assert (verdict.kind, verdict.cause) == ("starving", "unknown")
    line = next(w for w in verdict.why if w.startswith("host: "))
    assert "iowait 40 %" in line and "context only" in line
    assert "--pid" in verdict.advice[0]


def test_host_iowait_beside_a_job_that_reads_nothing_is_not_io_bound() -> None:
    procs = [trainer(100, 30.0)] + [worker(101 + i, 20.0) for i in range(2)]
    host = HostSample(cpu_pct=30.0, iowait_pct=45.0, cpu_count=16)
    frames = frames_of([[card(u, power_frac=0.3)] for u in SWING], processes=procs, host=host)
    verdict = judge(frames).job
    assert verdict.cause != "io-bound"
    assert not any("NVMe" in a for a in verdict.advice)
    assert "iowait 45 %" in " ".join(verdict.why)


def test_no_process_evidence_says_so_and_asks_for_pid() -> None:
    verdict = judge(frames_of([[card(u, power_frac=0.3)] for u in SWING])).job
    assert (verdict.kind, verdict.cause) == ("starving", "unknown")
    assert verdict.why[3].startswith(
        "cause unknown: no process of this card's job is watched")
    assert "--pid" in verdict.advice[0]


def test_process_evidence_without_a_bottleneck_is_unknown_cause_without_pid_advice() -> None:
    procs = [trainer(100, 50.0), worker(101, 40.0), worker(102, 45.0)]
    host = HostSample(cpu_pct=20.0, iowait_pct=1.0, cpu_count=16)
    frames = frames_of([[card(u, power_frac=0.3)] for u in SWING], processes=procs, host=host)
    verdict = judge(frames).job
    assert (verdict.kind, verdict.cause) == ("starving", "unknown")
    assert verdict.why[-1] == (
        "no host bottleneck in the figures: 2 workers at 42 % CPU each (85 % together), "
        "trainer at 50 % CPU, 16 cores, host CPU 20 %, iowait 1 %"
    )
    assert not any("--pid" in a for a in verdict.advice)


def test_host_bound_without_workers_points_at_num_workers_zero() -> None:
    frames = frames_of([[card(30.0, power_frac=0.3)] for _ in range(6)],
                       processes=[trainer(100, 100.0)])
    verdict = judge(frames).job
    assert (verdict.kind, verdict.cause) == ("starving", "host-bound")
    assert "num_workers=0" in verdict.advice[0]
    assert any(".item()" in a for a in verdict.advice)


def test_processes_tie_to_their_cards() -> None:
    procs = (
        [trainer(100, 20.0, ["nvidia:0"])] + [worker(101 + i, 98.0, trainer=100) for i in range(4)]
        + [trainer(200, 99.0, ["nvidia:1"])] + [worker(201 + i, 2.0, trainer=200) for i in range(4)]
    )
    ticks = [[card(u, index=0, power_frac=0.3), card(u, index=1, power_frac=0.3)] for u in SWING]
    result = judge(frames_of(ticks, processes=procs))
    assert result.cards["nvidia:0"].cause == "input-bound"
    assert result.cards["nvidia:1"].cause == "host-bound"
    # Without card ids, every process counts for every card (single-job machine): both cards
    # see the same pooled figures (8 workers at a median 50 %, a trainer at 99 %).
    untied = [p.model_copy(update={"card_ids": []}) for p in procs]
    both = judge(frames_of(ticks, processes=untied))
    assert both.cards["nvidia:0"].cause == both.cards["nvidia:1"].cause == "host-bound"


def test_card_without_tied_processes_says_so() -> None:
    procs = [trainer(100, 20.0, ["nvidia:0"]), worker(101, 98.0, trainer=100)]
    ticks = [[card(u, index=0, power_frac=0.3), card(u, index=1, power_frac=0.3)] for u in SWING]
    verdict = judge(frames_of(ticks, processes=procs)).cards["nvidia:1"]
    assert verdict.cause == "unknown"
    assert any(w.startswith("cause unknown: processes were seen, but none is tied to this card")
               for w in verdict.why)


@pytest.mark.parametrize(
    ("vendor", "variable"),
    [
        ("nvidia", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
        ("amd", "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True"),
        ("hygon", "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True"),
        ("ascend", "PYTORCH_NPU_ALLOC_CONF=expandable_segments:True"),
        ("kunlunxin", "its equivalent of PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
    ],
)
def test_fragmenting_is_a_labelled_heuristic_with_the_vendor_allocator(
    vendor: str, variable: str
) -> None:
    mem = [91, 95, 99, 94, 91, 96, 99, 93]
    frames = frames_of([[card(2.0, vendor=vendor, mem_pct=m, power_frac=0.2)] for m in mem])
    verdict = judge(frames).job
    assert verdict.kind == "fragmenting"
    assert verdict.why[0].startswith("heuristic: VRAM up to 99 % full")
    assert "(3 changes of direction, 6.4 GiB back and forth)" in verdict.why[1]
    assert variable in verdict.advice[0]


def test_full_steady_vram_at_zero_util_is_not_fragmenting() -> None:
    frames = frames_of([[card(1.0, mem_pct=95.0, power_frac=0.2)] for _ in range(8)])
    assert judge(frames).job.kind != "fragmenting"


def test_idle_and_the_busy_reading_on_an_idle_card() -> None:
    idle = judge(frames_of([[card(0.0, mem_pct=0.5, power_frac=0.1)] for _ in range(5)])).job
    assert idle.kind == "idle"
    quirk = judge(
        frames_of([[card(100.0, vendor="amd", mem_pct=0.3, power_frac=0.08)] for _ in range(5)])
    ).job
    assert quirk.kind == "idle"
    assert "GPU% reads busy, but power is at the idle floor" in quirk.why[-1]


def test_ascend_aicore_threshold_differs() -> None:
    assert DEFAULT_THRESHOLDS.for_vendor("ascend").busy_util_pct == 70.0
    assert DEFAULT_THRESHOLDS.for_vendor("nvidia") is DEFAULT_THRESHOLDS
    ticks = [[card(75.0, vendor=v, power_frac=None, cap=None)] for v in ("ascend",) * 5]
    assert judge(frames_of(ticks)).job.kind == "saturated"
    nv = [[card(75.0, power_frac=None, cap=None)] for _ in range(5)]
    assert judge(frames_of(nv)).job.kind == "starving"
    assert "AICore% median 75 %" in judge(frames_of(ticks)).job.why[0]


def test_imbalanced_names_the_lagging_card() -> None:
    ticks = [
        [card(92.0, index=i, power_frac=0.85) for i in range(3)]
        + [card(30.0, index=3, power_frac=0.35)]
        for _ in range(6)
    ]
    result = judge(frames_of(ticks))
    assert (result.job.kind, result.job.cause) == ("imbalanced", "straggler")
    assert result.job.why[0] == (
        "nvidia:3 at 30 % while nvidia:0, nvidia:1, nvidia:2 run at 92 % (GPU-Util levels, the "
        "mean of the middle half): the cards of one job are uneven, and every step waits for "
        "the slowest"
    )
    straggler = result.cards["nvidia:3"]
    assert (straggler.kind, straggler.cause) == ("imbalanced", "straggler")
    assert straggler.why[0] == "lags the job: 30 % vs 92 % on nvidia:0, nvidia:1, nvidia:2"
    assert straggler.why[1] == "the gap held in each of 3 stretches of the last 5 s, not at one " \
        "instant"
    assert "on its own figures: starving (unknown)" in straggler.why
    assert result.cards["nvidia:0"].kind == "saturated"
    assert any("NCCL_DEBUG=INFO" in a for a in result.job.advice)


def test_idle_card_next_to_a_busy_one_is_not_imbalance() -> None:
    ticks = [[card(95.0, index=0, power_frac=0.85), card(0.0, index=1, mem_pct=0.5,
                                                          power_frac=0.1)] for _ in range(6)]
    result = judge(frames_of(ticks))
    assert result.job.kind == "saturated"
    assert result.job.why == ["1 of 2 cards saturated: nvidia:0", "1 of 2 cards idle: nvidia:1"]


def test_two_jobs_grouped_by_trainer_are_not_compared() -> None:
    # A 2-card DataParallel job at 95 % and another 2-card job at 30 %: each group is even.
    procs = [trainer(100, 50.0, ["nvidia:0", "nvidia:1"]), trainer(200, 50.0,
                                                                   ["nvidia:2", "nvidia:3"])]
    ticks = [
        [card(95.0, index=i, power_frac=0.85) for i in (0, 1)]
        + [card(30.0, index=i, power_frac=0.3) for i in (2, 3)]
        for _ in range(6)
    ]
    result = judge(frames_of(ticks, processes=procs))
    assert result.job.kind == "starving"  # the worst of the cards, summarised
    assert result.job.why[0] == "2 of 4 cards starving: nvidia:2, nvidia:3"


# --- unknown, stale, and odd input -----------------------------------------------------------


def test_too_little_data_says_how_much_is_needed() -> None:
    result = judge(frames_of([[card(95.0, power_frac=0.9)] for _ in range(2)]))
    verdict = result.cards["nvidia:0"]
    assert verdict.kind == "unknown"
    assert verdict.why == [
        "2 fresh samples of nvidia:0; need at least 3 (about 3 s at this poll interval)"
    ]
    assert verdict.advice == ["Wait for 1 more poll"]
    assert result.job.kind == "unknown"


def test_stale_cards_are_not_evidence() -> None:
    ticks = [[card(95.0, power_frac=0.9)]] + [
        [card(95.0, power_frac=0.9, stale_s=float(i))] for i in range(1, 9)
    ]
    verdict = judge(frames_of(ticks)).job
    assert verdict.kind == "unknown"
    assert verdict.why[0].startswith("1 fresh sample of nvidia:0; need at least 3")
    assert verdict.why[1] == "8 readings carried over from failed polls (up to 8 s old) are " \
        "not counted"


def test_missing_util_is_unknown_with_reason() -> None:
    verdict = judge(frames_of([[card(None, power_frac=0.9)] for _ in range(5)])).job
    assert verdict.kind == "unknown"
    assert verdict.why == ["GPU-Util given in 0 of 5 fresh samples of nvidia:0; need at least 3"]


def test_empty_window_and_frames_without_cards() -> None:
    assert judge([]).job.kind == "unknown"
    assert judge([]).cards == {}
    empty = judge([Frame(t=T0), Frame(t=T0 + 1)])
    assert empty.job.why == ["no card in the window"]


def test_thresholds_are_one_frozen_hashable_dataclass() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_THRESHOLDS.busy_util_pct = 50.0  # type: ignore[misc]
    assert hash(DEFAULT_THRESHOLDS) == hash(Thresholds())
    with pytest.raises(ValueError, match="unknown threshold"):
        Thresholds(vendor_overrides={"amd": {"busy_util": 70.0}})
    strict = Thresholds(busy_util_pct=99.0, vendor_overrides={})
    frames = frames_of([[card(95.0, power_frac=0.9)] for _ in range(5)])
    assert judge(frames, strict).job.kind == "saturated"  # power decides above 40 % util
    assert judge(frames_of([[card(95.0, power_frac=None, cap=None)]] * 5), strict).job.kind \
        == "starving"
    assert set(STARVING_CAUSES) == {"input-bound", "io-bound", "checkpoint", "host-bound",
                                    "light-kernels", "collective-wait", "cpu-quota", "unknown"}


# --- the tracker -----------------------------------------------------------------------------


def test_tracker_memory_is_bounded_by_time_and_count() -> None:
    tracker = VerdictTracker(window_s=30.0, max_frames=50)
    for i in range(200):
        tracker.push(Frame(t=T0 + i * 0.01, seq=i, cards=[card(95.0, power_frac=0.9)]))
    assert len(tracker.window) == 50
    slow = VerdictTracker(window_s=30.0)
    for i in range(100):
        slow.push(Frame(t=T0 + i, seq=i, cards=[card(95.0, power_frac=0.9)]))
    assert [f.seq for f in slow.window] == list(range(69, 100))


def test_tracker_reset_and_backwards_time() -> None:
    scenario = SCENARIOS["saturated_steady"]
    tracker, shown = run_tracker(scenario, window_s=10.0)
    assert shown[-1].job.kind == "saturated"
    tracker.reset()
    assert tracker.window == ()
    assert tracker.assessment.job.kind == "unknown"
    assert tracker.push(scenario.frame(0)).job.kind == "unknown"
    for tick in range(1, 5):
        tracker.push(scenario.frame(tick))
    # A seek backwards in a replay: old evidence is dropped automatically.
    assert tracker.push(scenario.frame(0)).job.kind == "unknown"
    assert len(tracker.window) == 1


def test_tracker_ignores_an_isolated_odd_poll_but_follows_a_real_change() -> None:
    good = [card(95.0, power_frac=0.9)]
    bad = [card(5.0, power_frac=0.2)]
    tracker = VerdictTracker()
    ticks = [good] * 6 + [bad] + [good] * 6 + [bad] * 6
    kinds = [tracker.push(f).job.kind for f in frames_of(ticks)]
    assert changes(kinds) == [(0, "unknown"), (2, "saturated"), (15, "starving")]


def test_tracker_shows_evidence_window_figures_once_settled() -> None:
    _tracker, shown = run_tracker(SCENARIOS["saturated_steady"])
    why = shown[-1].job.why[0]
    assert why.endswith("over 30 samples")  # the whole evidence window, not the last 3 polls
    assert shown[-1].job.confidence == 0.9


def test_tracker_hold_of_one_reacts_on_the_next_poll() -> None:
    _tracker, shown = run_tracker(SCENARIOS["step_starving_to_saturated"], hold_polls=1)
    flip = changes([a.job.kind for a in shown])[-1][0]
    assert flip == 21


# --- window helpers ----------------------------------------------------------------------------


def test_stats_skip_missing_and_non_finite() -> None:
    s = stats([None, 1.0, math.nan, 3.0, math.inf, -2.0, "7", True, 2.0])
    assert s is not None
    assert (s.n, s.missing, s.mean, s.median, s.min, s.max, s.last, s.span) == (
        3, 6, 2.0, 2.0, 1.0, 3.0, 2.0, 2.0
    )
    assert stats([None, math.nan]) is None
    assert num(5) == 5.0 and num(False) is None and num(math.nan) is None


def test_series_and_intervals() -> None:
    frames = frames_of(
        [[card(10.0)], [card(20.0, stale_s=1.0)], [card(None)], [card(40.0, cap=0.0)]]
    )
    assert card_series(frames, "nvidia:0", "util_pct") == [10.0, None, 40.0]
    assert card_series(frames, "nvidia:0", "util_pct", fresh_only=False) == [
        10.0, 20.0, None, 40.0
    ]
    assert power_frac_series(frames, "nvidia:0") == [0.5, 0.5, None]
    stat = series_stats(frames, "nvidia:0", "util_pct")
    assert stat is not None and stat.mean == 25.0
    assert interval_s(frames) == 1.0
    assert interval_s(frames[:1]) is None
    with pytest.raises(ValueError, match="unknown card field"):
        card_series(frames, "nvidia:0", "bogus")


def test_reversals_ignore_jitter() -> None:
    assert reversals([1, 5, 1, 5, 1]) == 3
    assert reversals([1, 1.2, 1.1, 1.3], min_step=0.5) == 0
    assert reversals([1, None, 3, math.nan, 2]) == 1


def test_tracker_rides_out_a_flaky_tool_but_not_a_dead_one() -> None:
    fresh = [card(95.0, power_frac=0.9)]
    stale = [card(95.0, power_frac=0.9, stale_s=1.0)]
    flaky = [fresh, stale] * 10  # every other poll times out: last good figures carried over
    tracker = VerdictTracker()
    kinds = [tracker.push(f).job.kind for f in frames_of(flaky)]
    assert changes(kinds) == [(0, "unknown"), (4, "saturated")]

    dead = [fresh] * 10 + [stale] * 10  # the tool stops answering at poll 10
    tracker = VerdictTracker()
    shown = [tracker.push(f) for f in frames_of(dead)]
    assert changes([a.job.kind for a in shown]) == [(0, "unknown"), (2, "saturated"),
                                                     (13, "unknown")]
    assert shown[-1].job.why[0].startswith("0 fresh samples of nvidia:0; need at least 3")


def test_misread_percentages_are_not_figures_and_raw_memory_is_derived() -> None:
    garbage = judge(frames_of([[card(250.0, power_frac=0.9)] for _ in range(5)])).job
    assert garbage.kind == "unknown"
    assert garbage.why == ["GPU-Util given in 0 of 5 fresh samples of nvidia:0; need at least 3"]
    raw = [
        CardReading.model_construct(
            vendor="nvidia", index=0, util_pct=0.0, mem_used_mib=60000.0, mem_total_mib=80000.0,
            mem_pct=None, power_w=40.0, power_cap_w=400.0, stale_s=None, extras={},
        )
    ]
    verdict = judge(frames_of([raw] * 5)).job
    # Without the derived 75 % the card would look empty, hence idle.
    assert verdict.kind == "starving"
    assert "VRAM 75 % used (58.6 GiB of 78.1 GiB), steady" in verdict.why
