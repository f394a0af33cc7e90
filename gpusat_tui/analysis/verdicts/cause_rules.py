"""The host-side cause rules, each a function of the evidence returning a `Finding` or None.

The inferred rules, in `CAUSE_RULES`' order: ``cpu-quota`` (the job's own cgroup CPU quota
throttles it), ``input-bound`` (DataLoader workers pegged, or asking for a full core when CPU %
and the time queued for a CPU are added), ``checkpoint`` (the trainer itself writes, or waits
on storage beside its workers: a checkpoint or a save, not the input pipeline), ``io-bound``
(the job's own input pipeline in disk-sleep), ``host-bound`` (the trainer pegged while workers
are not, on a card that is not busy: a busy card is not waiting on the host),
``collective-wait`` or ``light-kernels`` for a pegged trainer beside a busy card (it spins in a
synchronise: for a distributed job, on a peer on another node), ``io-bound`` again for workers
that sleep on reads (their counters move, their CPU does not), ``light-kernels`` (busy
utilisation at low power, the job's processes seen and none a bottleneck). The order matters:
among findings of one rank the first rule wins (`causes.find_cause`).
"""

from __future__ import annotations

from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
from gpusat_tui.analysis.evidence.host_words import host_line, worker_line
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.verdicts.cause_finding import CauseContext, CauseRule, Finding
from gpusat_tui.analysis.verdicts.progress import rate_words
from gpusat_tui.analysis.wording import pct, plural

__all__ = ["CAUSE_RULES", "INPUT_RULES", "cores_words", "spin_wait", "workers_advice"]


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


def workers_advice(ev: HostEvidence, cores: int, th: Thresholds) -> str:
    """More DataLoader workers only where cores are free: every trainer and worker on the host
    counts (other jobs' too, one core each: pegged workers want one), and so does the host's
    CPU where it says more are busy; the free cores are shared between the host's trainers,
    and the advice is per trainer (``num_workers`` is each DataLoader's). What it costs: a
    trainer that is not input-bound still gets its share, so the figure errs low."""
    own = max(ev.n_trainers, 1)
    per_loader = max(round(ev.n_workers / own), 1)
    trainers = max(ev.host_trainers, own)
    workers = max(ev.host_workers, ev.n_workers)
    taken = trainers + workers
    for busy_pct in (ev.host_cpu * cores if ev.host_cpu is not None else None,
                     ev.host_proc_cpu):
        if busy_pct is not None:
            taken = max(taken, round(busy_pct / 100))
    free = max(cores - taken, 0)
    more_each = free // trainers
    host = f" (host CPU {pct(ev.host_cpu)})" if ev.host_cpu is not None else ""
    host_busy = ev.host_cpu is not None and ev.host_cpu >= th.host_busy_pct
    if trainers == 1:
        busy = f"about {free} free"
    else:
        busy = (f"{taken} of them busy with the {trainers} trainers on this host and their "
                f"{plural(workers, 'worker')}, about {free} free")
    if free >= 2 and more_each >= 1 and not host_busy:
        target = min(per_loader * 2, per_loader + more_each)
        each = f" in each of the {own} trainers" if own > 1 else ""
        return (f"Raise DataLoader num_workers from {per_loader} towards {target}{each}: "
                f"{cores} cores, {busy}{host}")
    if trainers == 1 or host_busy:
        return (f"All {cores} cores are busy{host}: more workers will not help; make each "
                "sample cheaper")
    return (f"{cores} cores, {busy}{host}: too few for more workers in each trainer; make "
            "each sample cheaper")


def cores_words(cores: float) -> str:
    """``half a core``, ``1.5 cores``, ``4 cores``."""
    if abs(cores - 0.5) < 1e-9:
        return "half a core"
    text = f"{cores:.2f}".rstrip("0").rstrip(".")
    return f"{text} core" if text == "1" else f"{text} cores"


