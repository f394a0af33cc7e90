"""Multi-card jobs, stalls and CPU contention: stragglers told apart from phase
noise, the straggler's own badge, collective waits, ``stalled`` and its minimum duration, and
workers held back by a full host."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from gpusat_tui.analysis.verdicts.cause_finding import CauseContext, Finding
from gpusat_tui.analysis.verdicts.cause_rules import CAUSE_RULES
from gpusat_tui.analysis.verdicts.causes import find_cause
from gpusat_tui.analysis.verdicts.job import SEVERITY
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.commands.check_report import overall_verdict
from gpusat_tui.model import (
    VERDICT_KINDS,
    Assessment,
    CardReading,
    Frame,
    HostSample,
    ProcessSample,
)
from tests.scenarios import SCENARIOS, T0

# --- helpers -------------------------------------------------------------------------------


def shown(name: str, n: int | None = None) -> list[Assessment]:
    tracker = VerdictTracker()
    return [tracker.push(f) for f in SCENARIOS[name].frames(n)]


def gpu(index: int, util: float, power_frac: float | None = 0.35, mem_pct: float = 60.0,
        vendor: str = "nvidia", extras: dict[str, float] | None = None) -> CardReading:
    return CardReading(
        vendor=vendor, index=index, util_pct=util, mem_used_mib=81920 * mem_pct / 100,  # type: ignore[arg-type]
        mem_total_mib=81920, power_w=None if power_frac is None else 400 * power_frac,
        power_cap_w=None if power_frac is None else 400.0, extras=extras or {},
    )


def rank(pid: int, card: str, trainer_cpu: float, worker_cpu: float, workers: int = 2,
         state: str = "sleeping", delay: float | None = None) -> list[ProcessSample]:
    procs = [ProcessSample(pid=pid, role="trainer", name="python", cpu_pct=trainer_cpu,
                           state=state, card_ids=[card])]
    procs += [
        ProcessSample(pid=pid + 1 + w, role="dataloader_worker", name="pt_data_worker",
                      cpu_pct=worker_cpu, state="sleeping", trainer_pid=pid,
                      run_delay_pct=delay)
        for w in range(workers)
    ]
    return procs


def kinds(assessments: list[Assessment]) -> set[str]:
    out = {a.job.kind for a in assessments}
    for a in assessments:
        out |= {v.kind for v in a.cards.values()}
    return out


# --- 1. phase noise is not imbalance ---------------------------------------------------------


@pytest.mark.parametrize("n", [2, 4, 8])
def test_out_of_phase_starving_cards_are_never_imbalanced(n: int) -> None:
    name = f"phase_noise_{n}_cards"
    history = shown(name)
    assert "imbalanced" not in kinds(history)
    assert history[-1].job.cause == "input-bound"
    frames = SCENARIOS[name].frames()
    # Plain judge over any stretch of the run, short or long: never uneven either.
    for end in range(3, len(frames) + 1):
        for start in {0, end - 3, max(0, end - 10), max(0, end - 20)}:
            assert judge(frames[start:end]).job.kind != "imbalanced", (start, end)


def test_the_old_short_window_of_medians_did_see_imbalance_in_phase_noise() -> None:
    # What the issue reported: three polls of two swinging cards look uneven on medians. The
    # same three polls are now not enough evidence for a swinging pair.
    frames = SCENARIOS["phase_noise_2_cards"].frames(5)[1:4]
    medians = [sorted(f.cards[i].util_pct or 0 for f in frames)[1] for i in range(2)]
    assert abs(medians[0] - medians[1]) >= DEFAULT_THRESHOLDS.imbalance_gap_pct
    assert judge(frames).job.kind == "starving"


@st.composite
def phase_runs(draw: st.DrawFn) -> tuple[list[list[float]], list[list[float]]]:
    """Per card, the same cycle of (util, power %) figures, each card starting at its own
    phase, and optionally each cycle's polls in another order per card."""
    period = draw(st.integers(2, 5))
    figure = st.one_of(st.sampled_from([0.0, 3.0, 20.0, 90.0, 100.0]), st.floats(0.0, 100.0))
    utils = draw(st.lists(figure, min_size=period, max_size=period))
    powers = draw(st.lists(st.sampled_from([20.0, 35.0, 60.0, 85.0]),
                           min_size=period, max_size=period))
    n_cards = draw(st.integers(2, 4))
    shuffle = draw(st.booleans())
    ticks = 36
    card_utils: list[list[float]] = []
    card_powers: list[list[float]] = []
    for _ in range(n_cards):
        phase = draw(st.integers(0, period - 1))
        order = list(range(period))
        u_run: list[float] = []
        p_run: list[float] = []
        for block in range(ticks // period + 2):
            if shuffle:
                order = draw(st.permutations(range(period)))
            for k in order:
                u_run.append(utils[(k + phase) % period])
                p_run.append(powers[(k + phase) % period])
            del block
        card_utils.append(u_run[:ticks])
        card_powers.append(p_run[:ticks])
    return card_utils, card_powers


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(phase_runs())
def test_identical_distributions_in_any_phase_order_are_never_imbalanced(
    run: tuple[list[list[float]], list[list[float]]],
) -> None:
    utils, powers = run
    frames = [
        Frame(t=T0 + k, seq=k, cards=[
            gpu(i, utils[i][k], powers[i][k] / 100) for i in range(len(utils))
        ])
        for k in range(len(utils[0]))
    ]
    tracker = VerdictTracker()
    history = [tracker.push(f) for f in frames]
    assert "imbalanced" not in kinds(history)
    assert all(v.cause != "collective-wait" for a in history for v in a.cards.values())
    assert judge(frames).job.kind != "imbalanced"


# --- 2. the straggler's own badge ------------------------------------------------------------


def test_persistent_straggler_is_imbalanced_on_its_own_badge_within_three_polls() -> None:
    history = shown("straggler_2_cards")
    third = history[2]  # the first poll with enough samples for any verdict
    lagging = third.cards["nvidia:1"]
    assert (lagging.kind, lagging.cause) == ("imbalanced", "straggler")
    assert third.cards["nvidia:0"].kind == "saturated"
    assert (third.job.kind, third.job.cause) == ("imbalanced", "straggler")
    final = history[-1].cards["nvidia:1"]
    assert final.why[0].startswith("lags the job: ")
    # Its own evidence stays: its pegged workers, and what to do about them.
    assert "on its own figures: starving (input-bound)" in final.why
    assert any("workers at" in w and "CPU-bound" in w for w in final.why), final.why
    assert any("num_workers" in a or "pre-decode" in a for a in final.advice)
    assert any("throttling" in a for a in final.advice)


def test_straggler_why_says_the_gap_held_across_the_window() -> None:
    job = shown("imbalanced_4_cards")[-1].job
    held = [w for w in job.why if w.startswith("the gap held in each of 3 stretches of the last")]
    assert held and held[0].endswith(" s, not at one instant"), job.why


def test_a_straggler_that_swings_is_found_once_there_is_enough_history() -> None:
    # Rank 1 starves in bursts (0-8 % with a burst every 4th poll) beside a steady 92 % card.
    ticks = []
    for k in range(20):
        burst = 96.0 if k % 4 == 0 else 4.0
        ticks.append([gpu(0, 92.0, 0.85), gpu(1, burst, 0.3)])
    frames = [Frame(t=T0 + k, seq=k, cards=c) for k, c in enumerate(ticks)]
    assert judge(frames[:6]).job.kind != "imbalanced"  # 5 s of a swinging card: too little
    result = judge(frames[:14])
    assert (result.job.kind, result.job.cause) == ("imbalanced", "straggler")
    assert result.cards["nvidia:1"].kind == "imbalanced"


# --- 3. collective waits ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["collective_wait", "collective_wait_gpm"])
def test_collective_wait_names_the_slow_peer_and_spares_the_waiting_card(name: str) -> None:
    final = shown(name)[-1]
    waiting, slow = final.cards["nvidia:0"], final.cards["nvidia:1"]
    assert (final.job.kind, final.job.cause) == ("imbalanced", "straggler")
    assert (slow.kind, slow.cause) == ("imbalanced", "straggler")
    assert (waiting.kind, waiting.cause) == ("starving", "collective-wait")
    assert "nvidia:1, the straggler" in final.job.why[0]
    assert any(w.startswith("waits in a collective for nvidia:1") for w in waiting.why)
    assert waiting.advice[0].startswith("Nothing to tune on this card: it waits for nvidia:1")
    # Not told to do more work per kernel: that advice belongs to light kernels.
    assert not any("Give each more work" in a or a.startswith("Busy but not drawing") for a in
                   waiting.advice)
    basis = "SM activity, measured by the GPM counters" if name.endswith("gpm") else \
        "power share of cap, work inferred from power"
    assert basis in final.job.why[0]


def test_without_a_peer_the_same_card_reads_light_kernels() -> None:
    # The waiting card alone (no peer at high power) is what it was: busy at low power.
    scenario = SCENARIOS["collective_wait"]
    frames = [f.model_copy(update={"cards": f.cards[:1]}) for f in scenario.frames(10)]
    verdict = judge(frames).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "light-kernels")


