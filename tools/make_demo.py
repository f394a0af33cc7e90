#!/usr/bin/env python3
"""Make the bundled demo (gpusat_tui/data/demo.jsonl): a constructed session, one DDP job.

The story (100 s, a poll every 2 s: ~370 KiB with every field of a poll kept):
``torchrun --nproc-per-node 2 train.py`` on a 32-core host with two H100s, rank ``r`` on card
``r``, each rank a DataLoader with 4 workers and the probe inside (``gpusat-tui run``). For the
first 36 s both cards compute (util 92-99 %, 80-88 % of the power cap, data wait 1-3 %); then
the run reaches the part of its dataset stored as full-resolution images: each sample costs ~6x
the decoding, every worker is pegged, both ranks wait on their DataLoader 55-80 % of each poll,
and the cards run only for the rest of it. One figure decides the others each poll: the rank's
data wait gives its step time, samples/s, stack phases and its card's duty cycle and power;
the workers' CPU gives the host's.

No machine at hand has two H100s and 32 cores, so the session is built, not observed (the
banner says so). The card figures go through the real path: a fake ``nvidia-smi``
(``tests/fakes``) prints them in its real format, poll by poll, and a real ``gpusat-tui check
--record`` reads them. A fake tool cannot fake ``psutil`` or a probe file, so each recorded
frame then gets the story's processes, host, probe figures and job (matched on ``seq``),
loses its notes (about the recording machine: the story's PIDs are not visible there, the fake
has no loop mode, a process of that machine exited) and gets a fixed clock, so the file
depends only on the figures here (the recorded cards are checked against them).

Usage, from the repository root (takes ``--seconds`` plus a few seconds):

    python tools/make_demo.py            # writes gpusat_tui/data/demo.jsonl
    python tools/make_demo.py --out demo.jsonl --seconds 60
"""

from __future__ import annotations

import argparse
import math
import random
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from gpusat_tui.collectors.nvidia_smi import SPECS  # noqa: E402
from gpusat_tui.model import (  # noqa: E402
    CodeLine,
    Frame,
    HostSample,
    JobContext,
    ProbeSample,
    ProcessSample,
)
from gpusat_tui.sources.recording.reader import read_recording  # noqa: E402
from gpusat_tui.sources.recording.recorder import Recorder  # noqa: E402
from tests.fakes import FakeCard, FakeProcess  # noqa: E402
from tests.fakes.tool import FakeBin, Step  # noqa: E402

SECONDS = 100
INTERVAL = 2.0
#: First poll of the slow input (36 s in).
TURN = 18
RANKS = 2
WORKERS = 4
BATCH = 64
CORES = 32
HOST = "gpu-node-07"
#: 2026-01-01 09:00 UTC: the recording's clock (fixed: the file is reproducible).
T0 = 1_767_258_000.0
SEED = 38

H100_MIB = 81559.0
CAP_W = 700.0  # H100 SXM5
MEM_PCT = 76.0
#: GPU time of one step (forward, backward, optimizer, all-reduce), seconds.
COMPUTE_S = 0.19
#: The job had run this long when the monitor started (seconds), at the fast rate.
STARTED_S = 214.0
TRAINERS = (48213, 48214)
COMMAND = "/opt/conda/bin/python -u train.py --batch-size 64 --num-workers 4"
RENDEZVOUS = "127.0.0.1:29500"  # torchrun's default MASTER_ADDR:MASTER_PORT
USER = "alice"
SCRIPT = "/home/alice/resnet/train.py"
STACK_HZ = 20.0
#: Where the training thread's samples fall outside the data wait (shares of the rest).
COMPUTE_PHASES = {"forward": 0.30, "backward": 0.48, "optimizer": 0.12, "collective": 0.10}
#: The user's lines each phase is sampled on.
LINES = {
    "data": CodeLine(module="__main__", function="train_one_epoch", file=SCRIPT, line=112),
    "forward": CodeLine(module="__main__", function="train_one_epoch", file=SCRIPT, line=116),
    "backward": CodeLine(module="__main__", function="train_one_epoch", file=SCRIPT, line=118),
    "optimizer": CodeLine(module="__main__", function="train_one_epoch", file=SCRIPT, line=119),
}


def rng(tick: int, stream: int) -> random.Random:
    """Each figure's own generator: tick ``k`` always gives the same numbers."""
    return random.Random(SEED * 1_000_003 + tick * 16 + stream)


def data_wait(tick: int, rank: int) -> float:
    """Share of poll ``tick`` rank ``rank`` waits in ``next(dataloader)``, 0-1."""
    r = rng(tick, 1 + rank)
    if tick < TURN:
        return r.uniform(0.01, 0.03)
    if tick == TURN:  # the prefetched batches run out within the poll
        return r.uniform(0.35, 0.45)
    return r.uniform(0.55, 0.80)


