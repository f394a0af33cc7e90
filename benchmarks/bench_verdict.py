"""CPU cost of the verdict engine per poll, run by hand.

    python benchmarks/bench_verdict.py [--polls 300] [--cards 1 4 8]

Feeds the ``imbalanced_4_cards`` scenario (tests/scenarios.py, widened or narrowed to
``--cards`` cards, with its DDP processes) into a `VerdictTracker` at 1 Hz with the default 30 s
window, and times ``push`` with ``time.process_time`` (this process's CPU), plain (as ``check``
and ``report`` call it) and focused on one card and the job (as the dashboard does). Also times
one plain ``judge`` over a full 30-poll window. Prints the figures; asserts nothing.

    python benchmarks/bench_verdict.py --share [--compare DIR] [--passes 3] [--seconds 30]

The verdict's share of the dashboard's CPU: the dashboard at 1 Hz in a 160x50 tmux pane with
bench_ui's 8 fake NVIDIA cards, started through ``verdict_timed_app.py`` (which adds up the CPU
of the tracker's calls); after ``--warm`` seconds (a full verdict window), the tracker's CPU
over ``--seconds`` against the whole process's (every thread, as the scheduler counts it).
``--compare DIR``: the same for another checkout (``git worktree`` of main), passes interleaved.

    valgrind --tool=cachegrind --cache-sim=no python benchmarks/bench_verdict.py \
        --instructions N [--cards 8] [--dashboard] [--plain] [--view overview|card]

Only pushes, for an instruction count (timings on a shared 2-core machine moved by 2x between
identical runs; instructions do not): a full 30 s window, then ``N`` (at most 64) more pushes,
focused as the dashboard calls it in ``--view`` (the card view by default; ``--plain``: no
focus). The count of ``N`` minus that of 0, over ``N``,
is a push's. ``--dashboard``: bench_ui's 8 fake cards (no processes) with the dashboard's
``hold_cause``, instead of the straggler scenario. ``BENCH_TREE=DIR`` measures the package of
another checkout (a worktree of main) with this script.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from statistics import mean, median

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# ``BENCH_TREE=DIR``: measure the package of another checkout (main) with this script.
sys.path.insert(0, os.environ.get("BENCH_TREE", str(ROOT)))

from gpusat_tui.analysis.verdicts.tracker import VerdictTracker  # noqa: E402
from gpusat_tui.analysis.verdicts.verdict import judge  # noqa: E402
from gpusat_tui.model import Frame  # noqa: E402
from tests.scenarios import SCENARIOS  # noqa: E402


def widen(frames: list[Frame], cards: int) -> list[Frame]:
    """The scenario's 4 cards, repeated or cut to ``cards`` cards."""
    out = []
    for frame in frames:
        base = frame.cards
        wide = [
            base[i % len(base)].model_copy(update={"index": i}) for i in range(cards)
        ]
        out.append(frame.model_copy(update={"cards": wide}))
    return out


def share(tree: Path, label: str, seconds: float, warm: float, root: Path,
          view: str | None = None) -> None:
    """One pass of the dashboard from ``tree``: the tracker's share of its CPU (``view``:
    the one shown; None: the dashboard's own choice, the overview for 8 cards)."""
    from benchmarks.bench_ui import Pane, make_bin, run_ns

    count = root / f"{label}.verdict-ns"
    count.write_bytes(b"")
    argv = [sys.executable, str(ROOT / "benchmarks" / "verdict_timed_app.py"), str(count),
            "--interval", "1", *(["--view", view] if view else [])]
    pane = Pane(root, make_bin(root, hung=False), label, (160, 50), tree, argv)

    def verdict_ns() -> int:
        text = count.read_text().strip()
        return int(text) if text else 0

    try:
        pane.wait_for("▸")
        time.sleep(warm)
        v0, p0, w0 = verdict_ns(), run_ns(pane.proc.pid), time.perf_counter()
        time.sleep(seconds)
        v1, p1, w1 = verdict_ns(), run_ns(pane.proc.pid), time.perf_counter()
    finally:
        pane.close()
    if p0 is None or p1 is None:
        print(f"{label}: the dashboard's CPU could not be read")
        return
    own, verdict, wall = (p1 - p0) / 1e6, (v1 - v0) / 1e6, w1 - w0
    print(f"{label:8s} dashboard {own / wall:6.2f} ms CPU/s, verdict {verdict / wall:5.2f} ms "
          f"CPU/s: {100 * verdict / own:5.1f} % of it; load {os.getloadavg()[0]:.1f}",
          flush=True)


