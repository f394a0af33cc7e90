#!/usr/bin/env python3
"""Make the bundled demo (gpusat_tui/data/demo.jsonl) from a real run, nothing overlaid.

Two real CPU training jobs run on this machine, watched by a real ``gpusat-tui check
--record``; only the accelerator is faked (``tests/fakes``: a ``nvidia-smi`` that prints two
cards and lists the two trainers' real PIDs on them):

* card 0: ``gpusat-tui run -- python tests/probe_jobs/train_job.py`` (the probe inside: its
  measured data wait is in the recording). It computes at full speed for the first
  ``--turn`` seconds (the fake card reads saturated), then its dataset starts sleeping in
  every batch (``--switch-file``: the probe measures the loop waiting on its DataLoader) and
  the fake card drops to starving figures at the same poll;
* card 1: ``tests/jobs/dataloader_job.py --work burn``, no probe: DataLoader workers spinning
  on every item, a card that starves throughout (the cause inferred from the host side).

So process, worker and host CPU figures, the probe's figures and the notes are what the
monitor really read (host CPU includes whatever else ran on the machine); the card figures are
the scripted ones. Usage, from the repository root (takes ``--seconds`` plus ~20 s):

    python tools/make_demo.py            # writes gpusat_tui/data/demo.jsonl
    python tools/make_demo.py --out /tmp/demo.jsonl --seconds 60 --turn 25
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from gpusat_tui.collectors.nvidia_smi import SPECS  # noqa: E402
from tests.fakes import FakeCard, FakeProcess  # noqa: E402
from tests.fakes.tool import FakeBin, Step  # noqa: E402

H100_MIB = 81559.0
CAP_W = 400.0


def h100(index: int, util: float, mem_pct: float, power_frac: float) -> FakeCard:
    return FakeCard(index=index, name="NVIDIA H100 80GB HBM3", util_pct=round(util),
                    mem_used_mib=round(H100_MIB * mem_pct / 100), mem_total_mib=H100_MIB,
                    power_w=round(CAP_W * power_frac, 1), power_cap_w=CAP_W, temp_c=55.0)


def starving(index: int, tick: int, rng: random.Random) -> FakeCard:
    """Bursts of work between long waits: high every few polls, near zero between."""
    util = rng.uniform(90, 99) if tick % 4 == 0 else rng.uniform(1, 8)
    return h100(index, util, 60.0, rng.uniform(0.25, 0.38))


def saturated(index: int, rng: random.Random) -> FakeCard:
    return h100(index, rng.uniform(96, 100), 71.0, rng.uniform(0.80, 0.88))


def steps(polls: int, turn: int, pids: tuple[int, int], seed: int = 26) -> list[Step]:
    rng = random.Random(seed)
    procs = (FakeProcess(pids[0], "python", 0, 40960.0), FakeProcess(pids[1], "python", 1, 47104.0))
    out = []
    for tick in range(polls + 60):  # calls past the run repeat the last: leave room
        card0 = saturated(0, rng) if tick < turn else starving(0, tick, rng)
        out.append(Step(cards=(card0, starving(1, tick, rng)), processes=procs))
    return out


def start(cmd: list[str], env: dict[str, str], ready: str, timeout: float = 120.0) -> tuple[
        subprocess.Popen[str], int]:
    """Start a job (stdin a pipe: closing it stops train_job), wait for its ready line."""
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            sys.exit(f"{cmd[-1]} ended before it was ready (exit {proc.wait()})")
        if line.startswith(ready):
            parts = line.split()
            return proc, int(parts[1]) if len(parts) > 1 else proc.pid
    proc.kill()
    sys.exit(f"{cmd} was not ready in {timeout:.0f} s")


def make(out: Path, seconds: int, turn: int) -> None:
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="gpusat-demo-") as tmp:
        work = Path(tmp)
        probes = work / "probes"
        probes.mkdir(mode=0o700)
        switch = work / "input-slow"
        env = {**os.environ, "GPUSAT_PROBE_DIR": str(probes), "PYTHONPATH": str(REPO)}
        probed, probed_pid = start(
            [python, "-m", "gpusat_tui", "run", "--", python, "tests/probe_jobs/train_job.py",
             "--workers", "2", "--start", "fork", "--batch", "32", "--sleep-ms", "900",
             "--compute-ms", "120", "--switch-file", str(switch),
             "--max-seconds", str(seconds + 60)],
            env, "READY")
        burner, burner_pid = start(
            [python, "tests/jobs/dataloader_job.py", "--work", "burn", "--workers", "2",
             "--item-ms", "20", "--step-s", "0.02", "--max-s", str(seconds + 60)],
            env, "ready")
        try:
            fakes = FakeBin(work / "bin")
            fakes.dir.mkdir(parents=True, exist_ok=True)
            fakes.add_for_spec(SPECS[0], steps(seconds, turn, (probed_pid, burner_pid)),
                               loop_flag="-lms")
            check_env = {**fakes.env(), "GPUSAT_PROBE_DIR": str(probes),
                         "PYTHONPATH": str(REPO)}
            check = subprocess.Popen(
                [python, "-m", "gpusat_tui", "check", "--json", "--duration", str(seconds),
                 "--interval", "1", "--enrich-every", "1", "--record", str(out), "--force",
                 "--pid", str(probed_pid), "--pid", str(burner_pid)],
                cwd=REPO, env=check_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True)
            time.sleep(turn)
            switch.touch()  # the dataset starts sleeping in every batch: the loop waits
            print(f"{turn} s: card 0's job turned input-bound", flush=True)
            _, stderr = check.communicate(timeout=seconds + 120)
            if check.returncode not in (0, 2):  # 2: a card not saturated (the demo's point)
                sys.exit(f"check exited {check.returncode}: {stderr.strip()}")
        finally:
            for proc in (probed, burner):
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.terminate()
            for proc in (probed, burner):
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
    print(f"{out}: {out.stat().st_size / 1024:.0f} KiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "gpusat_tui/data/demo.jsonl")
    parser.add_argument("--seconds", type=int, default=100)
    parser.add_argument("--turn", type=int, default=45)
    args = parser.parse_args()
    make(args.out, args.seconds, args.turn)


if __name__ == "__main__":
    main()
