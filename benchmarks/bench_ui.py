"""Benchmark: the dashboard's own CPU in tmux at 1 Hz with 8 fake cards, per pane size and view.

Run by hand:  python benchmarks/bench_ui.py [--seconds 40] [--compare DIR [--passes 3]]
              [--sizes 100x30] [--hung]
              [--breakdown [--polls 20]]  (``--sizes --breakdown``: the in-process breakdown alone)

Figures:
1. Start-up: from the tmux pane's start to the first live figures on screen (wall time), and
   the CPU the dashboard process spent until then (imports, first layout and paint).
2. The monitor process's CPU over ``--seconds`` at 1 Hz with 8 fake NVIDIA cards whose figures
   change every poll (the fake nvidia-smi plays ``-lms``: read as a stream, the default path),
   in a detached tmux pane of 100x30, 160x50 and 240x70, in the overview
   (every card's block) and in the single-card view (``o``). Its own CPU (all its threads, as
   the scheduler counts it in ``/proc/<pid>/task/*/schedstat``) is reported apart from the CPU
   of the tool processes it ran (reaped children and the running stream child, tick-sampled).
   ``--compare DIR``: the same sizes and views, back to back, for another checkout (e.g.
   ``git archive main``), run from DIR with this interpreter, so both see the same load.
3. With a second tool (hy-smi) that hangs on every call (``--hung``; killed at its timeout; once
   it has hung twice in a row the live source backs off): CPU and key-press-to-repaint latency
   (send Right, poll ``capture-pane`` every 5 ms until the selection moved; includes tmux's
   own delay: an upper bound).
"""

from __future__ import annotations

import argparse
import compileall
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fakes import FakeCard  # noqa: E402
from tests.fakes.tool import FakeBin, Step  # noqa: E402


def eight_cards(step: int) -> list[FakeCard]:
    return [
        FakeCard(
            index=j,
            name=f"Fake H100 {j}",
            util_pct=round(50 + 45 * math.sin(step / 5 + j)),
            mem_used_mib=8192.0 * (j + 1),
            mem_total_mib=81920.0,
            power_w=round(300 + 250 * math.sin(step / 7 + j)),
            power_cap_w=700.0,
            temp_c=40.0 + j + step % 5,
        )
        for j in range(8)
    ]


def make_bin(root: Path, hung: bool) -> FakeBin:
    from gpusat_tui.collectors.nvidia_smi import SPECS as NVIDIA

    fake = FakeBin(root / ("bin-hung" if hung else "bin"))
    fake.add_for_spec(NVIDIA[0], [eight_cards(i) for i in range(120)], loop_flag="-lms")
    if hung:
        from gpusat_tui.collectors.hy_smi import SPECS as HYGON

        fake.add_for_spec(HYGON[0], [Step(cards=(FakeCard(0),), mode="hang")])
    return fake


class Pane:
    """gpusat-tui running in a detached tmux session on a private server."""

    def __init__(self, root: Path, fake: FakeBin, name: str, size: tuple[int, int] = (100, 30),
                 app_dir: Path = REPO, argv: list[str] | None = None,
                 fake_nvml: bool = False) -> None:
        self.sock = str(root / f"{name}.sock")
        self.env = fake.env({"TERM": "xterm-256color"})
        # Run from app_dir with it first on the path: ``-m gpusat_tui`` imports that tree.
        self.env["PYTHONPATH"] = str(app_dir)
        if fake_nvml:
            self.env["PYTHONPATH"] += os.pathsep + str(REPO / "benchmarks" / "fake_nvml_site")
            self.env["FAKE_NVML_REPO"] = str(REPO)
        command = shlex.join(argv or [sys.executable, "-m", "gpusat_tui", "--interval", "1"])
        self.started = time.perf_counter()
        # Everything the app writes to its terminal is copied to this file by tmux itself
        # (``pipe-pane -O``: the pane's output), so its growth is the bytes a terminal (an
        # SSH link) would carry.
        self.written = root / f"{name}.out"
        self.written.write_bytes(b"")
        self.tmux("new-session", "-d", "-s", "b", "-x", str(size[0]), "-y", str(size[1]),
                  "-c", str(app_dir), command)
        try:
            self.tmux("pipe-pane", "-O", "-t", "b", f"cat >> {shlex.quote(str(self.written))}")
            pane_pid = int(self.tmux("display", "-p", "-t", "b", "#{pane_pid}").strip())
            self.server_pid = int(self.tmux("display", "-p", "#{pid}").strip())
            self.proc = self._find_python(psutil.Process(pane_pid))
        except BaseException:
            self.close()  # never leave a tmux server (and the dashboard) running
            raise

    @staticmethod
    def _find_python(pane: psutil.Process) -> psutil.Process:
        # tmux runs the command through sh, which may or may not exec it (and may not yet).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for proc in [pane, *pane.children(recursive=True)]:
                if "python" in proc.name() or "nvitop" in proc.name():
                    return proc
            time.sleep(0.05)
        raise RuntimeError("gpusat-tui did not start in the tmux pane")

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", self.sock, *args], env=self.env, check=True,
                              capture_output=True, text=True, timeout=10).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "b")

    def wait_for(self, text: str, timeout: float = 30.0, poll: float = 0.05) -> float:
        start = time.perf_counter()
        while text not in self.screen():
            if time.perf_counter() - start > timeout:
                raise RuntimeError(f"{text!r} never appeared:\n{self.screen()}")
            time.sleep(poll)
        return time.perf_counter() - start

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], env=self.env,
                       capture_output=True)


