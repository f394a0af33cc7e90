"""Why a ``starving`` card starves: the cause, from the host evidence tied to the card.

In order: ``input-bound`` (DataLoader workers pegged), ``io-bound`` (disk-sleep or host
iowait), ``host-bound`` (the trainer pegged while workers are not), ``light-kernels`` (busy
utilisation at low power, no host bottleneck), else ``unknown`` with what was missing.
"""

from __future__ import annotations

from gpusat_tui.analysis.evidence import HostEvidence
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.wording import host_line, pct, worker_line

__all__ = ["STARVING_CAUSES", "starving_cause"]

#: Causes a ``starving`` verdict can carry.
STARVING_CAUSES: tuple[str, ...] = (
    "input-bound", "io-bound", "host-bound", "light-kernels", "unknown"
)


def starving_cause(
    ev: HostEvidence, th: Thresholds, *, light: bool, label: str
) -> tuple[str, list[str], list[str], float]:
    """(cause, why, advice, confidence) for a starving card, from the host evidence."""
    why: list[str] = []
    host = host_line(ev)
    pegged_workers = ev.n_workers > 0 and (
        (ev.worker_cpu is not None and ev.worker_cpu >= th.worker_pegged_pct)
        or (
            ev.worker_sum is not None
            and ev.worker_sum >= th.worker_pegged_pct * ev.n_workers
        )
    )
    io = (ev.dstate_frac is not None and ev.dstate_frac >= th.dstate_frac) or (
        ev.iowait is not None and ev.iowait >= th.iowait_high_pct
    )
    trainer_pegged = ev.trainer_cpu is not None and ev.trainer_cpu >= th.trainer_pegged_pct

    if pegged_workers:
        why.append(f"{worker_line(ev)}: the input pipeline is CPU-bound")
        if host:
            why.append(host)
        advice: list[str] = []
        if ev.cpu_count:
            busy = ev.n_workers + 1
            free = ev.cpu_count - busy
            host_busy = ev.host_cpu is not None and ev.host_cpu >= th.host_busy_pct
            if free >= 2 and not host_busy:
                target = min(ev.cpu_count - 1, ev.n_workers * 2)
                advice.append(
                    f"Raise DataLoader num_workers from {ev.n_workers} towards {target}: "
                    f"{ev.cpu_count} cores, about {free} not used by this job"
                    + (f" (host CPU {pct(ev.host_cpu)})" if ev.host_cpu is not None else "")
                )
            else:
                advice.append(
                    f"All {ev.cpu_count} cores are busy"
                    + (f" (host CPU {pct(ev.host_cpu)})" if ev.host_cpu is not None else "")
                    + ": more workers will not help; make each sample cheaper"
                )
        else:
            advice.append("Add DataLoader workers if the machine has idle cores")
        advice += [
            "Cache or pre-decode the dataset (decoded tensors, shards) so workers stop "
            "decoding and resizing every epoch",
            "Lighten the CPU augmentation, or move it to the accelerator",
            "DataLoader(persistent_workers=True, pin_memory=True, prefetch_factor=4) keeps "
            "workers alive between epochs and copies overlapping compute",
        ]
        return "input-bound", why, advice, 0.85

    if io:
        if ev.dstate_frac is not None and ev.dstate_frac >= th.dstate_frac:
            why.append(
                f"processes waiting on disk (D state) in {pct(100 * ev.dstate_frac)} of samples"
            )
        if ev.iowait is not None:
            why.append(f"host iowait {pct(ev.iowait)}")
        if ev.n_workers:
            why.append(worker_line(ev))
        advice = [
            "Reads wait on storage: copy the dataset to local NVMe or /dev/shm, or cache it "
            "after the first epoch",
            "Pack many small files into large sequential shards (tar/WebDataset, LMDB)",
            "Keep more reads in flight: more workers and a larger prefetch_factor",
        ]
        return "io-bound", why, advice, 0.8

    if trainer_pegged:
        why.append(
            f"trainer at {pct(ev.trainer_cpu or 0.0)} CPU (pegged) while {worker_line(ev)}"
        )
        if ev.pin_cpu is not None and ev.pin_cpu >= th.pin_pegged_pct:
            why.append(f"its pin-memory thread at {pct(ev.pin_cpu)} CPU")
        advice = [
            "The training loop's own Python work is the bottleneck: look for .item(), .cpu(), "
            "tensor printing or torch.cuda.synchronize() in every step (each forces a sync)",
            "Log and compute metrics every N steps, not every step",
            "Launch fewer, bigger kernels: larger batch, AMP/bf16, torch.compile or CUDA graphs",
        ]
        if not ev.n_workers:
            advice.insert(
                0,
                "No DataLoader workers seen: with num_workers=0 the data loading runs in this "
                "thread; set num_workers > 0",
            )
        return "host-bound", why, advice, 0.8

    if light:
        why.append(
            f"no host bottleneck seen ({worker_line(ev)}"
            + (f", trainer at {pct(ev.trainer_cpu)} CPU" if ev.trainer_cpu is not None else "")
            + ")"
            if ev.has_processes
            else "no process figures to check the host side"
        )
        advice = [
            f"{label} counts any running kernel: the card runs many small kernels. Give each "
            "more work: larger batch, AMP/bf16, fused ops, torch.compile or CUDA graphs",
            "If nothing should be running, trust power: some tools read busy on an idle card",
        ]
        if not ev.has_processes:
            advice.append("Run with --pid <trainer PID> to add the host side to the verdict")
        return "light-kernels", why, advice, 0.6

    if not ev.has_processes:
        if ev.foreign_processes:
            why.append("processes were seen, but none is tied to this card")
        else:
            why.append("no process figures: cannot tell input-, I/O- or host-bound apart")
        if host:
            why.append(host)
        advice = [
            "Run with --pid <trainer PID> so the trainer and its DataLoader workers are "
            "watched: their CPU tells input-, I/O- and host-bound apart"
        ]
        return "unknown", why, advice, 0.5

    parts = [worker_line(ev)]
    if ev.trainer_cpu is not None:
        parts.append(f"trainer at {pct(ev.trainer_cpu)} CPU")
    if host:
        parts.append(host)
    why.append("no host bottleneck in the figures: " + ", ".join(parts))
    advice = [
        "Profile a few steps (torch.profiler) to see what the step waits on: "
        "communication, synchronisation, a lock, or another process",
    ]
    return "unknown", why, advice, 0.5
