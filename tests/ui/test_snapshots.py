"""SVG snapshots (top-level ``snapshots/``): one per verdict; 8 cards in the overview (160x50,
100x30), one card's full charts, the card list; no tool; a narrow and a tiny pane.

Deterministic: fixed frames, fixed verdicts (FixedTracker), an injected clock, a frozen
own-CPU figure, fixed terminal sizes, and nothing host- or time-dependent on screen.
Regenerate with ``pytest tests/ui/test_snapshots.py --snapshot-update`` and look at them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from gpusat_tui.model import CardReading, ProbeSample, ProcessSample, Verdict, VerdictKind
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.tracking import UnknownTracker
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


def wave(i: int, base: float, amp: float, period: float = 9.0, top: float = 100.0) -> float:
    return max(0.0, min(top, base + amp * math.sin(2 * math.pi * i / period)))


def watts(i: int, base: float, amp: float) -> float:
    return round(wave(i, base, amp, top=1000.0))


SCENARIOS: dict[str, tuple[Callable[[int], list[CardReading]], list[ProcessSample], Verdict]] = {
    "saturated": (
        lambda i: [card(0, wave(i, 97, 2), power=watts(i, 640, 20), temp=71.0)],
        trainer_with_workers(workers=4, state="sleeping"),
        Verdict(kind="saturated", confidence=0.9,
                why=["GPU-Util 97% (min 95%) over 30 s", "power 640 W = 91% of the 700 W cap"],
                advice=["The card is the bottleneck: a bigger batch or mixed precision may help"]),
    ),
    "starving": (
        lambda i: [card(0, 100.0 if i % 5 == 0 else 8.0, power=watts(i, 180, 30), temp=48.0)],
        trainer_with_workers(workers=4, cpu=99.0, state="running"),
        Verdict(kind="starving", cause="input-bound", confidence=0.8,
                why=["GPU-Util 26% mean, in bursts", "4 DataLoader workers at 40-43% CPU each"],
                advice=["Raise num_workers (8 cores idle)", "pin_memory=True, persistent_workers"]),
    ),
    "fragmenting": (
        lambda i: [card(0, wave(i, 92, 6, 3), power=watts(i, 260, 25), temp=55.0)],
        trainer_with_workers(workers=2, state="sleeping"),
        Verdict(kind="fragmenting", confidence=0.7,
                why=["GPU-Util 92% but power only 37% of cap", "many short kernels, host syncs"],
                advice=["Fuse small ops (torch.compile), avoid .item() in the loop"]),
    ),
    "imbalanced": (
        lambda i: [card(0, 95.0, power=600.0), card(1, 96.0, power=610.0),
                   card(2, wave(i, 40, 30), power=250.0), card(3, 94.0, power=590.0)],
        trainer_with_workers(workers=4),
        Verdict(kind="imbalanced", confidence=0.8,
                why=["card 2 at 40% while the others are at 95%"],
                advice=["Check the data shard and sampler of rank 2"]),
    ),
    "idle": (
        lambda i: [card(0, 0.0, mem_used=512.0, power=62.0, temp=34.0)],
        [],
        Verdict(kind="idle", confidence=0.9, why=["GPU-Util 0% and 62 W for 30 s"],
                advice=["Nothing is running here: is the job on another card?"]),
    ),
    "unknown": (
        lambda i: [card(0, None, mem_used=None, power=None, cap=None, temp=None,
                        stale_s=14.0 if i == N_FRAMES - 1 else None)],
        [],
        Verdict(kind="unknown", why=["no utilisation figure from the tool (N/A)"],
                advice=["Try --tool with a newer driver's tool"]),
    ),
}


def scenario_app(kind: VerdictKind) -> tuple[GpusatApp, ListSource]:
    cards_at, procs, verdict = SCENARIOS[kind]
    frames = frames_for(N_FRAMES, cards_at, processes=procs)
    n_cards = len(frames[0].cards)
    if kind == "imbalanced":
        tracker = FixedTracker(
            cards={"nvidia:2": Verdict(kind="starving", cause="unknown", why=["waits"])},
            default=Verdict(kind="saturated"), job=verdict)
    else:
        tracker = FixedTracker(default=verdict, job=verdict)
    assert n_cards >= 1
    source = ListSource(frames)
    app = GpusatApp(source, tracker=tracker, clock=lambda: T0 + N_FRAMES, interval=1.0,
                    own_cpu=lambda: 0.4)
    return app, source


def wait_for_all(app: GpusatApp, source: ListSource, n: int) -> Callable[..., object]:
    async def run_before(pilot: object) -> None:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == n - 1)

    return run_before


@pytest.mark.parametrize("kind", list(SCENARIOS))
def test_snapshot_verdict(kind: VerdictKind, snap_compare: Callable[..., bool]) -> None:
    app, source = scenario_app(kind)
    press = ["w"] if kind != "imbalanced" else ["right", "right", "w"]
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
        for frame in frames_for(N_FRAMES, with_gpm, processes=trainer_with_workers(workers=6))
    ]
    tracker = FixedTracker(
        cards={f"nvidia:{j}": Verdict(kind=k, cause="input-bound" if k == "starving" else None,
                                      why=[f"card {j}: {k}"])
               for j, k in enumerate(EIGHT_KINDS)},
        job=Verdict(kind="imbalanced", why=["cards 0-1 wait for input while 4-7 are saturated"]),
    )
    source = ListSource(frames)
    app = GpusatApp(source, tracker=tracker, clock=lambda: T0 + N_FRAMES, interval=1.0,
                    own_cpu=lambda: 0.4, view=view)
    return app, source


@pytest.mark.parametrize("size", [(160, 50), (100, 30)], ids=["160x50", "100x30"])
def test_snapshot_overview(size: tuple[int, int], snap_compare: Callable[..., bool]) -> None:
    # The default with 8 cards in both panes: every card's block; the selection on card 3.
    app, source = eight_card_app()
    assert snap_compare(app, press=["right", "down"], terminal_size=size,
                        run_before=wait_for_all(app, source, N_FRAMES))


def test_snapshot_full_card_charts(snap_compare: Callable[..., bool]) -> None:
    # Card 6 opened from the overview: its three charts fill the panel, GPM figures beside
    # GPU-Util, throttled by its power cap; the probe's figures in the process panel.
    app, source = eight_card_app()
    assert snap_compare(app, press=["down", "down", "down", "enter"], terminal_size=(160, 50),
                        run_before=wait_for_all(app, source, N_FRAMES))


def test_snapshot_card_list_view(snap_compare: Callable[..., bool]) -> None:
    # The list of cards beside the selected one, chosen with o; no probe here.
    app, source = eight_card_app(view="card", probes=False)
    assert snap_compare(app, press=["down", "down", "down", "down"], terminal_size=(100, 30),
                        run_before=wait_for_all(app, source, N_FRAMES))


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
                                                                             N_FRAMES))


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
