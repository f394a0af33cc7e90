"""One data-wait figure per screen, named by its span: the card's title, the process panel
and the why quote the same windowed figure (analysis.probe_rates), not the probe's latest
interval beside the window's."""

from __future__ import annotations

import re

from gpusat_tui.model import CardReading, Frame, ProbeSample, ProcessSample
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.tracking import default_tracker
from tests.ui.conftest import ListSource, screen_text, settle

N = 40


def frames() -> list[Frame]:
    card = CardReading(vendor="nvidia", index=0, name="NVIDIA H100", util_pct=30.0,
                       power_w=100.0, power_cap_w=400.0, mem_used_mib=50000.0,
                       mem_total_mib=80000.0)
    procs = [ProcessSample(pid=100, role="trainer", name="python train.py", cpu_pct=30.0,
                           card_ids=["nvidia:0"]),
             ProcessSample(pid=101, role="dataloader_worker", name="pt_data_worker",
                           cpu_pct=99.0, trainer_pid=100)]
    out = []
    for i in range(N):
        # Each interval's own figure swings 20 % / 80 %; over any span the wait is 50 %.
        probe = ProbeSample(pid=100, card_id="nvidia:0", tie="device",
                            data_wait_pct=20.0 if i % 2 else 80.0, step_ms=200.0,
                            batches=5 * (i + 1), steps=5 * (i + 1), data_wait_s=0.5 * i,
                            elapsed_s=float(i), last_batch_s=float(i), last_step_s=float(i),
                            batch_size=32, age_s=0.2)
        out.append(Frame(t=1000.0 + i, seq=i, cards=[card], processes=procs, probes=[probe]))
    return out


async def test_title_process_panel_and_why_quote_one_wait_with_its_span() -> None:
    app = GpusatApp(ListSource(frames()), tracker=default_tracker(), view="card")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == N - 1,
                     timeout=30.0)
        await pilot.press("w")
        await settle(pilot, lambda: "data wait" in screen_text(app))
        text = screen_text(app)
    figures = set(re.findall(r"wait (\d+) ?%", text))
    assert figures == {"50"}, text
    spans = set(re.findall(r"wait 50% over the last (\d+) s", text))
    quoted = set(re.findall(r"data wait 50 % over the last (\d+) s", text))
    assert spans and spans == quoted, text


def two_card_frames(n: int = N) -> list[Frame]:
    """Two ranks, one per card, each waiting 50 %; card 1 drops to 20 % half-way, so the job's
    verdict (and the window its figures come from) changes while card 0's holds."""
    out = []
    for i in range(n):
        late = i >= n // 2
        cards = [CardReading(vendor="nvidia", index=j, name="NVIDIA H100",
                             util_pct=20.0 if (j == 1 and late) else 92.0,
                             power_w=120.0 if (j == 1 and late) else 330.0, power_cap_w=400.0,
                             mem_used_mib=50000.0, mem_total_mib=80000.0) for j in range(2)]
        procs = [ProcessSample(pid=100 * (j + 1), role="trainer", name="python train.py",
                               cpu_pct=30.0, card_ids=[f"nvidia:{j}"]) for j in range(2)]
        probes = [ProbeSample(pid=100 * (j + 1), card_id=f"nvidia:{j}", tie="device",
                              data_wait_pct=20.0 if i % 2 else 80.0, step_ms=200.0,
                              batches=5 * (i + 1), steps=5 * (i + 1), data_wait_s=0.5 * i,
                              elapsed_s=float(i), last_batch_s=float(i),
                              last_step_s=float(i), batch_size=32, age_s=0.2)
                  for j in range(2)]
        out.append(Frame(t=1000.0 + i, seq=i, cards=cards, processes=procs, probes=probes))
    return out