def test_cards_at_different_power_that_are_not_busy_are_not_a_collective_wait() -> None:
    # Two cards of one job at 40 % util (not busy): power differs, but nothing spins.
    frames = [Frame(t=T0 + k, seq=k, cards=[gpu(0, 40.0, 0.3), gpu(1, 40.0, 0.8)])
              for k in range(12)]
    result = judge(frames)
    assert result.job.kind != "imbalanced"
    assert all(v.cause != "collective-wait" for v in result.cards.values())


# --- 4. stalled ------------------------------------------------------------------------------


def test_stalled_only_after_its_minimum_duration() -> None:
    scenario = SCENARIOS["stalled"]
    history = shown("stalled")
    job_kinds = [a.job.kind for a in history]
    change = scenario.change_at
    assert change is not None
    assert "stalled" not in job_kinds[:change]
    assert job_kinds[change:change + 3].count("stalled") >= 1
    assert job_kinds[-1] == "stalled"
    before = history[change - 1].job
    # Until then it is a pause, not a card starving on its input (issue: the time before a
    # stall): unknown, paused, saying how long nothing has run and when a stall is called.
    assert (before.kind, before.cause) == ("unknown", "paused")
    assert any(w.startswith("nothing has run for ") and "a stall is called at 20 s" in w
               for w in before.why), before.why
    assert all(v.kind != "starving" for a in history[:change] for v in a.cards.values())
    verdict = history[-1].cards["nvidia:0"]
    # At least the 20 s line (leaving unknown needs no hold, so the stalled badge's history
    # may reach a poll further back than a flip from another kind would).
    assert re.match(r"stalled for at least 2\d s: GPU-Util at or below 5 %", verdict.why[0]), (
        verdict.why[0])
    text = " ".join(verdict.advice)
    assert "py-spy dump --pid 4242" in text
    assert "NCCL_DEBUG=INFO" in text
    assert "timeout" in text


