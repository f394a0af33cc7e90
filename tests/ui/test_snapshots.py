"""SVG snapshots (top-level ``snapshots/``): one per verdict; 8 cards in the overview (160x50,
100x30), one card's full charts, the card list; no tool; a narrow and a tiny pane.

Deterministic: fixed frames (the labelled scenarios' for the verdicts), the verdicts the
engine gives those frames (judged once on the scenario's last 30 s, then held by a
FixedTracker), an injected clock, a frozen own-CPU figure, fixed terminal sizes, and nothing
host- or time-dependent on screen.
Regenerate with ``pytest tests/ui/test_snapshots.py --snapshot-update`` and look at them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CardReading, Frame, ProbeSample, Verdict, VerdictKind
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.tracking import UnknownTracker
from tests.scenarios import SCENARIOS
from tests.ui.conftest import (
    T0,
    FixedTracker,
    ListSource,
    card,
    frames_for,
    settle,
    trainer_with_workers,
)

N_FRAMES = 60
#: Polls of history for the eight-card views: more than the widest chart's columns (135 at
#: 160x50), so the charts are drawn from their left edge up to now, as after a few minutes.
HISTORY = 150


def wave(i: int, base: float, amp: float, period: float = 9.0, top: float = 100.0) -> float:
    return max(0.0, min(top, base + amp * math.sin(2 * math.pi * i / period)))


def watts(i: int, base: float, amp: float) -> float:
    return round(wave(i, base, amp, top=1000.0))


#: The labelled scenario (tests/scenarios.py) each verdict's snapshot shows; ``unknown`` is a
#: card whose tool gives no figure (N/A) and goes stale on the last poll.
SCENARIO_OF: dict[str, str | None] = {
    "saturated": "saturated_steady",
    "starving": "starving_input_bound",
    "fragmenting": "fragmenting",
    "imbalanced": "imbalanced_4_cards",
    "idle": "idle",
    "unknown": None,
}


def scenario_frames(kind: str) -> list[Frame]:
    name = SCENARIO_OF[kind]
    if name is not None:
        return SCENARIOS[name].frames(N_FRAMES, t0=T0)
    return frames_for(N_FRAMES, lambda i: [
        card(0, None, mem_used=None, power=None, cap=None, temp=None,
             stale_s=14.0 if i == N_FRAMES - 1 else None)])


def scenario_app(kind: VerdictKind) -> tuple[GpusatApp, ListSource]:
    """The scenario's frames, and the verdicts the engine gives them: judged on the
    scenario's last 30 s (the dashboard's evidence window), its own words in the why box."""
    frames = scenario_frames(kind)
    judged = judge(frames[-30:])
    tracker = FixedTracker(cards=dict(judged.cards), job=judged.job)
    source = ListSource(frames)
    app = GpusatApp(source, tracker=tracker, clock=lambda: T0 + N_FRAMES, interval=1.0,
                    own_cpu=lambda: 0.4)
    return app, source


def wait_for_all(app: GpusatApp, source: ListSource, n: int) -> Callable[..., object]:
    async def run_before(pilot: object) -> None:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == n - 1)

    return run_before


@pytest.mark.parametrize("kind", list(SCENARIO_OF))
def test_snapshot_verdict(kind: VerdictKind, snap_compare: Callable[..., bool]) -> None:
    app, source = scenario_app(kind)
    # imbalanced: the straggler (card 3) selected
    press = ["w"] if kind != "imbalanced" else ["right", "right", "right", "w"]
    assert snap_compare(app, press=press, terminal_size=(80, 24),
                        run_before=wait_for_all(app, source, N_FRAMES))


def eight_cards(i: int) -> list[CardReading]:
    return [card(j, wave(i + j, 20 + 10 * j, 8), power=100.0 + 70 * j, temp=40.0 + 3 * j,
                 mem_used=8192.0 * (j + 1)) for j in range(8)]


EIGHT_KINDS: list[VerdictKind] = ["starving", "starving", "fragmenting", "fragmenting",
                                  "saturated", "saturated", "saturated", "saturated"]


def with_gpm(i: int) -> list[CardReading]:
    """Eight cards as NVML reads them with profiling counters (GPM) and throttle reasons."""
    cards = eight_cards(i)
    out = []
    for j, reading in enumerate(cards):
        util = reading.util_pct or 0.0
        extras: dict[str, float | str | None] = {
            "sm_active_pct": round(util * 0.6), "tensor_active_pct": round(util * 0.3),
        }
        if j >= 6:
            extras["throttle"] = "power-cap"
        out.append(reading.model_copy(update={"extras": extras}))
    return out


def eight_card_app(view: str | None = None, probes: bool = True) -> tuple[GpusatApp, ListSource]:
    def frame_probes(i: int) -> list[ProbeSample]:
        return [ProbeSample(pid=4242 + j, rank=j, world_size=8, card_id=f"nvidia:{j}",
                            data_wait_pct=(60.0 if j < 2 else 4.0) + j, step_ms=210.0 + j,
                            samples_per_s=600.0 - 10 * j, age_s=0.4) for j in range(8)]

    frames = [
        frame.model_copy(update={"probes": frame_probes(frame.seq) if probes else []})
        for frame in frames_for(HISTORY, with_gpm, processes=trainer_with_workers(workers=6))
    ]
    tracker = FixedTracker(
        cards={f"nvidia:{j}": Verdict(kind=k, cause="input-bound" if k == "starving" else None,
                                      why=[f"card {j}: {k}"])
               for j, k in enumerate(EIGHT_KINDS)},
        job=Verdict(kind="imbalanced", why=["cards 0-1 wait for input while 4-7 are saturated"]),
    )
    source = ListSource(frames)
    app = GpusatApp(source, tracker=tracker, clock=lambda: T0 + HISTORY, interval=1.0,
                    own_cpu=lambda: 0.4, view=view)
    return app, source


@pytest.mark.parametrize("size", [(160, 50), (100, 30)], ids=["160x50", "100x30"])
def test_snapshot_overview(size: tuple[int, int], snap_compare: Callable[..., bool]) -> None:
    # The default with 8 cards in both panes: every card's block; the selection on card 3.
    app, source = eight_card_app()
    assert snap_compare(app, press=["right", "down"], terminal_size=size,
                        run_before=wait_for_all(app, source, HISTORY))


def test_snapshot_full_card_charts(snap_compare: Callable[..., bool]) -> None:
    # Card 6 opened from the overview: its three charts fill the panel, GPM figures beside
    # GPU-Util, throttled by its power cap; the probe's figures in the process panel.
    app, source = eight_card_app()
    assert snap_compare(app, press=["down", "down", "down", "enter"], terminal_size=(160, 50),
                        run_before=wait_for_all(app, source, HISTORY))


def test_snapshot_card_list_view(snap_compare: Callable[..., bool]) -> None:
    # The list of cards beside the selected one, chosen with o; no probe here.
    app, source = eight_card_app(view="card", probes=False)
    assert snap_compare(app, press=["down", "down", "down", "down"], terminal_size=(100, 30),
                        run_before=wait_for_all(app, source, HISTORY))


def test_snapshot_narrow_pane(snap_compare: Callable[..., bool]) -> None:
    frames = frames_for(N_FRAMES, lambda i: eight_cards(i)[:4],
                        processes=trainer_with_workers(workers=2))
    tracker = FixedTracker(default=Verdict(kind="starving", cause="io-bound"),
                           job=Verdict(kind="starving", why=["all 4 cards wait on I/O"]))
    source = ListSource(frames)
    app = GpusatApp(source, tracker=tracker, clock=lambda: T0 + N_FRAMES, interval=1.0,
                    own_cpu=lambda: 0.4)
    assert snap_compare(app, terminal_size=(60, 15), run_before=wait_for_all(app, source,
                                                                              N_FRAMES))


def test_snapshot_tiny_pane(snap_compare: Callable[..., bool]) -> None:
    app, source = eight_card_app()
    assert snap_compare(app, terminal_size=(20, 5), run_before=wait_for_all(app, source,
                                                                             HISTORY))


def test_snapshot_no_tool(snap_compare: Callable[..., bool]) -> None:
    message = (
        "No accelerator tool found. Searched:\n"
        "  nvml: in-process library (libnvidia-ml.so.1 not found)\n"
        "  nvidia-smi: $GPUSAT_TOOL_NVIDIA_SMI, PATH, /usr/bin\n"
        "  hy-smi: $GPUSAT_TOOL_HY_SMI, PATH, /opt/hyhal/bin\n"
        "Use --tool VENDOR=PATH (or GPUSAT_TOOL_<TOOL>=PATH) to point at one."
    )
    app = GpusatApp(None, no_tool=message, tracker=UnknownTracker(), own_cpu=lambda: 0.0)
    assert snap_compare(app, terminal_size=(80, 24))
