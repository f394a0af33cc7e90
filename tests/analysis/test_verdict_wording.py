"""Wording of the figures quoted in `why`: they are read by people, so they must read right."""

from __future__ import annotations

from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CardReading, Frame, HostSample, ProcessSample


def _starving_frames(n_workers: int, worker_cpu: float) -> list[Frame]:
    frames = []
    for k in range(12):
        card = CardReading(
            vendor="nvidia", index=0, util_pct=100.0 if k % 4 == 0 else 2.0,
            mem_used_mib=48000, mem_total_mib=80000, power_w=110.0, power_cap_w=400.0,
        )
        procs = [ProcessSample(pid=100, role="trainer", name="python", cpu_pct=20.0)]
        procs += [
            ProcessSample(
                pid=101 + w, role="dataloader_worker", name="pt_data_worker",
                cpu_pct=worker_cpu, trainer_pid=100,
            )
            for w in range(n_workers)
        ]
        frames.append(
            Frame(t=1000.0 + k, seq=k, cards=[card], processes=procs,
                  host=HostSample(cpu_pct=30.0, iowait_pct=1.0, cpu_count=16))
        )
    return frames


def test_one_worker_is_not_called_each() -> None:
    verdict = judge(_starving_frames(1, 97.0)).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "input-bound")
    (line,) = [w for w in verdict.why if "worker" in w]
    assert line.startswith("1 worker at 97 % CPU")
    assert "each" not in line and "together" not in line


def test_several_workers_are_quoted_each_and_together() -> None:
    verdict = judge(_starving_frames(4, 97.0)).cards["nvidia:0"]
    (line,) = [w for w in verdict.why if "worker" in w]
    assert line.startswith("4 workers at 97 % CPU each (388 % together)")