def test_stalled_by_plain_judge_says_how_long() -> None:
    frames = SCENARIOS["stalled"].frames(40)
    paused = judge(frames[:20]).job  # 19 s
    assert (paused.kind, paused.cause) == ("unknown", "paused")
    assert paused.why[0] == "nothing has run for 19 s; a stall is called at 20 s (in 1 s if " \
        "nothing moves)"
    stalled = judge(frames[:21]).job  # 20 s: the line
    assert stalled.kind == "stalled"
    assert stalled.why[0].startswith("stalled for at least 20 s")
    assert judge(frames[5:40]).job.why[0].startswith("stalled for at least 34 s")


def test_a_pause_between_epochs_is_not_a_stall() -> None:
    # Saturated, then 10 s with nothing running anywhere (an epoch boundary), then saturated.
    saturated = SCENARIOS["saturated_steady"]
    pause = SCENARIOS["stalled"]
    frames = [
        (pause if 20 <= k < 30 else saturated).frame(k) for k in range(45)
    ]
    tracker = VerdictTracker()
    history = [tracker.push(f) for f in frames]
    assert "stalled" not in kinds(history)
    assert history[-1].job.kind == "saturated"


def test_no_process_figures_no_stall() -> None:
    # Nothing tells a stall from a card that waits for input here: starving, unknown cause.
    scenario = dataclasses.replace(SCENARIOS["stalled"], procs_fn=lambda tick, rng: [])
    verdict = judge(scenario.frames(40)).job
    assert (verdict.kind, verdict.cause) == ("starving", "unknown")


def test_a_stopped_trainer_is_said_and_ascend_gets_hccl_advice() -> None:
    procs = rank(77, "ascend:0", 0.0, 0.0, state="stopped")
    frames = [Frame(t=T0 + k, seq=k, processes=procs,
                    cards=[gpu(0, 0.0, None, mem_pct=50.0, vendor="ascend")])
              for k in range(25)]
    verdict = judge(frames).cards["ascend:0"]
    assert verdict.kind == "stalled"
    assert "the trainer is stopped (state T)" in verdict.why
    assert verdict.advice[0].startswith("The trainer is stopped")
    text = " ".join(verdict.advice)
    assert "HCCL_EXEC_TIMEOUT" in text and "py-spy dump --pid 77" in text


def test_a_busy_host_side_is_not_a_stall() -> None:
    # The card does nothing for 30 s but the workers decode at full speed: starving.
    procs = rank(10, "nvidia:0", 5.0, 95.0, workers=4)
    frames = [Frame(t=T0 + k, seq=k, processes=procs, cards=[gpu(0, 0.0, 0.2)])
              for k in range(30)]
    assert judge(frames).job.kind == "starving"


# --- 5. CPU contention -----------------------------------------------------------------------


def test_contended_workers_are_input_bound_and_the_host_is_said_oversubscribed() -> None:
    final = shown("starving_contended")[-1].job
    assert (final.kind, final.cause) == ("starving", "input-bound")
    text = " ".join(final.why)
    assert "queued for a CPU" in text
    assert "the host is oversubscribed" in text
    assert final.advice[0].startswith("The host is oversubscribed: more workers only queue")
    assert "run delay" in final.why[-1]


