"""A job held back by its own cgroup CPU quota: cause ``cpu-quota``, with the quota in cores and
the share of periods throttled in ``why``, and advice to raise the limit, never "more workers"."""

from __future__ import annotations

from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CardReading, Frame, HostSample, ProcessSample
from tests.scenarios import T0

SWING = [95.0, 2.0, 3.0, 1.0, 97.0, 0.0, 4.0, 2.0, 96.0, 1.0]


def _frames(quota: float | None, throttled: float | None) -> list[Frame]:
    def proc(pid: int, role: str, cpu: float) -> ProcessSample:
        return ProcessSample(
            pid=pid, role=role, name="python", cpu_pct=cpu, state="running",  # type: ignore[arg-type]
            trainer_pid=100 if role != "trainer" else None, run_delay_pct=2.0,
            cpu_quota_cores=quota, cpu_throttled_pct=throttled,
        )

    procs = [proc(100, "trainer", 15.0), proc(101, "dataloader_worker", 18.0),
             proc(102, "dataloader_worker", 17.0)]
    host = HostSample(cpu_pct=30.0, iowait_pct=0.0, cpu_count=16)
    return [Frame(t=T0 + i, seq=i, processes=procs, host=host, cards=[CardReading(
        vendor="nvidia", index=0, util_pct=u, mem_used_mib=40000.0, mem_total_mib=80000.0,
        power_w=100.0, power_cap_w=400.0)]) for i, u in enumerate(SWING)]


def test_a_throttled_quota_is_the_cause_with_its_figures() -> None:
    verdict = judge(_frames(0.5, 78.0)).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "cpu-quota")
    line = next(w for w in verdict.why if "CPU quota" in w)
    assert "half a core" in line and "throttled it in 78 % of its periods" in line
    text = " ".join(verdict.advice)
    assert "--cpus-per-task" in text and "resources.limits.cpu" in text and "docker --cpus" in text
    assert "more workers" not in text.lower() and "num_workers from" not in text
    assert "oversubscribed" not in " ".join(verdict.why + verdict.advice)


def test_a_quota_that_does_not_bite_is_no_cause() -> None:
    assert judge(_frames(4.0, 2.0)).cards["nvidia:0"].cause != "cpu-quota"
    assert judge(_frames(None, None)).cards["nvidia:0"].cause != "cpu-quota"