async def test_card_view_shows_the_cards_own_wait_and_the_job_line_none() -> None:
    """The job's window (since its verdict held) and the card's are not the same span: the
    card view quotes the card's, and the job line leaves its own out."""
    app = GpusatApp(ListSource(two_card_frames()), tracker=default_tracker(), view="card")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == N - 1,
                     timeout=30.0)
        await pilot.pause()
        card_view = screen_text(app)
        await pilot.press("o")
        await settle(pilot, lambda: app.overview)
        overview = screen_text(app)
    for text in (card_view, overview):
        spans = set(re.findall(r"over the last (\d+) s", text))
        assert len(spans) == 1, text
    job_line = card_view.splitlines()[0]
    assert job_line.startswith(" Job (2 cards)") and "wait" not in job_line, job_line
    assert "no probe" not in job_line
    assert "wait" in overview.splitlines()[0]  # the overview's one figure is the job's


def no_tool_frames(n: int = N) -> list[Frame]:
    """No card: one trainer whose published step time swings 50 / 150 ms and samples/s 40 / 20
    from one interval to the next, while over any span it takes 5 steps a second."""
    procs = [ProcessSample(pid=100, role="trainer", name="python train.py", cpu_pct=30.0)]
    out = []
    for i in range(n):
        probe = ProbeSample(pid=100, data_wait_pct=20.0 if i % 2 else 80.0,
                            step_ms=50.0 if i % 2 else 150.0,
                            samples_per_s=40.0 if i % 2 else 20.0,
                            batches_per_s=10.0 if i % 2 else 5.0,
                            batches=5 * (i + 1), steps=5 * (i + 1), data_wait_s=0.5 * i,
                            elapsed_s=float(i), last_batch_s=float(i), last_step_s=float(i),
                            batch_size=32, age_s=0.2)
        out.append(Frame(t=1000.0 + i, seq=i, processes=procs, probes=[probe]))
    return out


async def test_no_tool_title_and_why_quote_one_step_and_rate() -> None:
    app = GpusatApp(ListSource(no_tool_frames()), tracker=default_tracker(), view="card")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == N - 1,
                     timeout=30.0)
        await pilot.press("w")
        await settle(pilot, lambda: "step" in screen_text(app))
        await pilot.pause()
        text = screen_text(app)
    steps = set(re.findall(r"step (\d+) ms", text))
    assert len(steps) == 1, text
    rates = set(re.findall(r"([\d.,]+) (?:samples|batches)/s", text))
    assert len(rates) == 1, text


def one_probed_card_frames(n: int = N) -> list[Frame]:
    """Two cards, a probed trainer on card 0 only."""
    out = []
    for i in range(n):
        cards = [CardReading(vendor="nvidia", index=j, name="NVIDIA H100", util_pct=30.0,
                             power_w=100.0, power_cap_w=400.0, mem_used_mib=50000.0,
                             mem_total_mib=80000.0) for j in range(2)]
        procs = [ProcessSample(pid=100, role="trainer", name="python train.py", cpu_pct=30.0,
                               card_ids=["nvidia:0"])]
        probe = ProbeSample(pid=100, card_id="nvidia:0", tie="device", data_wait_pct=70.0,
                            step_ms=200.0, batches=5 * (i + 1), steps=5 * (i + 1),
                            data_wait_s=0.7 * i, elapsed_s=float(i), last_batch_s=float(i),
                            last_step_s=float(i), batch_size=32, age_s=0.2)
        out.append(Frame(t=1000.0 + i, seq=i, cards=cards, processes=procs, probes=[probe]))
    return out


async def test_the_job_line_quotes_no_other_card_s_wait_beside_a_card() -> None:
    app = GpusatApp(ListSource(one_probed_card_frames()), tracker=default_tracker(),
                    view="card")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == N - 1,
                     timeout=30.0)
        await pilot.press("right")
        await settle(pilot, lambda: app.selected == "nvidia:1")
        await pilot.pause()
        text = screen_text(app)
    job_line = text.splitlines()[0]
    assert job_line.startswith(" Job (2 cards)"), text
    assert "wait" not in job_line, job_line