def test_the_same_workers_without_run_delay_figures_stay_unknown() -> None:
    # What run delay adds: without it, 70-80 % of a core is under the pegged line.
    scenario = SCENARIOS["starving_contended"]
    frames = [
        f.model_copy(update={"processes": [
            p.model_copy(update={"run_delay_pct": None}) for p in f.processes
        ]})
        for f in scenario.frames()
    ]
    assert judge(frames).job.cause == "unknown"


def test_queued_trainer_is_host_bound() -> None:
    procs = [ProcessSample(pid=5, role="trainer", name="python", cpu_pct=70.0,
                           run_delay_pct=28.0, card_ids=["nvidia:0"])]
    frames = [Frame(t=T0 + k, seq=k, processes=procs, cards=[gpu(0, 35.0, 0.3)],
                    host=HostSample(cpu_pct=99.0, cpu_count=4)) for k in range(8)]
    verdict = judge(frames).job
    assert (verdict.kind, verdict.cause) == ("starving", "host-bound")
    assert "queued for a CPU 28 % of the time" in verdict.why[-3]


# --- 6. ties, and how causes are chosen ------------------------------------------------------


def test_one_severity_order_covers_every_kind_and_check_follows_it() -> None:
    assert set(SEVERITY) == set(VERDICT_KINDS)
    assert SEVERITY[:5] == ("stalled", "imbalanced", "fragmenting", "starving", "saturated")
    assert overall_verdict(["starving", "fragmenting"]) == "fragmenting"
    assert overall_verdict(["saturated", "stalled"]) == "stalled"
    assert overall_verdict(["saturated", "saturated"], "stalled") == "stalled"


def test_the_job_summary_uses_the_same_order() -> None:
    procs = [ProcessSample(pid=1, role="trainer", name="python", cpu_pct=20.0,
                           card_ids=["nvidia:0"]),
             ProcessSample(pid=2, role="trainer", name="python", cpu_pct=20.0,
                           card_ids=["nvidia:1"])]
    frames = []
    for k in range(8):
        churn = 91 + (0, 5, 1, 6)[k % 4]
        frames.append(Frame(t=T0 + k, seq=k, processes=procs, cards=[
            gpu(0, 2.0, 0.2, mem_pct=churn), gpu(1, [95, 2, 3, 1][k % 4], 0.3),
        ]))
    result = judge(frames)
    assert {v.kind for v in result.cards.values()} == {"fragmenting", "starving"}
    assert result.job.kind == "fragmenting"


def test_a_measured_finding_outranks_an_earlier_inferred_one() -> None:
    ev = HostEvidence(n_process_samples=10, n_workers=4, worker_cpu=97.0, worker_sum=388.0)
    ctx = CauseContext(ev=ev, light=False, label="GPU-Util")

    def probe(ctx: CauseContext, th: Thresholds) -> Finding | None:
        return Finding("io-bound", ["next(dataloader) waits on reads"], ["faster storage"], 0.9,
                       basis="measured", source="the probe inside the job")

    assert find_cause(ctx, DEFAULT_THRESHOLDS).cause == "input-bound"
    chosen = find_cause(ctx, DEFAULT_THRESHOLDS, [*CAUSE_RULES, probe])
    assert (chosen.cause, chosen.basis) == ("io-bound", "measured")


def test_every_kind_has_a_badge_style_and_word() -> None:
    from pathlib import Path

    from gpusat_tui.ui.widgets.badge import badge_word

    css = (Path(__file__).resolve().parents[2] / "gpusat_tui/ui/gpusat.tcss").read_text()
    for kind in VERDICT_KINDS:
        for cls in (f"CardList > .cardlist--{kind}", f"CardPanel > .cardpanel--{kind}",
                    f"JobLine > .jobline--{kind}"):
            assert cls in css, cls
        assert badge_word(kind) == kind.upper()


def test_one_poll_a_little_above_the_line_does_not_end_a_stall_two_do() -> None:
    def run(blips: set[int]) -> str:
        frames = []
        for k in range(25):
            cpu = 20.0 if k in blips else 1.0
            frames.append(Frame(t=T0 + k, seq=k, processes=rank(9, "nvidia:0", cpu, 0.0),
                                cards=[gpu(0, 0.0, 0.2)]))
        return judge(frames).job.kind

    assert run(set()) == "stalled"
    assert run({12}) == "stalled"
    assert run({12, 13}) == "starving"
    assert run({24}) == "starving"  # the latest poll shows work: not stalled now
    assert run({12}) == "stalled" and run({10, 15}) == "stalled"