def cpu_quota(ctx: CauseContext, th: Thresholds) -> Finding | None:
    """The job's own cgroup CPU quota throttles it (its trainer's or workers' ``cpu.stat``),
    beside a card that is not busy: the limit in its job file holds it back, not the host.
    First among the rules: a throttled pipeline also reads pegged or queued, and "more
    workers" would only split the same quota further."""
    ev = ctx.ev
    held = ev.quota_throttled_pct
    if ctx.busy or ev.quota_cores is None or held is None or held < th.quota_throttled_pct:
        return None
    parts = [worker_line(ev)]
    if ev.trainer_cpu is not None:
        parts.append(f"trainer at {pct(ev.trainer_cpu)} CPU")
    why = [
        f"the job's CPU quota is {cores_words(ev.quota_cores)} (its cgroup's cpu.max or "
        f"cpu.cfs_quota_us) and the kernel throttled it in {pct(held)} of its periods "
        "(cpu.stat): its trainer and workers are held back by their own limit, not by the "
        "host",
        ", ".join(parts),
    ]
    host = host_line(ev)
    if host:
        why.append(f"host: {host} (context only)")
    advice = [
        "Raise the job's CPU limit: Slurm --cpus-per-task, Kubernetes resources.limits.cpu, "
        "docker --cpus: the quota, not the host, holds the input pipeline back",
        "Or make each sample cheaper: cache or pre-decode the dataset, lighten the CPU "
        "augmentation or move it to the accelerator",
        "Match threads to the quota (OMP_NUM_THREADS, torch.set_num_threads, num_workers at "
        "most the quota's cores) so they do not spend it waiting on each other",
    ]
    return Finding("cpu-quota", why, advice, 0.85, source=(
        "inferred from the host side (the job's cgroup quota and the kernel's throttling "
        "counters)"))


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
        advice.append(workers_advice(ev, ev.cpu_count, th))
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
    """The job's own input pipeline in disk-sleep (its workers, or its trainer without
    workers). Host iowait alone is never the cause: another process's disk traffic raises it
    for every job on the host; it is quoted as context."""
    ev = ctx.ev
    if ev.dstate_frac is None or ev.dstate_frac < th.dstate_frac:
        return None
    who = "DataLoader workers" if ev.n_workers else "the trainer (no workers: it reads)"
    why = [
        f"{who} waiting on disk (D state) in {pct(100 * ev.dstate_frac)} of samples",
    ]
    if ev.iowait is not None:
        why.append(f"host iowait {pct(ev.iowait)} (the whole host, context only)")
    if ev.n_workers:
        why.append(worker_line(ev))
    advice = [
        "Reads wait on storage: copy the dataset to local NVMe or /dev/shm, or cache it "
        "after the first epoch",
        "Pack many small files into large sequential shards (tar/WebDataset, LMDB)",
        "Keep more reads in flight: more workers and a larger prefetch_factor",
    ]
    return Finding("io-bound", why, advice, 0.8, source=(
        "inferred from the job's own processes (their state: D, waiting on storage)"))


def host_bound(ctx: CauseContext, th: Thresholds) -> Finding | None:
    """The trainer pegged (or asking for a full core) while its workers are not, and the card
    not busy (a busy card does not wait on the host: see `spin_wait`)."""
    ev = ctx.ev
    if ev.trainer_cpu is None or ctx.busy:
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


def checkpoint(ctx: CauseContext, th: Thresholds) -> Finding | None:
    """The trainer itself writes (``wchar``), or waits on storage while its workers do the
    reading, and the card is not busy: the job is saving, not starving on its input."""
    ev = ctx.ev
    if ctx.busy:
        return None
    writes, reads = ev.trainer_wchar, ev.trainer_rchar or 0.0
    writing = writes is not None and writes >= th.checkpoint_write_bps and writes > reads
    waiting = (
        ev.trainer_dstate_frac is not None
        and ev.trainer_dstate_frac >= th.dstate_frac
        and ev.n_workers > 0
        and (writes is None or writes >= reads)
    )
    if not (writing or waiting):
        return None
    parts = []
    if writes is not None:
        parts.append(f"the trainer writes {rate_words(writes)} (its write calls)")
    if ev.trainer_dstate_frac:
        parts.append(
            f"{'it' if parts else 'the trainer'} waits on storage (D state) in "
            f"{pct(100 * ev.trainer_dstate_frac)} of polls"
        )
    why = [
        " and ".join(parts) + f" while {worker_line(ev)}: the job is saving (a checkpoint, "
        "a log or an export) and the card waits for it; this is not the input pipeline",
    ]
    if ev.iowait is not None:
        why.append(f"host iowait {pct(ev.iowait)} (the whole host, context only)")
    advice = [
        "Checkpoint asynchronously: torch.distributed.checkpoint.async_save, or copy the "
        "state_dict to CPU and write it from a background thread, so steps go on meanwhile",
        "Shard it: each rank writes its own part (torch.distributed.checkpoint, FSDP's sharded "
        "state dict) instead of one rank writing the whole model",
        "Write to fast local storage (NVMe, /dev/shm) and copy it to the shared file system "
        "in the background; or save less often",
        "If it is a log: flush metrics every N steps, not every step",
    ]
    source = (
        "inferred from the host side (the trainer's write counters and process state)"
        if writes is not None
        else "inferred from the host side (the trainer's process state beside its workers')"
    )
    return Finding("checkpoint", why, advice, 0.75 if writing else 0.65, source=source)


