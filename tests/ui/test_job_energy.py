"""The dashboard's job line and card panel with job attribution and energy."""

from __future__ import annotations

from gpusat_tui.analysis.energy import EnergyMeter
from gpusat_tui.model import Frame, JobContext, ProbeSample
from gpusat_tui.ui.widgets.job_line import job_summary
from tests.ui.conftest import T0, ListSource, card, screen_text, settle
from tests.ui.test_app import make_app

JOB = JobContext(scheduler="slurm", job_id="4242", name="train\x1b]0;x\x07llm", user="alice",
                 step="0", pids=[10], card_ids=["nvidia:0"])


def frames(n: int, power: float | None, jobs: list[JobContext]) -> list[Frame]:
    probe = [ProbeSample(pid=10, card_id="nvidia:0", samples_per_s=1000.0)]
    return [Frame(t=T0 + i, seq=i, cards=[card(0, 90.0, power=power)], jobs=jobs, probes=probe)
            for i in range(n)]


def test_summary_of_one_job_and_of_several() -> None:
    meter = EnergyMeter()
    for f in frames(11, 500.0, [JOB]):
        meter.add(f)
    who, energy = job_summary([JOB], meter)
    assert who == 'slurm 4242 "trainllm" step 0 · alice'
    assert energy.startswith("5,000 J (500 W over 10 s)")
    assert "0.5 J/sample" in energy and "7.2 M samples/kWh" in energy
    other = JobContext(scheduler="plain", job_id="77", user="bob", card_ids=["nvidia:1"])
    who, energy = job_summary([JOB, other], meter)
    assert who == "alice, bob" and energy == "5,000 J"


async def test_the_line_counts_the_followed_job_once_beside_another_job() -> None:
    other = JobContext(scheduler="plain", job_id="77", user="bob", card_ids=["nvidia:0"])
    app = make_app(ListSource(frames(4, 400.0, [JOB, other])))
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 3)
        line = screen_text(app).splitlines()[0]
    # The line follows one job (the first found): its head counts it once, names it, and
    # never says "Job" beside a count of jobs as it did ("Job (2 cards) … 2 jobs (root)").
    assert line.startswith(" Job (1 card)"), line
    assert "2 jobs" not in line and 'slurm 4242 "trainllm"' in line, line
    assert "bob" not in line, line


async def test_job_line_shows_whose_job_and_its_energy_even_on_one_card() -> None:
    app = make_app(ListSource(frames(4, 400.0, [JOB])))
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 3)
        text = screen_text(app)
        assert app.job_bar.display is True
        assert "Job (1 card)" in text
        assert 'slurm 4242 "trainllm" step 0 · alice' in text
        assert "1,200 J (400 W over 3 s) · 0.4 J/sample" in text
        assert "1,200 J used" in text  # the card panel's title
        assert "\x1b]0;" not in text


async def test_a_card_without_power_figures_says_so() -> None:
    app = make_app(ListSource(frames(3, None, [])))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 2)
        assert "no power figures" in screen_text(app)
        assert app.job_bar.display is False  # one card, no job known: as before