def run_ns(pid: int) -> int | None:
    """CPU time of every thread of ``pid`` in ns, from the scheduler (``/proc/*/schedstat``).

    The tick-sampled user/system times psutil reads move in 10 ms steps and charge a process
    that runs in short bursts by chance: at ~1 % of a core, two 60 s runs of the same thing
    differed by 20 %. The scheduler's own count is exact. None where it is not available.
    """
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total


def live_children_cpu(proc: psutil.Process) -> dict[int, float]:
    """CPU seconds of each running child of ``proc``, with the children it reaped itself."""
    out: dict[int, float] = {}
    for child in proc.children():
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        out[child.pid] = t.user + t.system + t.children_user + t.children_system
    return out


class Cost(NamedTuple):
    """What the dashboard cost over a window: its own CPU (% of a core, ms per second), the
    tools' it ran, the bytes per second it wrote to its terminal and the tmux server's CPU
    (ms per second) to take them in and draw them."""

    own_pct: float
    tools_pct: float
    own_ms: float
    bytes_s: float
    tmux_ms: float


def measure_cpu(pane: Pane, seconds: float) -> Cost:
    """The dashboard's `Cost` over ``seconds``.

    The tools' CPU is that of the children reaped meanwhile plus what the running ones (a
    stream such as nvidia-smi ``-lms``, reaped only when the dashboard stops) spent: a child
    reaped during the window is counted whole, its life before the window included."""
    before = pane.proc.cpu_times()
    before_live = live_children_cpu(pane.proc)
    before_ns = run_ns(pane.proc.pid)
    before_tmux = run_ns(pane.server_pid) or 0
    before_bytes = pane.written.stat().st_size
    t0 = time.perf_counter()
    time.sleep(seconds)
    after_ns = run_ns(pane.proc.pid)
    after_tmux = run_ns(pane.server_pid) or 0
    after_bytes = pane.written.stat().st_size
    after = pane.proc.cpu_times()
    after_live = live_children_cpu(pane.proc)
    wall = time.perf_counter() - t0
    if before_ns is not None and after_ns is not None:
        own = (after_ns - before_ns) / 1e9
    else:
        own = (after.user + after.system) - (before.user + before.system)
    tools = (after.children_user + after.children_system) - (
        before.children_user + before.children_system)
    tools += sum(cpu - before_live.get(pid, 0.0) for pid, cpu in after_live.items())
    return Cost(100 * own / wall, 100 * tools / wall, 1000 * own / wall,
                (after_bytes - before_bytes) / wall, (after_tmux - before_tmux) / 1e6 / wall)


