"""Three polls that fill every field ``check --json`` and the exporter's /metrics read (a card
with GPM extras and clock-event reasons, a stale MIG instance, a probed trainer with its
allocator and stack, a trainer seen from outside with a stack dump, a probe-only trainer, a
Slurm job, a tool error), and the fixed verdicts they are judged with: the golden tests' world."""

from __future__ import annotations

from gpusat_tui.model import (
    Assessment,
    CardReading,
    CodeLine,
    Frame,
    HostSample,
    JobContext,
    ProbeAlloc,
    ProbeSample,
    ProcessSample,
    StackDump,
    ToolError,
    Verdict,
)

T0 = 1_767_225_600.0
STARVING = Verdict(kind="starving", cause="input-bound", why=["data wait 41 %"],
                   advice=["more workers"], confidence=0.8)
ASSESSMENT = Assessment(cards={"nvidia:0": STARVING}, job=STARVING)
LINE = CodeLine(module="train", function="step", file="train.py", line=88)


def _cards(i: int) -> list[CardReading]:
    return [
        CardReading(vendor="nvidia", index=0, name="H100", uuid="GPU-0", util_pct=80.0 + i,
                    mem_used_mib=40000.0 + i, mem_total_mib=81920.0, mem_pct=48.8,
                    power_w=350.0 + i, power_cap_w=700.0, temp_c=61.0, tool="nvidia-smi",
                    extras={"sm_active_pct": 70.0 + i, "tensor_active_pct": 30.0,
                            "throttle": "power-cap,hw-slowdown"}),
        CardReading(vendor="nvidia", index=1, instance="mig1", util_pct=None,
                    stale_s=3.0 if i else None, tool="nvidia-smi"),
    ]


def _processes(t: float, i: int) -> list[ProcessSample]:
    dump = StackDump(t=t, frames=(LINE,), still_since=t - 5, message="ok")
    return [
        ProcessSample(pid=4242, role="trainer", name="python train.py", cpu_pct=80.0 + i,
                      card_ids=["nvidia:0"], rchar_per_s=1e6, wchar_per_s=2e3,
                      syscalls_per_s=100.0, ctx_switches_per_s=50.0, world_size=2, rank=0,
                      other_threads_cpu_pct=30.0, busy_threads=2, cpu_quota_cores=4.0,
                      cpu_throttled_pct=12.0, stack_dump=dump),
        ProcessSample(pid=4243, role="dataloader_worker", name="pt_data_worker", cpu_pct=95.0,
                      trainer_pid=4242, cpu_throttled_pct=20.0),
        ProcessSample(pid=5000, role="trainer", name="python other.py", cpu_pct=10.0),
    ]


def _probes(i: int) -> list[ProbeSample]:
    alloc = ProbeAlloc(allocated_bytes=10**9, reserved_bytes=2 * 10**9,
                       inactive_split_bytes=10**6, alloc_retries=1, ooms=0)
    return [
        ProbeSample(pid=4242, rank=0, local_rank=0, world_size=2, card_id="nvidia:0",
                    tie="device", data_wait_pct=40.0 + i, step_ms=120.0, batches_per_s=8.0,
                    samples_per_s=256.0, batches=10 * i, steps=10 * i, data_wait_s=4.0 * i,
                    elapsed_s=10.0 * i, alloc=alloc, age_s=0.5, framework="torch",
                    stack_hz=100.0, stack_samples=100 * i,
                    phase_samples={"data": 40 * i, "forward": 30 * i, "backward": 30 * i},
                    user_lines=(LINE.model_copy(update={"samples": 50 * i}),),
                    stack_phase="data", stack_where="torch.utils.data.next", stack_line=LINE,
                    stack_still_s=0.2, stack_sig="abc", stack=(LINE,)),
        ProbeSample(pid=6000, data_wait_note="Keras fit: not measured", framework="tensorflow",
                    steps=i),
    ]


def full_frames() -> list[Frame]:
    job = JobContext(key="slurm:77", scheduler="slurm", job_id="77", step="0", name="train",
                     user="ann", partition="gpu", pids=[4242], card_ids=["nvidia:0"],
                     host="node-7")
    frames = []
    for i in range(3):
        t = T0 + i
        error = ToolError(tool="nvidia-smi", message="timed out", kind="timeout")
        errors = [error] if i == 1 else []
        frames.append(Frame(t=t, seq=i, cards=_cards(i), processes=_processes(t, i),
                            probes=_probes(i), jobs=[job], errors=errors, notes=["a note"],
                            host=HostSample(cpu_pct=50.0, iowait_pct=3.0, cpu_count=32),
                            monitor_cpu_pct=1.5))
    return frames
