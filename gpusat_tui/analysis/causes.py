"""Why a ``starving`` card starves: the cause, from the evidence tied to the card.

Each rule in `CAUSE_RULES` looks at the evidence and returns a `Finding` (a cause with the
figures that show it, what to try, and whether it was **measured** or **inferred**) or None.
A measured finding (figures from inside the job or from the device's own counters: a probe's
time in ``next(dataloader)``, GPM SM activity) outranks every inferred one (host CPU figures,
from which a bottleneck is only inferred); among findings of one rank the first rule wins.
The ``why`` of the verdict ends with the basis of the cause it gives. A new source of evidence
adds a rule (and, if it needs them, fields of `HostEvidence`): nothing else changes.

The inferred rules, in order: ``input-bound`` (DataLoader workers pegged, or asking for a
full core when CPU % and the time queued for a CPU are added), ``io-bound`` (disk-sleep or host
iowait), ``host-bound`` (the trainer pegged while workers are not), ``light-kernels`` (busy
utilisation at low power, no host bottleneck). Nothing found: ``unknown``, saying what was
missing. ``collective-wait`` is given by the job rules (`job`), never here: only a peer's
figures show that a card waits for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gpusat_tui.analysis.evidence import HostEvidence
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.wording import host_line, pct, worker_line

__all__ = [
    "CAUSE_RULES",
    "STARVING_CAUSES",
    "CauseContext",
    "Finding",
    "starving_cause",
]

#: Causes a ``starving`` verdict can carry.
STARVING_CAUSES: tuple[str, ...] = (
    "input-bound", "io-bound", "host-bound", "light-kernels", "collective-wait", "unknown"
)

Basis = Literal["measured", "inferred"]


@dataclass(frozen=True)
class CauseContext:
    """What a cause rule reads besides the thresholds."""

    ev: HostEvidence
    #: The card's utilisation is steadily high while its power is low.
    light: bool
    #: The vendor's name for its utilisation figure.
    label: str


@dataclass
class Finding:
    """One rule's answer: a cause, the figures that show it, and what to try."""

    cause: str
    why: list[str]
    advice: list[str]
    confidence: float
    basis: Basis = "inferred"
    #: Said at the end of ``why``: where the figures came from.
    source: str = "inferred from the host side (process CPU and state figures)"


CauseRule = Callable[[CauseContext, Thresholds], "Finding | None"]


def _oversubscribed(ev: HostEvidence, th: Thresholds) -> bool:
    return (ev.worker_delay is not None and ev.worker_delay >= th.run_delay_high_pct) or (
        ev.trainer_delay is not None and ev.trainer_delay >= th.run_delay_high_pct
    )


def _queued_line(ev: HostEvidence) -> str:
    parts = []
    if ev.worker_delay is not None:
        parts.append(f"workers wait for a CPU {pct(ev.worker_delay)} of the time")
    if ev.trainer_delay is not None:
        parts.append(f"the trainer {pct(ev.trainer_delay)}")
    host = host_line(ev)
    return (
        "the host is oversubscribed: " + ", ".join(parts) + " (runnable, queued for a core)"
        + (f"; {host}" if host else "")
    )


def _host_source(ev: HostEvidence) -> str:
    if ev.worker_delay is not None or ev.trainer_delay is not None:
        return "inferred from the host side (process CPU, state and run delay figures)"
    return "inferred from the host side (process CPU and state figures)"


def input_bound(ctx: CauseContext, th: Thresholds) -> Finding | None:
    """DataLoader workers pegged, or asking for a full core (CPU % + run delay %)."""
    ev = ctx.ev
    if ev.n_workers <= 0:
        return None
    pegged = (ev.worker_cpu is not None and ev.worker_cpu >= th.worker_pegged_pct) or (
        ev.worker_sum is not None and ev.worker_sum >= th.worker_pegged_pct * ev.n_workers
    )
    queued = ev.worker_demand is not None and ev.worker_demand >= th.worker_pegged_pct
    if not (pegged or queued):
        return None
    oversubscribed = _oversubscribed(ev, th)
    why: list[str] = []
    if pegged:
        why.append(f"{worker_line(ev)}: the input pipeline is CPU-bound")
    else:
        why.append(
            f"{worker_line(ev)}, and queued for a CPU {pct(ev.worker_delay or 0.0)} of the "
            f"time: together {pct(ev.worker_demand or 0.0)} of a core each, so the input "
            "pipeline is CPU-bound, held back by CPU contention"
        )
    host = host_line(ev)
    if oversubscribed:
        why.append(_queued_line(ev))
    elif host:
        why.append(host)
    advice: list[str] = []
    if oversubscribed:
        advice.append(
            "The host is oversubscribed: more workers only queue longer. Use fewer workers "
            "(at most the cores free for this job), pin them to their own cores "
            "(os.sched_setaffinity in worker_init_fn, or taskset), set OMP_NUM_THREADS=1 / "
            "torch.set_num_threads(1) in workers, and look for other jobs on this host (top)"
        )
    elif ev.cpu_count:
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
    return Finding("input-bound", why, advice, 0.85, source=_host_source(ev))