def key_latency(pane: Pane, presses: int = 10) -> list[float]:
    latencies: list[float] = []
    for i in range(presses):
        target = f"▸ {(i + 1) % 8}"
        start = time.perf_counter()
        pane.tmux("send-keys", "-t", "b", "Right")
        while target not in pane.screen():
            if time.perf_counter() - start > 10:
                raise RuntimeError(f"no repaint after a key press:\n{pane.screen()}")
            time.sleep(0.005)
        latencies.append(1000 * (time.perf_counter() - start))
        time.sleep(0.3)
    return latencies


def breakdown(root: Path, polls: int = 20) -> None:
    """Where the monitor's CPU goes, in-process: polling alone (through nvidia-smi's ``-lms``
    stream, the default, then with a call per poll), then verdicts alone."""
    import asyncio
    import os

    from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
    from gpusat_tui.sources.polling.live import LiveSource

    fake = make_bin(root / "breakdown", hung=False)
    old_path = os.environ.get("PATH", "")
    os.environ["PATH"] = fake.path
    frames: list = []

    async def poll(streams: bool | None) -> float:
        source = LiveSource(interval=1.0, streams=streams)
        source.discover()
        seen = 0
        cpu = 0.0
        async for frame in source.frames():
            seen += 1
            if streams is None:
                frames.append(frame)
            if seen == 2:
                start_cpu, start_wall = time.process_time(), time.perf_counter()
            if seen == polls:
                cpu = time.process_time() - start_cpu
                wall = time.perf_counter() - start_wall
                break
        await source.aclose()
        return 1000 * cpu / wall

    try:
        live_ms = asyncio.run(poll(None))
        calls_ms = asyncio.run(poll(False))
    finally:
        os.environ["PATH"] = old_path
    tracker = VerdictTracker()
    # A full verdict window (30 s at 1 Hz) before timing, as in a long session.
    warm = [f.model_copy(update={"t": f.t - 1000 + i}) for i, f in enumerate(frames * 6)]
    for frame in warm[:60]:
        tracker.push(frame)
    start = time.process_time()
    for frame in warm[60:]:
        tracker.push(frame)
    per_frame = 1000 * (time.process_time() - start) / max(len(warm) - 60, 1)
    print(f"breakdown: LiveSource polling alone {live_ms:.2f} ms CPU/s (nvidia-smi -lms, the "
          f"default; {calls_ms:.2f} with a call per poll); "
          f"VerdictTracker.push {per_frame:.1f} ms per 8-card frame")


SIZES = ((100, 30), (160, 50), (240, 70))


def start_up(pane: Pane) -> tuple[float, float]:
    """(seconds from the pane's start to live figures on screen, CPU ms spent until then)."""
    deadline = time.perf_counter() + 30
    while not ("GPU-Util" in (screen := pane.screen()) and "%" in screen):
        if time.perf_counter() > deadline:
            raise RuntimeError(f"no live figures after 30 s:\n{screen}")
        time.sleep(0.01)
    wall = time.perf_counter() - pane.started
    ns = run_ns(pane.proc.pid)
    return wall, (ns or 0) / 1e6


def run_size(root: Path, fake: FakeBin, size: tuple[int, int], seconds: float,
             app_dir: Path, label: str, views: tuple[str, ...], warm: float = 3.0) -> None:
    pane = Pane(root, fake, f"{label}-{size[0]}x{size[1]}", size, app_dir)
    try:
        wall, cpu_ms = start_up(pane)
        pane.wait_for("▸")
        # Let start-up settle (imports, first layout); with --warm, until the charts are full
        # (a sweep chart changes fewer cells before its first wrap).
        time.sleep(warm)
        for view in views:
            if view == "card":
                pane.tmux("send-keys", "-t", "b", "o")
                time.sleep(2)
            cost = measure_cpu(pane, seconds)
            print(f"{label:8s} {size[0]:3d}x{size[1]:<3d} {view:9s} monitor {cost.own_ms:5.2f} ms"
                  f" CPU/s; to the terminal {cost.bytes_s / 1024:5.2f} KiB/s, tmux server "
                  f"{cost.tmux_ms:5.2f} ms CPU/s; tools {cost.tools_pct:4.2f}%; start-up "
                  f"{wall:.2f} s, {cpu_ms:.0f} ms CPU; load {os.getloadavg()[0]:.1f}",
                  flush=True)
    finally:
        pane.close()


