"""Property tests: no window, however broken its figures, makes the verdict engine raise.

Validated models turn NaN into None, so the odd values are also fed through ``model_construct``
(which skips validation), as a recording written by a buggy build or a hand-made object might.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusat_tui.analysis.verdicts.cause_finding import STARVING_CAUSES
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import (
    VENDORS,
    VERDICT_KINDS,
    Assessment,
    CardReading,
    Frame,
    HostSample,
    ProcessSample,
)

SETTINGS = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

#: Figures a tool (or a broken recording) might hand over.
odd_float = st.one_of(
    st.none(),
    st.just(0.0),
    st.just(math.nan),
    st.just(math.inf),
    st.just(-math.inf),
    st.floats(min_value=-10.0, max_value=1e6, allow_nan=False),
    st.floats(min_value=0.0, max_value=100.0),
)
pct = st.one_of(st.none(), st.floats(min_value=0.0, max_value=100.0))
vendor = st.sampled_from(VENDORS)


@st.composite
def validated_card(draw: st.DrawFn, index: int) -> CardReading:
    return CardReading(
        vendor=draw(vendor),
        index=index,
        util_pct=draw(odd_float),
        mem_used_mib=draw(odd_float),
        mem_total_mib=draw(st.one_of(st.none(), st.just(0.0), st.floats(0.0, 1e6))),
        power_w=draw(odd_float),
        power_cap_w=draw(st.one_of(st.none(), st.just(0.0), odd_float)),
        stale_s=draw(st.one_of(st.none(), st.none(), st.floats(0.0, 100.0))),
    )


@st.composite
def raw_card(draw: st.DrawFn, index: int) -> CardReading:
    """Skips pydantic: NaN, infinities and negative figures reach the engine as they are."""
    return CardReading.model_construct(
        vendor=draw(vendor),
        index=index,
        util_pct=draw(odd_float),
        mem_used_mib=draw(odd_float),
        mem_total_mib=draw(odd_float),
        mem_pct=draw(odd_float),
        power_w=draw(odd_float),
        power_cap_w=draw(odd_float),
        stale_s=draw(st.one_of(st.none(), st.none(), st.just(math.nan), odd_float)),
        extras={},
    )


@st.composite
def process(draw: st.DrawFn, raw: bool) -> ProcessSample:
    role = draw(st.sampled_from(["trainer", "dataloader_worker"]))
    fields = {
        "pid": draw(st.integers(1, 40)),
        "role": role,
        "name": "python",
        "cpu_pct": draw(odd_float),
        "state": draw(st.sampled_from([None, "running", "sleeping", "disk-sleep", "zombie"])),
        "trainer_pid": draw(st.one_of(st.none(), st.integers(1, 40))),
        "card_ids": draw(st.lists(st.sampled_from(["nvidia:0", "nvidia:1", "amd:0", "x"]),
                                  max_size=2)),
        "pin_cpu_pct": draw(odd_float),
    }
    return ProcessSample.model_construct(**fields) if raw else ProcessSample(**fields)


@st.composite
def host(draw: st.DrawFn, raw: bool) -> HostSample | None:
    if draw(st.booleans()):
        return None
    fields = {
        "cpu_pct": draw(odd_float),
        "iowait_pct": draw(odd_float),
        "cpu_count": draw(st.one_of(st.none(), st.integers(0, 256))),
    }
    return HostSample.model_construct(**fields) if raw else HostSample(**fields)


@st.composite
def window(draw: st.DrawFn, raw: bool = False, max_frames: int = 12) -> list[Frame]:
    n = draw(st.integers(0, max_frames))
    n_cards = draw(st.integers(0, 3))
    frames = []
    t = 1000.0
    for seq in range(n):
        t += draw(st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0]))
        make = raw_card if raw else validated_card
        cards = [draw(make(i)) for i in range(n_cards) if draw(st.integers(0, 5)) > 0]
        procs = draw(st.lists(process(raw), max_size=4))
        stamp = draw(st.sampled_from([t, t, t, math.nan])) if raw else t
        fields = {
            "t": stamp, "seq": seq, "cards": cards, "processes": procs, "host": draw(host(raw))
        }
        frames.append(Frame.model_construct(**fields) if raw else Frame(**fields))
    return frames


def check_assessment(result: Assessment) -> None:
    for verdict in [*result.cards.values(), result.job]:
        assert verdict.kind in VERDICT_KINDS
        assert verdict.why, "unknown or not, a verdict says why"
        assert 0.0 <= verdict.confidence <= 1.0
        if verdict.kind == "starving":
            assert verdict.cause in STARVING_CAUSES
            assert verdict.advice
        if verdict.kind == "unknown":
            assert verdict.confidence == 0.0


@SETTINGS
@given(window())
def test_judge_never_raises_on_validated_frames(frames: list[Frame]) -> None:
    result = judge(frames)
    check_assessment(result)
    assert set(result.cards) == {c.id for f in frames for c in f.cards}


@SETTINGS
@given(window(raw=True))
def test_judge_never_raises_on_raw_constructed_frames(frames: list[Frame]) -> None:
    check_assessment(judge(frames))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(window(), window(raw=True)), min_size=1, max_size=3))
def test_tracker_never_raises_and_stays_bounded(windows: list[list[Frame]]) -> None:
    tracker = VerdictTracker(window_s=5.0, max_frames=8)
    for frames in windows:
        for frame in frames:
            check_assessment(tracker.push(frame))
            assert len(tracker.window) <= 8
            times = [f.t for f in tracker.window if math.isfinite(f.t)]
            assert not times or max(times) - min(times) <= 5.0


@SETTINGS
@given(st.one_of(validated_card(0), raw_card(0)))
def test_one_sample_is_always_unknown(card: CardReading) -> None:
    result = judge([Frame.model_construct(t=1.0, seq=0, cards=[card], processes=[], host=None)])
    verdict = result.cards[card.id]
    assert verdict.kind == "unknown"
    assert verdict.why[0].startswith(("0 fresh samples", "1 fresh sample"))
    assert result.job.kind == "unknown"


@SETTINGS
@given(
    util=st.floats(0.0, 100.0),
    power=st.floats(0.0, 1000.0),
    cap=st.sampled_from([0.0, None, math.nan]),
)
def test_zero_or_missing_cap_never_divides(util: float, power: float, cap: float | None) -> None:
    cards = [
        CardReading.model_construct(
            vendor="nvidia", index=0, util_pct=util, mem_used_mib=1000.0, mem_total_mib=0.0,
            mem_pct=None, power_w=power, power_cap_w=cap, stale_s=None, extras={},
        )
    ]
    frames = [
        Frame.model_construct(t=float(i), seq=i, cards=cards, processes=[], host=None)
        for i in range(5)
    ]
    verdict = judge(frames).job
    check_assessment(judge(frames))
    assert verdict.kind != "unknown"  # util is there: a reasoned verdict
    assert not any("% of" in line and "cap" in line for line in verdict.why)


@SETTINGS
@given(st.lists(st.sampled_from([None, math.nan, math.inf]), min_size=3, max_size=10))
def test_all_missing_util_is_unknown_with_reason(values: list[float | None]) -> None:
    frames = [
        Frame.model_construct(
            t=float(i), seq=i, processes=[], host=None,
            cards=[CardReading.model_construct(
                vendor="amd", index=0, util_pct=v, mem_used_mib=None, mem_total_mib=None,
                mem_pct=None, power_w=v, power_cap_w=v, stale_s=None, extras={},
            )],
        )
        for i, v in enumerate(values)
    ]
    verdict = judge(frames).job
    assert verdict.kind == "unknown"
    assert verdict.why == [
        f"GPU% given in 0 of {len(values)} fresh samples of amd:0; need at least 3"
    ]


def _frames(utils: list[float], powers: list[float], mem_pct: float) -> list[Frame]:
    return [
        Frame(
            t=1000.0 + i, seq=i,
            cards=[CardReading(
                vendor="nvidia", index=0, util_pct=u, mem_used_mib=81920 * mem_pct / 100,
                mem_total_mib=81920, power_w=400 * p, power_cap_w=400,
            )],
        )
        for i, (u, p) in enumerate(zip(utils, powers, strict=False))
    ]


def windows(
    util: tuple[float, float], power: tuple[float, float], mem: tuple[float, float]
) -> st.SearchStrategy[tuple[list[float], list[float], float]]:
    """3 to 30 polls: util % and power (fraction of cap) per poll in the ranges, one VRAM %."""
    return st.integers(3, 30).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(*util), min_size=n, max_size=n),
            st.lists(st.floats(*power), min_size=n, max_size=n),
            st.floats(*mem),
        )
    )


@SETTINGS
@given(windows(util=(80.0, 100.0), power=(0.70, 1.0), mem=(10.0, 89.0)))
def test_busy_at_high_power_is_always_saturated(
    case: tuple[list[float], list[float], float],
) -> None:
    utils, powers, mem = case
    assert judge(_frames(utils, powers, mem)).job.kind == "saturated"


@SETTINGS
@given(windows(util=(0.0, 5.0), power=(0.0, 0.6), mem=(0.0, 4.9)))
def test_nothing_held_and_nothing_running_is_always_idle(
    case: tuple[list[float], list[float], float],
) -> None:
    utils, powers, mem = case
    assert judge(_frames(utils, powers, mem)).job.kind == "idle"


@SETTINGS
@given(windows(util=(80.0, 100.0), power=(0.0, 0.49), mem=(10.0, 89.0)))
def test_busy_reading_at_low_power_is_never_called_saturated(
    case: tuple[list[float], list[float], float],
) -> None:
    utils, powers, mem = case
    verdict = judge(_frames(utils, powers, mem)).job
    assert verdict.kind == "starving"
    assert any("so this is not saturation" in line for line in verdict.why)
