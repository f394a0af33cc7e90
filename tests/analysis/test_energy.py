"""Energy per card and per job against constructed power series (`analysis.energy`)."""

from __future__ import annotations

import pytest

from gpusat_tui.analysis.energy import (
    JOULES_PER_KWH,
    EnergyMeter,
    energy_words,
    format_energy,
)
from gpusat_tui.model import CardReading, Frame, JobContext, ProbeSample


def card(index: int, power: float | None, stale: float | None = None) -> CardReading:
    return CardReading(vendor="nvidia", index=index, power_w=power, stale_s=stale)


def frame(t: float, *cards: CardReading, jobs: list[JobContext] | None = None,
          probes: list[ProbeSample] | None = None) -> Frame:
    return Frame(t=t, cards=list(cards), jobs=jobs or [], probes=probes or [])


def feed(meter: EnergyMeter, frames: list[Frame]) -> EnergyMeter:
    for f in frames:
        meter.add(f)
    return meter


def test_constant_power_is_power_times_time() -> None:
    meter = feed(EnergyMeter(), [frame(1000.0 + i, card(0, 300.0)) for i in range(11)])
    fig = meter.card("nvidia:0")
    assert fig is not None
    assert fig.joules == pytest.approx(3000.0)
    assert fig.covered_s == pytest.approx(10.0)
    assert fig.uncovered_s == 0.0
    assert fig.kwh == pytest.approx(3000.0 / JOULES_PER_KWH)
    assert fig.since_t == 1000.0


def test_steps_are_trapezoids() -> None:
    # 100 W for 3 polls, then 400 W: the step between t=2 and t=3 counts (100+400)/2.
    powers = [100.0, 100.0, 100.0, 400.0, 400.0]
    meter = feed(EnergyMeter(), [frame(float(t), card(0, p)) for t, p in enumerate(powers)])
    fig = meter.card("nvidia:0")
    assert fig is not None and fig.joules == pytest.approx(100 + 100 + 250 + 400)


def test_uneven_intervals_weight_by_time() -> None:
    meter = feed(EnergyMeter(interval_s=1.0), [
        frame(0.0, card(0, 200.0)), frame(0.5, card(0, 200.0)), frame(2.5, card(0, 200.0)),
    ])
    fig = meter.card("nvidia:0")
    assert fig is not None and fig.joules == pytest.approx(200 * 2.5)


def test_a_poll_without_power_breaks_the_line() -> None:
    # The figure is missing at t=2 and stale at t=3: t=1..4 is not integrated.
    meter = feed(EnergyMeter(), [
        frame(0.0, card(0, 100.0)), frame(1.0, card(0, 100.0)), frame(2.0, card(0, None)),
        frame(3.0, card(0, 100.0, stale=2.0)), frame(4.0, card(0, 100.0)),
        frame(5.0, card(0, 100.0)),
    ])
    fig = meter.card("nvidia:0")
    assert fig is not None
    assert fig.joules == pytest.approx(200.0)
    assert fig.covered_s == pytest.approx(2.0)
    assert fig.uncovered_s == pytest.approx(3.0)


def test_a_long_gap_between_polls_is_not_bridged() -> None:
    # Polls every second, then the monitor is suspended for 60 s.
    times = [0.0, 1.0, 2.0, 3.0, 63.0, 64.0]
    meter = feed(EnergyMeter(), [frame(t, card(0, 250.0)) for t in times])
    fig = meter.card("nvidia:0")
    assert fig is not None
    assert fig.joules == pytest.approx(250.0 * 4)
    assert fig.uncovered_s == pytest.approx(60.0)


def test_a_card_that_disappears_keeps_its_total() -> None:
    frames = [frame(float(t), card(0, 100.0), card(1, 200.0)) for t in range(4)]
    frames += [frame(float(t), card(0, 100.0)) for t in range(4, 40)]
    meter = feed(EnergyMeter(window_s=30.0), frames)
    gone = meter.card("nvidia:1")
    assert gone is not None
    assert gone.gone and gone.joules == pytest.approx(600.0)
    assert gone.window_joules == 0.0  # its last step left the window
    kept = meter.card("nvidia:0")
    assert kept is not None and not kept.gone and kept.joules == pytest.approx(3900.0)
    # A card that comes back after a gap starts a new line, with no bridge over the gap.
    meter.add(frame(40.0, card(0, 100.0), card(1, 200.0)))
    meter.add(frame(41.0, card(0, 100.0), card(1, 200.0)))
    back = meter.card("nvidia:1")
    assert back is not None and not back.gone and back.joules == pytest.approx(800.0)


def test_window_is_the_last_seconds() -> None:
    meter = feed(EnergyMeter(window_s=10.0), [frame(float(t), card(0, 100.0)) for t in range(61)])
    fig = meter.card("nvidia:0")
    assert fig is not None
    assert fig.joules == pytest.approx(6000.0)
    assert fig.window_joules == pytest.approx(1000.0)
    assert fig.window_covered_s == pytest.approx(10.0)
    assert "100 W over 10 s" in energy_words(fig)