def io_bound(ctx: CauseContext, th: Thresholds) -> Finding | None:
    """Processes in disk-sleep, or high host iowait."""
    ev = ctx.ev
    dstate = ev.dstate_frac is not None and ev.dstate_frac >= th.dstate_frac
    if not (dstate or (ev.iowait is not None and ev.iowait >= th.iowait_high_pct)):
        return None
    why: list[str] = []
    if dstate:
        why.append(
            f"processes waiting on disk (D state) in {pct(100 * (ev.dstate_frac or 0.0))} "
            "of samples"
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
    return Finding("io-bound", why, advice, 0.8)


def host_bound(ctx: CauseContext, th: Thresholds) -> Finding | None:
    """The trainer pegged (or asking for a full core) while its workers are not."""
    ev = ctx.ev
    if ev.trainer_cpu is None:
        return None
    demand = ev.trainer_cpu + (ev.trainer_delay or 0.0)
    if ev.trainer_cpu < th.trainer_pegged_pct and demand < th.trainer_pegged_pct:
        return None
    if ev.trainer_cpu >= th.trainer_pegged_pct:
        why = [f"trainer at {pct(ev.trainer_cpu)} CPU (pegged) while {worker_line(ev)}"]
    else:
        why = [
            f"trainer at {pct(ev.trainer_cpu)} CPU and queued for a CPU "
            f"{pct(ev.trainer_delay or 0.0)} of the time (asking for a full core) while "
            f"{worker_line(ev)}"
        ]
    if ev.pin_cpu is not None and ev.pin_cpu >= th.pin_pegged_pct:
        why.append(f"its pin-memory thread at {pct(ev.pin_cpu)} CPU")
    advice = [
        "The training loop's own Python work is the bottleneck: look for .item(), .cpu(), "
        "tensor printing or torch.cuda.synchronize() in every step (each forces a sync)",
        "Log and compute metrics every N steps, not every step",
        "Launch fewer, bigger kernels: larger batch, AMP/bf16, torch.compile or CUDA graphs",
    ]
    if _oversubscribed(ev, th):
        why.append(_queued_line(ev))
        advice.insert(
            0,
            "The host is oversubscribed: give the trainer a core of its own (fewer workers, "
            "or pin workers away from it with os.sched_setaffinity / taskset)",
        )
    if not ev.n_workers:
        advice.insert(
            0,
            "No DataLoader workers seen: with num_workers=0 the data loading runs in this "
            "thread; set num_workers > 0",
        )
    return Finding("host-bound", why, advice, 0.8, source=_host_source(ev))


def light_kernels(ctx: CauseContext, th: Thresholds) -> Finding | None:
    """Utilisation steadily high at low power, with no host bottleneck."""
    if not ctx.light:
        return None
    ev = ctx.ev
    why = [
        f"no host bottleneck seen ({worker_line(ev)}"
        + (f", trainer at {pct(ev.trainer_cpu)} CPU" if ev.trainer_cpu is not None else "")
        + ")"
        if ev.has_processes
        else "no process figures to check the host side"
    ]
    advice = [
        f"{ctx.label} counts any running kernel: the card runs many small kernels. Give each "
        "more work: larger batch, AMP/bf16, fused ops, torch.compile or CUDA graphs",
        "If nothing should be running, trust power: some tools read busy on an idle card",
    ]
    if not ev.has_processes:
        advice.append("Run with --pid <trainer PID> to add the host side to the verdict")
    source = (
        "inferred from the card's power against its utilisation" + (
            ", with the host side checked" if ev.has_processes else ""
        )
    )
    return Finding("light-kernels", why, advice, 0.6, source=source)


#: The rules, in order of precedence within one basis (measured findings come first).
CAUSE_RULES: list[CauseRule] = [input_bound, io_bound, host_bound, light_kernels]


def _nothing_found(ev: HostEvidence) -> Finding:
    why: list[str] = []
    host = host_line(ev)
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
        return Finding("unknown", why, advice, 0.5, source="")
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
    return Finding("unknown", why, advice, 0.5, source="")


def find_cause(
    ctx: CauseContext, th: Thresholds, rules: list[CauseRule] | None = None
) -> Finding:
    """The finding that decides the cause: the first measured one, else the first inferred
    one, else ``unknown``."""
    first_inferred: Finding | None = None
    for rule in CAUSE_RULES if rules is None else rules:
        found = rule(ctx, th)
        if found is None:
            continue
        if found.basis == "measured":
            return found
        if first_inferred is None:
            first_inferred = found
    return first_inferred or _nothing_found(ctx.ev)


def starving_cause(
    ev: HostEvidence, th: Thresholds, *, light: bool, label: str
) -> tuple[str, list[str], list[str], float]:
    """(cause, why, advice, confidence) for a starving card (see `find_cause`)."""
    found = find_cause(CauseContext(ev=ev, light=light, label=label), th)
    why = list(found.why)
    if found.source:
        why.append(f"cause {found.source}" if found.basis == "inferred"
                   else f"cause measured: {found.source}")
    return found.cause, why, list(found.advice), found.confidence
