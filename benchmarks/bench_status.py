"""Cost of ``gpusat-tui status`` with a running monitor (target: at most twice the CPU of
``python -c pass``).

Run by hand: ``.venv/bin/python benchmarks/bench_status.py [--calls 50]``.

A status file is written as a running dashboard leaves it (in a private ``GPUSAT_PROBE_DIR``),
a fake ``nvidia-smi`` that counts its calls is first on PATH, and then:

1. in process: reading the freshest file and rendering the tmux line (`read_fresh` +
   `render`), median over many calls: what ``status`` itself does;
2. the whole command, the installed ``gpusat-tui status`` as tmux runs it, back to back with a
   bare ``python -c pass`` on the same interpreter (one call of each in turn, so both see the
   same load): CPU per call (user + system, median) and wall time. Twice: with the bytecode
   cache written once and then used (an installed package: pip compiles it), and with
   ``PYTHONDONTWRITEBYTECODE`` (every module compiled on every call: a source tree where the
   cache cannot be written: the package's caches are removed first);
3. that the fake tool was never started;
4. with ``--slow-path``: the path that finds no status file, no exporter and no vendor tool (PATH
   holds none), so ``status`` polls on its own for ``--poll`` seconds: once with no probed job
   (it prints ``GPU –``), once with a probed job under ``gpusat-tui run`` (the verdict from the
   probe files alone; its cached answer is removed before each call, so every call polls).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpusat_tui.commands.status import render  # noqa: E402  (after the path insert)
from gpusat_tui.notify.status_file import JobStatus, StatusFileWriter, read_fresh  # noqa: E402
from tests.prom.hosts import fake_host  # noqa: E402


def one(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms: user + system) of one call. The CPU figure holds on a busy machine,
    where wall time measures the queue."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, check=True)
    wall = (time.perf_counter() - started) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e3


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def back_to_back(cmds: dict[str, list[str]], env: dict[str, str],
                 calls: int) -> dict[str, tuple[list[float], list[float]]]:
    """Each command once in turn, ``calls`` times: {name: (wall ms, CPU ms)}."""
    out: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in cmds}
    for _ in range(calls):
        for name, cmd in cmds.items():
            wall, cpu = one(cmd, env)
            out[name][0].append(wall)
            out[name][1].append(cpu)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--slow-path", action="store_true",
                        help="measure only the path with no monitor, no exporter and no tool")
    args = parser.parse_args()
    if args.slow_path:
        slow_path(min(args.calls, 10))
        return
    with tempfile.TemporaryDirectory() as tmp:
        probe_dir = Path(tmp) / "probes"
        probe_dir.mkdir(mode=0o700)
        os.environ["GPUSAT_PROBE_DIR"] = str(probe_dir)
        fakes = fake_host(Path(tmp) / "h", "saturated", cards=8)
        writer = StatusFileWriter("dashboard", 1.0, fresh_s=3600.0)
        writer.write(JobStatus("starving", "input-bound", since=time.time() - 120,
                               util_pct=45.0, data_wait_pct=41.0, cards=8, t=time.time()))

        n = 2000
        started = time.perf_counter()
        for _ in range(n):
            line = render(read_fresh(), "tmux")
        in_process_us = (time.perf_counter() - started) / n * 1e6
        print(f"in process (read_fresh + render): {in_process_us:.0f} µs per call -> {line}")

        base = fakes.env({"GPUSAT_PROBE_DIR": str(probe_dir)})
        base.pop("TMUX", None)
        script = str(Path(sys.executable).with_name("gpusat-tui"))
        cmds = {"python -c pass": [sys.executable, "-c", "pass"],
                "gpusat-tui status": [script, "status"]}
        cached = {k: v for k, v in base.items() if k != "PYTHONDONTWRITEBYTECODE"}
        uncached = {**base, "PYTHONDONTWRITEBYTECODE": "1"}
        subprocess.run(cmds["gpusat-tui status"], env=cached, cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL)  # writes the bytecode cache once
        for label, env in (("bytecode cached (installed)", cached),
                           ("package not compiled, PYTHONDONTWRITEBYTECODE=1", uncached)):
            if env is uncached:  # the cache the first run wrote would still be read
                for folder in (REPO / "gpusat_tui").rglob("__pycache__"):
                    shutil.rmtree(folder)
            got = back_to_back(cmds, env, args.calls)
            print(f"{label}, {args.calls} calls each, back to back:")
            for name, (walls, cpus) in got.items():
                print(f"  {name:18s} CPU median {statistics.median(cpus):5.1f} ms, wall median "
                      f"{statistics.median(walls):5.1f} ms, p90 {pct(walls, 0.9):5.1f} ms")
            ratio = (statistics.median(got["gpusat-tui status"][1])
                     / statistics.median(got["python -c pass"][1]))
            print(f"  status / python -c pass (CPU): {ratio:.2f}x (target <= 2x)")
        calls = fakes.tools["nvidia-smi"].calls()
        print(f"fake nvidia-smi started: {calls} times")
        writer.close()
        if calls:
            raise SystemExit("a vendor tool was started although fresh figures existed")


def slow_path(calls: int) -> None:
    """CPU and wall time of ``status`` polling on its own with no tool, without and with a
    probed job."""
    from tests.probe_helpers import start_job, stop_job, wait_ready

    with tempfile.TemporaryDirectory() as tmp:
        probe_dir = Path(tmp) / "probes"
        probe_dir.mkdir(mode=0o700)
        empty_bin = Path(tmp) / "bin"
        empty_bin.mkdir()
        env = {k: v for k, v in os.environ.items()
               if k != "TMUX" and not k.startswith("GPUSAT_TOOL_")}
        env.update(GPUSAT_PROBE_DIR=str(probe_dir), PATH=f"{empty_bin}:/bin")
        script = str(Path(sys.executable).with_name("gpusat-tui"))
        cmd = [script, "status", "--format", "plain", "--exporter", "none"]
        cache = probe_dir / "status-poll.json"

        def measure(label: str) -> None:
            walls, cpus = [], []
            for _ in range(calls):
                cache.unlink(missing_ok=True)
                wall, cpu = one(cmd, env)
                walls.append(wall)
                cpus.append(cpu)
            line = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True,
                                  check=True).stdout.strip()
            print(f"  {label:28s} CPU median {statistics.median(cpus):6.1f} ms, wall median "
                  f"{statistics.median(walls):6.1f} ms ({calls} calls) -> {line}")

        print("no status file, no exporter, no tool on PATH (status polls --poll 2 s itself):")
        measure("no probed job")
        job = start_job(probe_dir, "--sleep-ms", "60", "--compute-ms", "20")
        try:
            wait_ready(job)
            measure("a probed job (starving)")
        finally:
            stop_job(job)


if __name__ == "__main__":
    main()