def busy(tick: int, rank: int) -> float:
    """The card's duty cycle: it computes whenever its rank is not waiting for data."""
    return (1.0 - data_wait(tick, rank)) * rng(tick, 3 + rank).uniform(0.95, 0.995)


def temperature(tick: int) -> float:
    """Warming towards 65 C while computing, cooling towards 52 C once it waits."""
    hot = 45.0 + 20.0 * (1.0 - math.exp(-(STARTED_S + tick * INTERVAL) / 60.0))
    if tick < TURN:
        return hot
    at_turn = 45.0 + 20.0 * (1.0 - math.exp(-(STARTED_S + TURN * INTERVAL) / 60.0))
    return 52.0 + (at_turn - 52.0) * math.exp(-(tick - TURN) * INTERVAL / 20.0)


def cards(tick: int) -> list[FakeCard]:
    out = []
    for rank in range(RANKS):
        b = busy(tick, rank)
        power = CAP_W * (0.14 + 0.72 * b) * rng(tick, 5 + rank).uniform(0.98, 1.02)
        mem = H100_MIB * (MEM_PCT + 0.4 * rank + rng(tick, 7 + rank).uniform(-0.1, 0.1)) / 100
        out.append(FakeCard(index=rank, name="NVIDIA H100 80GB HBM3", util_pct=round(100 * b),
                            mem_used_mib=round(mem), mem_total_mib=H100_MIB,
                            power_w=round(power, 1), power_cap_w=CAP_W,
                            temp_c=round(temperature(tick) + rank)))
    return out


def tool_processes(tick: int) -> list[FakeProcess]:
    """What nvidia-smi lists: each rank on its own card."""
    return [FakeProcess(pid, "python", rank, 61_000.0 + 300 * rank)
            for rank, pid in enumerate(TRAINERS)]


def processes(tick: int) -> list[ProcessSample]:
    """The two ranks and their workers as the process monitor reads them."""
    r = rng(tick, 9)
    out = []
    for rank, pid in enumerate(TRAINERS):
        # Fast input: the trainer launches kernels; slow input: it mostly waits on a queue.
        cpu = r.uniform(65, 85) if tick < TURN else r.uniform(24, 36)
        out.append(ProcessSample(
            pid=pid, role="trainer", name="python", cpu_pct=round(cpu, 1), state="running",
            card_ids=[f"nvidia:{rank}"], num_threads=38, run_delay_pct=round(r.uniform(0, 1), 1),
            world_size=RANKS, rank=rank))
        for w in range(WORKERS):
            wcpu = r.uniform(34, 52) if tick < TURN else r.uniform(95, 100)
            state = "running" if tick >= TURN or r.random() < 0.6 else "sleeping"
            out.append(ProcessSample(
                pid=pid + 60 + 10 * rank + w, role="dataloader_worker", name="pt_data_worker",
                cpu_pct=round(wcpu, 1), state=state, trainer_pid=pid, num_threads=4,
                run_delay_pct=round(r.uniform(0.2, 2.5), 1)))
    return out


def host(tick: int, procs: list[ProcessSample]) -> HostSample:
    """The host's CPU: the job's processes, plus about a core of everything else."""
    r = rng(tick, 10)
    used = sum(p.cpu_pct or 0.0 for p in procs) + r.uniform(60, 120)
    return HostSample(cpu_pct=round(used / CORES, 1), iowait_pct=round(r.uniform(0.1, 0.8), 1),
                      cpu_count=CORES)


