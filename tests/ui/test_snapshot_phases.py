"""SVG snapshot (top-level ``snapshots/``) of one card's view at 100x30 beside a probed trainer
whose stack sampler publishes: the process panel shows the step as phases and the hottest lines
of the user's code under the trainer. Built from constructed frames (cumulative counts that
grow poll by poll, as a probe's do), judged by the engine once and held, an injected clock.
Regenerate with ``pytest tests/ui/test_snapshot_phases.py --snapshot-update`` and look at it.
"""

from __future__ import annotations

from collections.abc import Callable

from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CodeLine, Frame, ProbeSample
from gpusat_tui.ui.app import GpusatApp
from tests.ui.conftest import T0, FixedTracker, ListSource, card, settle, trainer_with_workers

N = 60
#: Samples per poll (20 Hz) and their split over the step's phases, and the user's lines.
PER_POLL = {"data": 14, "forward": 2, "backward": 3, "optimizer": 1}
LINES = [("/home/u/train.py", 40, "collate", 12), ("/home/u/train.py", 88, "main", 3),
         ("/home/u/model.py", 17, "Net.forward", 2)]


def probe(i: int) -> ProbeSample:
    """Publication ``i``: the counts since the probe started, ``i + 1`` polls of them."""
    n = i + 1
    return ProbeSample(
        pid=4242, rank=0, world_size=1, card_id="nvidia:0", tie="device",
        data_wait_pct=70.0, data_wait_s=0.7 * n, elapsed_s=float(n), step_ms=458.0,
        batches=2 * n, steps=2 * n, last_batch_s=float(n), last_step_s=float(n),
        batch_size=32, batches_per_s=2.2, samples_per_s=70.0, age_s=0.3, framework="torch",
        stack_hz=20.0, stack_samples=20 * n,
        phase_samples={k: v * n for k, v in PER_POLL.items()},
        user_lines=tuple(CodeLine(file=f, line=ln, function=fn, samples=c * n)
                         for f, ln, fn, c in LINES),
        stack_phase="data", stack_still_s=0.0,
        stack_line=CodeLine(file="/home/u/train.py", line=40, function="collate"),
    )


def frames() -> list[Frame]:
    return [Frame(t=T0 + i, seq=i,
                  cards=[card(0, 35.0 + (i % 7), power=120.0, mem_used=30000.0)],
                  processes=trainer_with_workers(workers=2, cpu=20.0),
                  probes=[probe(i)]) for i in range(N)]


def test_snapshot_card_with_probe_phases(snap_compare: Callable[..., bool]) -> None:
    shown = frames()
    judged = judge(shown[-30:])
    app = GpusatApp(ListSource(shown), tracker=FixedTracker(cards=dict(judged.cards),
                                                            job=judged.job),
                    clock=lambda: T0 + N, interval=1.0, own_cpu=lambda: 0.4)

    async def run_before(pilot: object) -> None:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == N - 1)

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)
