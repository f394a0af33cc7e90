"""Two ranks of a real torch.distributed job (gloo, CPU) under ``gpusat-tui run -- torchrun``.

Each rank gets its own probe, tied to its own PID; the launcher publishes nothing; and the
rank made slow on data is the straggler the verdict names (the cards here are synthetic: this
machine has none, the trainer side is real).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.host.probes.probe_files import ProbeReader
from gpusat_tui.model import CardReading, Frame
from tests.probe_helpers import JOBS, REPO, job_env, probe_docs, run_argv


def card(index: int) -> CardReading:
    return CardReading(vendor="nvidia", index=index, util_pct=90.0, mem_used_mib=40000.0,
                       mem_total_mib=80000.0, power_w=300.0, power_cap_w=400.0)


def test_two_ranks_two_probes_and_the_slow_rank_is_the_straggler(
    private_probe_dir: Path, tmp_path: Path
) -> None:
    stop = tmp_path / "stop"
    cmd = run_argv(sys.executable, "-m", "torch.distributed.run", "--standalone",
                   "--nproc-per-node", "2", str(JOBS / "ddp_job.py"), "--slow-rank", "1",
                   "--sleep-ms", "60", "--stop", str(stop))
    agent = subprocess.Popen(cmd, env=job_env(private_probe_dir, {"OMP_NUM_THREADS": "1"}),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        deadline = time.monotonic() + 120
        docs = {}
        while time.monotonic() < deadline:
            docs = probe_docs(private_probe_dir)
            if len(docs) == 2 and all(d["batches"] >= 5 for d in docs.values()):
                break
            assert agent.poll() is None, agent.communicate()
            time.sleep(0.2)
        ranks = psutil.Process(agent.pid).children()
        reader = ProbeReader(dirs=[str(private_probe_dir)])
        frames = []
        for seq in range(8):
            samples, notes = reader.sample([card(0), card(1)])
            assert notes == []
            frames.append(Frame(t=time.time(), seq=seq, cards=[card(0), card(1)],
                                probes=samples))
            time.sleep(0.3)
    finally:
        stop.write_text("")
        _, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err[-3000:]

    assert {d["rank"] for d in docs.values()} == {0, 1}
    assert {d["world_size"] for d in docs.values()} == {2}
    # Each probe is its own rank process, a child of the launcher; the launcher has none.
    assert set(docs) == {p.pid for p in ranks} and agent.pid not in docs
    by_rank = {d["rank"]: pid for pid, d in docs.items()}
    assert by_rank[0] != by_rank[1]

    last = {p.rank: p for p in frames[-1].probes}
    assert (last[0].card_id, last[1].card_id) == ("nvidia:0", "nvidia:1")  # local rank order
    assessment = judge(frames)
    job = assessment.job
    assert (job.kind, job.cause) == ("imbalanced", "straggler"), job
    assert job.why[0].startswith(f"rank 1 (PID {by_rank[1]}, nvidia:1) waits"), job.why
    assert "rank 1" in job.advice[0]
    assert "guess" in " ".join(job.why)  # CPU ranks: their card tie is by local rank order
    # Rank 1 waits on its data (starving); rank 0 waits in the all-reduce, not on data.
    assert assessment.cards["nvidia:1"].kind == "starving"
    assert assessment.cards["nvidia:0"].kind == "saturated"
    assert not list(private_probe_dir.glob("probe-*"))
    assert os.environ.get("GPUSAT_PROBE_DIR") == str(private_probe_dir)