class Rank:
    """One rank's probe: cumulative counters advanced second by second."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.elapsed = STARTED_S
        steps_per_s = 1.0 / (COMPUTE_S / (1 - 0.02))
        self.batches = STARTED_S * steps_per_s
        self.wait_s = STARTED_S * 0.02
        self.phases = {p: STARTED_S * STACK_HZ * 0.98 * share
                       for p, share in COMPUTE_PHASES.items()}
        self.phases["data"] = STARTED_S * STACK_HZ * 0.02

    def advance(self, tick: int) -> ProbeSample:
        wait = data_wait(tick, self.rank)
        step_s = COMPUTE_S * rng(tick, 11).uniform(0.98, 1.02) / (1 - wait)
        self.elapsed += INTERVAL
        self.batches += INTERVAL / step_s
        self.wait_s += INTERVAL * wait
        self.phases["data"] += INTERVAL * STACK_HZ * wait
        for phase, share in COMPUTE_PHASES.items():
            self.phases[phase] += INTERVAL * STACK_HZ * (1 - wait) * share
        counts = {p: round(n) for p, n in self.phases.items()}
        lines = sorted(((LINES[p], counts[p]) for p in LINES), key=lambda x: -x[1])
        r = rng(tick, 12 + self.rank)
        batches = int(self.batches)
        return ProbeSample(
            pid=TRAINERS[self.rank], rank=self.rank, local_rank=self.rank, world_size=RANKS,
            device_index=self.rank, card_id=f"nvidia:{self.rank}", tie="device",
            data_wait_pct=round(100 * wait, 1), step_ms=round(1000 * step_s, 1),
            batches_per_s=round(1 / step_s, 2), samples_per_s=round(BATCH / step_s, 1),
            batches=batches, steps=batches, data_wait_s=round(self.wait_s, 3),
            elapsed_s=round(self.elapsed, 3), age_s=round(r.uniform(0.1, 0.9), 2),
            device_type="cuda", last_batch_s=round(self.elapsed - r.uniform(0, step_s), 3),
            last_step_s=round(self.elapsed - r.uniform(0, step_s), 3), batch_size=BATCH,
            num_workers=WORKERS, framework="torch", stack_hz=STACK_HZ,
            stack_samples=sum(counts.values()), phase_samples=counts,
            user_lines=tuple(line.model_copy(update={"samples": n}) for line, n in lines),
            stack_phase="data" if r.random() < wait else "backward")


JOB = JobContext(scheduler="plain", job_id=RENDEZVOUS, user=USER, command=COMMAND,
                 source="environ", pids=list(TRAINERS),
                 card_ids=[f"nvidia:{r}" for r in range(RANKS)])


def record(out: Path, seconds: int, work: Path) -> None:
    """A real ``check --record`` reading the fake nvidia-smi (one step a poll)."""
    polls = round(seconds / INTERVAL)
    fakes = FakeBin(work / "bin")
    fakes.dir.mkdir(parents=True, exist_ok=True)
    # Polls past the run (a slow start) repeat the last step: leave room.
    steps = [Step(cards=tuple(cards(k)), processes=tuple(tool_processes(k)))
             for k in range(polls + 20)]
    fakes.add_for_spec(SPECS[0], steps)  # one call a poll: step k is poll k
    probes = work / "probes"
    probes.mkdir(mode=0o700)
    env = fakes.env({"GPUSAT_PROBE_DIR": str(probes)})
    done = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", str(seconds),
         "--interval", f"{INTERVAL:g}", "--record", str(out), "--force"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        timeout=seconds + 120, check=False)
    if done.returncode not in (0, 2):  # 2: a card not saturated (the demo's point)
        sys.exit(f"check exited {done.returncode}: {done.stderr.strip()}")


def overlay(path: Path) -> int:
    """The story's processes, host, probes and job in each recorded frame, a fixed clock."""
    header, reader = read_recording(path)
    recorded = list(reader)
    ranks = [Rank(r) for r in range(RANKS)]
    frames: list[Frame] = []
    dropped = sorted({note for frame in recorded for note in frame.notes})
    for note in dropped:
        print(f"note dropped: {note}")
    for tick, frame in enumerate(recorded):
        if frame.seq != tick:
            sys.exit(f"poll {tick} missing from the recording (seq {frame.seq}): run it again")
        want = {c.index: c for c in cards(tick)}
        for card in frame.cards:
            fake = want[card.index]
            if (card.util_pct, card.power_w) != (fake.util_pct, fake.power_w):
                sys.exit(f"poll {tick}: card {card.index} read {card.util_pct} % "
                         f"{card.power_w} W, the story has {fake.util_pct} % {fake.power_w} W")
        procs = processes(tick)
        frames.append(frame.model_copy(update={
            "t": T0 + tick * INTERVAL, "processes": procs, "host": host(tick, procs),
            "probes": [rank.advance(tick) for rank in ranks], "jobs": [JOB],
            "notes": [],
            "monitor_cpu_pct": round(rng(tick, 14).uniform(0.6, 1.4), 1),
        }))
    header = header.model_copy(update={"host": HOST, "started_at": T0})
    with Recorder(path, header, mode="overwrite") as rec:
        for frame in frames:
            rec.write(frame)
    return len(frames)


def make(out: Path, seconds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="gpusat-demo-") as tmp:
        work = Path(tmp)
        recorded = work / "demo.jsonl"
        record(recorded, seconds, work)
        n = overlay(recorded)
        out.write_bytes(recorded.read_bytes())
    print(f"{out}: {n} frames, {out.stat().st_size / 1024:.0f} KiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "gpusat_tui/data/demo.jsonl")
    parser.add_argument("--seconds", type=int, default=SECONDS)
    args = parser.parse_args()
    make(args.out, args.seconds)


if __name__ == "__main__":
    main()