def spin_wait(ctx: CauseContext, th: Thresholds) -> Finding | None:
    """A pegged trainer beside a busy card: it spins in a synchronise, waiting for the card,
    or (a distributed job) for a peer rank; never host-bound."""
    ev = ctx.ev
    if not ctx.busy or ev.trainer_cpu is None:
        return None
    demand = ev.trainer_cpu + (ev.trainer_delay or 0.0)
    if ev.trainer_cpu < th.trainer_pegged_pct and demand < th.trainer_pegged_pct:
        return None
    spin = (
        f"trainer at {pct(ev.trainer_cpu)} CPU beside a card busy most of the window: a "
        "busy card is not waiting on the host, so the trainer spins waiting for it "
        "(a synchronise: .item(), .cpu(), a collective)"
    )
    if ctx.distributed:
        why = [
            spin,
            f"the job is distributed ({ctx.world_words()}) and no peer card of it is on this "
            f"host: this rank waits in a collective for a rank on another node ({ctx.label} "
            "counts a spinning all-reduce as busy)",
        ]
        advice = [
            "Nothing to tune on this card: it waits for a slower rank on another node. Find "
            "it: compare the ranks' step times (gpusat-tui on each node, or `gpusat-tui run` "
            "in each rank), their input pipelines and their cards' throttling",
            "NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=COLL) logs each rank's collectives; a slow "
            "inter-node link shows as every rank waiting in all-reduce",
            "A larger batch or AMP here would not help: the step time is set by the slowest "
            "rank",
        ]
        return Finding("collective-wait", why, advice, 0.65, source=(
            "inferred from the host side (the trainer's CPU and its launcher's variables) "
            "and the card's utilisation"))
    why = [spin, "no sign of a distributed job (no world size or rank set): small kernels "
           "keep the card's duty cycle up while each does little"]
    advice = [
        f"{ctx.label} counts any running kernel: the card runs many small kernels. Give each "
        "more work: larger batch, AMP/bf16, fused ops, torch.compile or CUDA graphs",
        "Sync less: no .item()/.cpu() every step; log every N steps",
    ]
    return Finding("light-kernels", why, advice, 0.55, source=(
        "inferred from the card's utilisation and power, with the host side checked"))


def slow_reads(ctx: CauseContext, th: Thresholds) -> Finding | None:
    """The input pipeline moves data or wakes often while its CPU stays low, the card idle:
    it sleeps on reads (a remote fetch, network storage), not on CPU."""
    ev = ctx.ev
    if ctx.busy:
        return None
    reads, wakes = ev.input_rchar, ev.input_switches
    reading = reads is not None and reads >= th.progress_io_bps
    waking = wakes is not None and wakes >= th.progress_switches_per_s
    low = ev.worker_cpu if ev.n_workers else ev.trainer_cpu
    if not (reading or waking) or low is None or low >= th.worker_pegged_pct / 2:
        return None
    who = worker_line(ev) if ev.n_workers else f"the trainer (no workers) at {pct(low)} CPU"
    seen = []
    if reading and reads is not None:
        seen.append(f"read {rate_words(reads)}")
    if waking and wakes is not None:
        seen.append(f"wake up to {wakes:.0f} times a second each")
    why = [
        f"{who}: they {' and '.join(seen)} while using little CPU, so they sleep on reads "
        "(a remote fetch, network or slow storage), not on decoding",
    ]
    advice = [
        "Keep more reads in flight: more DataLoader workers (they sleep, so they cost little "
        "CPU) and a larger prefetch_factor",
        "Fetch in bulk or cache what is fetched: a local copy of a remote dataset, shards "
        "instead of per-sample requests",
        "Measure the data wait from inside the job to confirm: `gpusat-tui run -- python ...`",
    ]
    return Finding("io-bound", why, advice, 0.55, source=(
        "inferred from the host side (the input pipeline's I/O counters and wake-ups)"))


def light_kernels(ctx: CauseContext, th: Thresholds) -> Finding | None:
    """Utilisation steadily high at low power, with the job's processes seen and no host
    bottleneck among them (without them the card's figures alone cannot tell small kernels
    from a wait in a collective or on the host: `_nothing_found`)."""
    ev = ctx.ev
    if not ctx.light or not ev.has_processes:
        return None
    why = [
        f"no host bottleneck seen ({worker_line(ev)}"
        + (f", trainer at {pct(ev.trainer_cpu)} CPU" if ev.trainer_cpu is not None else "")
        + ")"
    ]
    advice = [
        f"{ctx.label} counts any running kernel: the card runs many small kernels. Give each "
        "more work: larger batch, AMP/bf16, fused ops, torch.compile or CUDA graphs",
        "If nothing should be running, trust power: some tools read busy on an idle card",
    ]
    return Finding("light-kernels", why, advice, 0.6, source=(
        "inferred from the card's power against its utilisation, with the host side checked"))


#: The rules, in order of precedence within one basis (measured findings come first).
CAUSE_RULES: list[CauseRule] = [
    cpu_quota, input_bound, checkpoint, io_bound, host_bound, spin_wait, slow_reads,
    light_kernels,
]
#: The rules about the input pipeline, for a loop measured waiting on its data (the probe):
#: then the trainer is not saving, and the cause is among these. Not `slow_reads`: its
#: wake-ups and pipe reads are also what any worker feeding a loop at speed shows, so beside a
#: measured wait they would call every pipeline that sleeps (a rate limit, a lock) io-bound.
INPUT_RULES: list[CauseRule] = [cpu_quota, input_bound, io_bound]


#: What to run to give a card process evidence: the one advice of a cause without it.