def nvml_peer(root: Path, fake: FakeBin, size: tuple[int, int], seconds: float,
              peer_python: str, rounds: int, warm: float = 5.0) -> None:
    """The dashboard and nvitop (run by ``peer_python``) back to back, both reading the same
    8 fake NVML GPUs (benchmarks/fake_nvml_site), at 1 Hz, ``rounds`` times interleaved."""
    runs = {
        "gpusat": ([sys.executable, "-m", "gpusat_tui", "--interval", "1"], "▸"),
        "nvitop": ([peer_python, "-m", "nvitop", "--monitor", "full", "--interval", "1"],
                   "NVITOP"),
    }
    for r in range(rounds):
        for label, (argv, ready) in runs.items():
            pane = Pane(root, fake, f"{label}-{r}-{size[0]}x{size[1]}", size, REPO, argv,
                        fake_nvml=True)
            try:
                pane.wait_for(ready)
                time.sleep(warm)  # both get the same; --warm 70: the sweep charts full
                cost = measure_cpu(pane, seconds)
                print(f"NVML {label:7s} {size[0]:3d}x{size[1]:<3d} round {r + 1}: "
                      f"{cost.own_ms:5.2f} ms CPU/s; to the terminal "
                      f"{cost.bytes_s / 1024:5.2f} KiB/s, tmux server {cost.tmux_ms:5.2f} ms "
                      f"CPU/s; load {os.getloadavg()[0]:.1f}", flush=True)
            finally:
                pane.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--compare", type=Path, default=None,
                        help="another checkout to measure back to back (e.g. main)")
    parser.add_argument("--sizes", nargs="*", default=[f"{w}x{h}" for w, h in SIZES])
    parser.add_argument("--hung", action="store_true", help="also the hung-tool case")
    parser.add_argument("--warm", type=float, default=3.0,
                        help="seconds before measuring (more than a chart's width in polls: "
                             "the charts full)")
    parser.add_argument("--views", nargs="+", default=["overview", "card"])
    parser.add_argument("--nvml-peer", default=None, metavar="PYTHON",
                        help="an interpreter with nvitop installed: compare with it on fake NVML")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=1,
                        help="passes per size, interleaved with --compare's")
    parser.add_argument("--breakdown", action="store_true")
    parser.add_argument("--polls", type=int, default=20,
                        help="polls (at 1 Hz) per mode in the breakdown")
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes]
    print(f"machine: {psutil.cpu_count()} CPUs, python {sys.version.split()[0]}, "
          f"load {os.getloadavg()[0]:.1f}")
    # Start-up as an installed copy has it: with bytecode (pip compiles on install; a source
    # tree run with PYTHONDONTWRITEBYTECODE set would compile ~80 modules at every start).
    for tree in (REPO, args.compare):
        if tree is not None:
            compileall.compile_dir(tree / "gpusat_tui", quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fake = make_bin(root, hung=False)
        if args.nvml_peer:
            for size in sizes:
                nvml_peer(root, fake, size, args.seconds, args.nvml_peer, args.rounds,
                          args.warm)
            return 0
        for size in sizes:
            for _ in range(args.passes):  # interleaved: both trees see the same load drift
                if args.compare is not None:
                    run_size(root, fake, size, args.seconds, args.compare, "compare",
                             tuple(args.views), args.warm)
                run_size(root, fake, size, args.seconds, REPO, "this", tuple(args.views),
                         args.warm)
        if args.hung:
            pane = Pane(root, make_bin(root, True), "hung")
            try:
                pane.wait_for("GPU-Util")
                time.sleep(3)
                cost = measure_cpu(pane, args.seconds)
                print(f"8 cards + hung hy-smi    monitor {cost.own_pct:5.2f}% of a core "
                      f"({cost.own_ms:.1f} ms CPU/s); tools it ran {cost.tools_pct:5.2f}%")
                status = pane.screen().splitlines()[-2]
                print(f"  status line: {status.strip()}")
                lat = key_latency(pane)
                print(f"  key->repaint with hung tool: median {statistics.median(lat):.0f} ms,"
                      f" max {max(lat):.0f} ms over {len(lat)} presses")
            finally:
                pane.close()
        if args.breakdown:
            breakdown(root, args.polls)
    return 0


if __name__ == "__main__":
    sys.exit(main())