def dashboard_frames(n: int) -> list[Frame]:
    """What the dashboard reads from bench_ui's fake nvidia-smi: 8 cards, no processes."""
    from benchmarks.bench_ui import eight_cards
    from gpusat_tui.model import CardReading, HostSample
    from tests.scenarios import T0

    return [
        Frame(t=T0 + step, seq=step, host=HostSample(cpu_pct=47.5, iowait_pct=0.0, cpu_count=2),
              cards=[CardReading(vendor="nvidia", index=c.index, name=c.name, tool="nvidia-smi",
                                 util_pct=c.util_pct, mem_used_mib=c.mem_used_mib,
                                 mem_total_mib=c.mem_total_mib, power_w=c.power_w,
                                 power_cap_w=c.power_cap_w, temp_c=c.temp_c,
                                 extras={"throttle": ""})
                     for c in eight_cards(step)])
        for step in range(n)
    ]


#: Frames built by ``--instructions``, whatever N: building them is counted with the pushes,
#: so the runs for N and for 0 must build the same (a frame of 8 cards costs about as many
#: instructions as a push).
BUILT = 32 + 64


def instructions(pushes: int, cards: int, dashboard: bool, plain: bool, view: str) -> None:
    """A full window, then ``pushes`` more: for an instruction counter around the process."""
    if pushes > BUILT - 32:
        raise SystemExit(f"--instructions: at most {BUILT - 32} pushes")
    frames = dashboard_frames(BUILT) if dashboard else widen(
        SCENARIOS["imbalanced_4_cards"].frames(BUILT), cards)
    frames = frames[:32 + pushes]
    tracker = VerdictTracker(hold_cause=dashboard)
    # As the dashboard calls it: the job in focus, and in the card view the selected card.
    focus = None if plain else (
        {"job"} if view == "overview" else {"job", frames[-1].cards[0].id}
    )
    for frame in frames:
        tracker.push(frame, focus=focus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--polls", type=int, default=300)
    parser.add_argument("--cards", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--share", action="store_true",
                        help="the verdict's share of the running dashboard's CPU")
    parser.add_argument("--compare", type=Path, default=None)
    parser.add_argument("--passes", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warm", type=float, default=35.0)
    parser.add_argument("--instructions", type=int, default=None, metavar="N")
    parser.add_argument("--dashboard", action="store_true")
    parser.add_argument("--plain", action="store_true")
    parser.add_argument("--view", choices=("overview", "card"), default=None,
                        help="--instructions: the focus of that view (default: card); "
                        "--share: the view shown (default: the dashboard's choice)")
    args = parser.parse_args()
    if args.instructions is not None:
        instructions(args.instructions, args.cards[0], args.dashboard, args.plain,
                     args.view or "card")
        return
    if args.share:
        with tempfile.TemporaryDirectory() as tmp:
            for n in range(args.passes):
                if args.compare is not None:
                    share(args.compare, f"compare{n}", args.seconds, args.warm, Path(tmp),
                          args.view)
                share(ROOT, f"this{n}", args.seconds, args.warm, Path(tmp), args.view)
        return
    scenario = SCENARIOS["imbalanced_4_cards"]
    base = scenario.frames(args.polls)
    print(f"{'cards':>5}  {'push mean':>10}  {'push median':>11}  {'push max':>9}  "
          f"{'judge(30)':>9}  {'CPU at 1 Hz':>11}  {'focused push':>12}")
    for cards in args.cards:
        frames = widen(base, cards)
        tracker = VerdictTracker()
        costs = []
        for frame in frames:
            start = time.process_time()
            tracker.push(frame)
            costs.append(time.process_time() - start)
        steady = costs[30:] or costs
        # As the dashboard calls it: full figures for the selected card and the job only.
        focused_tracker = VerdictTracker()
        focus = {"job", frames[-1].cards[0].id}
        focused = []
        for frame in frames:
            start = time.process_time()
            focused_tracker.push(frame, focus=focus)
            focused.append(time.process_time() - start)
        focused = focused[30:] or focused
        start = time.process_time()
        for _ in range(20):
            judge(frames[:30])
        one_judge = (time.process_time() - start) / 20
        print(
            f"{cards:>5}  {mean(steady) * 1e3:>8.2f}ms  {median(steady) * 1e3:>9.2f}ms  "
            f"{max(steady) * 1e3:>7.2f}ms  {one_judge * 1e3:>7.2f}ms  "
            f"{mean(steady) * 100:>10.2f}%  {mean(focused) * 1e3:>10.2f}ms"
        )


if __name__ == "__main__":
    main()
