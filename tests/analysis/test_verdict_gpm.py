"""Verdicts on NVIDIA GPM figures (SM activity) and clock-event (throttle) reasons.

GPU-Util is a duty cycle: where the card gives SM activity, saturation needs the SMs busy
(>= 80 %), and 100 % GPU-Util with few SMs busy is starving/light-kernels. A lagging card of a
job whose clocks are held down is imbalanced with cause ``throttled``.
"""

from __future__ import annotations

from gpusat_tui.analysis.facts import frame_facts
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import PreparedWindow, judge
from gpusat_tui.model import CardReading, Frame, ProcessSample
from tests.scenarios import T0


def nv(
    util: float, *, index: int = 0, sm: float | None = None, tensor: float | None = None,
    power_frac: float = 0.85, throttle: str | None = None, mem_pct: float = 70.0,
) -> CardReading:
    extras: dict[str, float | str | None] = {}
    if sm is not None:
        extras["sm_active_pct"] = sm
    if tensor is not None:
        extras["tensor_active_pct"] = tensor
    if throttle is not None:
        extras["throttle"] = throttle
    return CardReading(
        vendor="nvidia", index=index, util_pct=util, mem_used_mib=143771 * mem_pct / 100,
        mem_total_mib=143771.0, power_w=700 * power_frac, power_cap_w=700.0, extras=extras,
        tool="nvml",
    )


def frames(per_tick: list[list[CardReading]],
           processes: list[ProcessSample] | None = None) -> list[Frame]:
    return [Frame(t=T0 + i, seq=i, cards=cards, processes=processes or [])
            for i, cards in enumerate(per_tick)]


#: A quiet trainer: the job's own processes seen, none of them a bottleneck.
QUIET = [ProcessSample(pid=100, role="trainer", name="python", cpu_pct=20.0, state="running")]


def test_busy_util_and_high_sm_activity_is_saturated_and_why_names_gpm() -> None:
    result = judge(frames([[nv(99, sm=86, tensor=61)]] * 10))
    v = result.cards["nvidia:0"]
    assert (v.kind, v.cause) == ("saturated", None)
    assert any("SM activity (GPM) median 86 %, tensor-pipe activity 61 %" in w for w in v.why)
    assert v.confidence >= 0.9


def test_full_util_at_high_power_but_low_sm_activity_is_starving_light_kernels() -> None:
    """Without GPM this card is saturated (util 100 %, 85 % of cap); GPM says otherwise."""
    plain = judge(frames([[nv(100)]] * 10)).cards["nvidia:0"]
    assert plain.kind == "saturated"
    v = judge(frames([[nv(100, sm=30, tensor=4)]] * 10, QUIET)).cards["nvidia:0"]
    assert (v.kind, v.cause) == ("starving", "light-kernels")
    # Without the job's processes the same card is starving with its cause unknown.
    alone = judge(frames([[nv(100, sm=30, tensor=4)]] * 10)).cards["nvidia:0"]
    assert (alone.kind, alone.cause) == ("starving", "unknown")
    line = next(w for w in v.why if "SM activity" in w)
    assert "GPU-Util reads 100 % but SM activity (GPM) median 30 %" in line
    assert "likely ineffective use" in line and "collective" in line


def test_sm_activity_between_the_lines_is_not_saturation() -> None:
    v = judge(frames([[nv(97, sm=65)]] * 10)).cards["nvidia:0"]
    assert v.kind == "starving"
    assert any("below the 80 % saturation needs" in w for w in v.why)


def test_thresholds_decide_the_sm_lines() -> None:
    lenient = DEFAULT_THRESHOLDS.__class__(sm_active_busy_pct=60.0)
    assert judge(frames([[nv(97, sm=65)]] * 10), lenient).cards["nvidia:0"].kind == "saturated"


def test_gpm_on_too_few_polls_is_not_used() -> None:
    """The first polls of a device have no GPM figure (two samples needed): GPU-Util and power
    decide until there are enough."""
    ticks = [[nv(100)]] * 8 + [[nv(100, sm=20)]] * 2
    v = judge(frames(ticks)).cards["nvidia:0"]
    assert v.kind == "saturated" and not any("SM activity" in w for w in v.why)


def test_low_sm_with_pegged_workers_keeps_the_host_cause() -> None:
    from gpusat_tui.model import ProcessSample

    procs = [ProcessSample(pid=100, role="trainer", name="python", cpu_pct=40.0),
             *[ProcessSample(pid=200 + i, role="dataloader_worker", name="pt_data_worker",
                             cpu_pct=99.0, trainer_pid=100) for i in range(4)]]
    fs = [Frame(t=T0 + i, seq=i, cards=[nv(100, sm=25)], processes=procs) for i in range(10)]
    v = judge(fs).cards["nvidia:0"]
    assert (v.kind, v.cause) == ("starving", "input-bound")


def test_throttle_reasons_are_quoted_in_why() -> None:
    v = judge(frames([[nv(99, sm=90, throttle="power-cap,idle")]] * 10)).cards["nvidia:0"]
    assert v.kind == "saturated"
    assert "clocks held down (power-cap in 10 of 10 polls; clock-event reasons)" in v.why
    # Idle and app-clocks are not limits; a reason seen once in ten is not "held down".
    calm = judge(frames([[nv(99, sm=90, throttle="idle")]] * 9
                        + [[nv(99, sm=90, throttle="hw-thermal")]])).cards["nvidia:0"]
    assert not any("clocks held down" in w for w in calm.why)


def ddp(lag_throttle: str | None, other_throttle: str | None = "") -> list[Frame]:
    ticks = []
    for _ in range(10):
        ticks.append([
            nv(92, index=0, sm=85, throttle=other_throttle),
            nv(93, index=1, sm=86, throttle=other_throttle),
            nv(30, index=2, sm=20, power_frac=0.5, throttle=lag_throttle),
        ])
    return frames(ticks)


def test_imbalanced_lagging_card_throttled_is_the_cause() -> None:
    result = judge(ddp("sw-thermal,hw-thermal"))
    assert (result.job.kind, result.job.cause) == ("imbalanced", "throttled")
    assert any(
        w.startswith("nvidia:2: clocks held down (sw-thermal in 10, hw-thermal in 10 of 10")
        for w in result.job.why
    )
    assert "cooling" in result.job.advice[0]
    # The lagging card's own badge: the lag line first, its own figures after.
    lagging = result.cards["nvidia:2"]
    assert (lagging.kind, lagging.cause) == ("imbalanced", "throttled")
    assert lagging.why[0].endswith("; its clocks are held down (sw-thermal, hw-thermal)")


def test_imbalanced_without_throttling_or_when_every_card_is_capped_is_a_straggler() -> None:
    assert judge(ddp("")).job.cause == "straggler"
    assert judge(ddp(None, None)).job.cause == "straggler"  # reasons not read at all
    # Every card at its power cap: the limit does not explain why one lags.
    assert judge(ddp("power-cap", "power-cap")).job.cause == "straggler"


def test_prepared_window_adds_the_same_throttle_line() -> None:
    fs = ddp("power-cap")
    window = PreparedWindow(fs, [frame_facts(f) for f in fs])
    assert window.card("nvidia:2") == judge(fs).cards["nvidia:2"]


def test_tracker_reaches_the_gpm_verdict() -> None:
    tracker = VerdictTracker()
    kinds = [tracker.push(f).cards["nvidia:0"].kind for f in frames([[nv(100, sm=15)]] * 8)]
    assert kinds[-1] == "starving"