def test_card_without_power_figures_says_so() -> None:
    meter = feed(EnergyMeter(), [frame(float(t), card(0, None)) for t in range(5)])
    fig = meter.card("nvidia:0")
    assert fig is not None and fig.joules is None and fig.kwh is None
    assert energy_words(fig) == "no power figures"
    assert meter.card_joules() == {}


def _job(job_id: str, cards: list[str], pids: list[int]) -> JobContext:
    return JobContext(scheduler="slurm", job_id=job_id, card_ids=cards, pids=pids)


def test_job_energy_is_its_cards_and_shared_cards_are_split() -> None:
    a = _job("1", ["nvidia:0", "nvidia:1"], [10])
    b = _job("2", ["nvidia:1"], [20])
    frames = [frame(float(t), card(0, 100.0), card(1, 300.0), jobs=[a, b]) for t in range(11)]
    meter = feed(EnergyMeter(), frames)
    ja, jb = meter.job("slurm:1"), meter.job("slurm:2")
    assert ja is not None and jb is not None
    assert ja.joules == pytest.approx(1000.0 + 1500.0)
    assert jb.joules == pytest.approx(1500.0)
    assert ja.covered_s == pytest.approx(20.0)  # card-seconds
    assert ja.joules_per_sample is None  # no probe


def test_job_starts_when_first_seen() -> None:
    job = _job("7", ["nvidia:0"], [10])
    frames = [frame(float(t), card(0, 200.0)) for t in range(5)]
    frames += [frame(float(t), card(0, 200.0), jobs=[job]) for t in range(5, 10)]
    meter = feed(EnergyMeter(), frames)
    fig = meter.job("slurm:7")
    assert fig is not None and fig.since_t == 5.0
    assert fig.joules == pytest.approx(800.0)
    card_fig = meter.card("nvidia:0")
    assert card_fig is not None and card_fig.joules == pytest.approx(1800.0)


def _probe(pid: int, card_id: str, rate: float | None) -> ProbeSample:
    return ProbeSample(pid=pid, card_id=card_id, samples_per_s=rate)


def test_joules_per_sample_from_the_probe() -> None:
    job = _job("9", ["nvidia:0", "nvidia:1"], [10, 11])
    frames = [
        frame(float(t), card(0, 300.0), card(1, 300.0), jobs=[job],
              probes=[_probe(10, "nvidia:0", 1000.0), _probe(11, "nvidia:1", 1000.0)])
        for t in range(11)
    ]
    meter = feed(EnergyMeter(), frames)
    fig = meter.job("slurm:9")
    assert fig is not None
    assert fig.joules == pytest.approx(6000.0)
    assert fig.samples == pytest.approx(20000.0)
    assert fig.joules_per_sample == pytest.approx(0.3)
    assert fig.samples_per_kwh == pytest.approx(JOULES_PER_KWH / 0.3)
    assert "0.3 J/sample" in energy_words(fig)
    assert "12.0 M samples/kWh" in energy_words(fig)


def test_joules_per_sample_skips_steps_without_the_rate_or_a_card() -> None:
    job = _job("9", ["nvidia:0"], [10])
    rates = [500.0, 500.0, None, 500.0, 500.0]
    frames = [frame(float(t), card(0, 250.0), jobs=[job], probes=[_probe(10, "nvidia:0", r)])
              for t, r in enumerate(rates)]
    meter = feed(EnergyMeter(), frames)
    fig = meter.job("slurm:9")
    assert fig is not None
    assert fig.joules == pytest.approx(1000.0)
    # Only t=0..1 and t=3..4 had the rate at both ends.
    assert fig.samples == pytest.approx(1000.0)
    assert fig.probe_joules == pytest.approx(500.0)
    assert fig.joules_per_sample == pytest.approx(0.5)


def test_format_energy_units() -> None:
    assert format_energy(None) == "no power figures"
    assert format_energy(812.0) == "812 J"
    assert format_energy(45_200.0) == "45.2 kJ"
    assert format_energy(3.41 * JOULES_PER_KWH) == "3.41 kWh"


def test_a_gap_counts_against_the_job_as_uncovered_card_time() -> None:
    job = _job("3", ["nvidia:0", "nvidia:1"], [10])
    times = [0.0, 1.0, 2.0, 30.0, 31.0]
    meter = feed(EnergyMeter(), [frame(t, card(0, 100.0), card(1, 100.0), jobs=[job])
                                 for t in times])
    fig = meter.job("slurm:3")
    assert fig is not None
    assert fig.joules == pytest.approx(600.0)
    assert fig.covered_s == pytest.approx(6.0)
    assert fig.uncovered_s == pytest.approx(56.0)
