"""Why a ``starving`` card starves: the cause, from the evidence tied to the card.

Each rule in `CAUSE_RULES` looks at the evidence and returns a `Finding` (a cause with the
figures that show it, what to try, and whether it was **measured** or **inferred**) or None.
A measured finding (figures from inside the job or from the device's own counters: a probe's
time in ``next(dataloader)``, GPM SM activity) outranks every inferred one (host CPU figures,
from which a bottleneck is only inferred); among findings of one rank the first rule wins.
The ``why`` of the verdict ends with the basis of the cause it gives. A new source of evidence
adds a rule (and, if it needs them, fields of `HostEvidence`): nothing else changes.

The rules and their order are `cause_rules`'; what they read and answer, `cause_finding`.
Nothing found: ``unknown``, saying what was missing and how to get it.

Every rule reads the evidence of the card's own job: its trainer's and workers' CPU, state,
counters and run-queue wait. Host-wide figures (iowait, host CPU, other jobs' processes) are
quoted in ``why`` as context and never decide a cause: another process's disk traffic raises
the host's iowait for every job on it. A card without process evidence is ``unknown``.
A collective wait for a peer card on this host is the job rules' (`job`): only that
peer's figures show it.
"""

from __future__ import annotations

from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
from gpusat_tui.analysis.evidence.host_words import host_line, worker_line
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.verdicts.cause_finding import CauseContext, CauseRule, Finding
from gpusat_tui.analysis.verdicts.cause_rules import CAUSE_RULES
from gpusat_tui.analysis.wording import pct

__all__ = ["PID_ADVICE", "find_cause", "starving_cause"]


PID_ADVICE = (
    "Run with --pid <trainer PID> (or start the job with `gpusat-tui run -- python ...`) so "
    "the trainer and its DataLoader workers are watched: their own CPU, disk waits, reads, "
    "writes and run-queue wait tell input-, I/O-, host- and quota-bound apart"
)


def _nothing_found(ctx: CauseContext) -> Finding:
    ev = ctx.ev
    why: list[str] = []
    host = host_line(ev)
    if not ev.has_processes:
        if ev.foreign_processes:
            why.append(
                "cause unknown: processes were seen, but none is tied to this card, and "
                "another job's processes are no evidence for it"
            )
        else:
            why.append(
                "cause unknown: no process of this card's job is watched (no trainer listed "
                "by the tool, given with --pid or found by its DataLoader workers), so its "
                "own CPU, disk waits, reads and writes are missing"
            )
        if ctx.light:
            why.append(
                f"{ctx.label} steadily high at low power: small kernels, a wait in a "
                "collective or a trainer spinning on the host look alike from the card alone"
            )
        if host:
            why.append(f"host: {host} (the whole host, context only: not this job's figures)")
        return Finding("unknown", why, [PID_ADVICE], 0.5, source="")
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
    return first_inferred or _nothing_found(ctx)


def starving_cause(
    ev: HostEvidence, th: Thresholds, *, light: bool, label: str, busy: bool = False,
    probe_world_size: int | None = None, rules: list[CauseRule] | None = None,
) -> tuple[str, list[str], list[str], float]:
    """(cause, why, advice, confidence) for a starving card (see `find_cause`).

    Kept with ``ev`` per set of arguments: a window's cards share one `HostEvidence` where no
    process names its cards (most hosts), so its starving cards find their cause once."""
    key = (id(th), light, label, busy, probe_world_size, id(rules))
    kept = ev.causes.get(key)
    if kept is not None and kept[0] is th and kept[1] is rules:
        cause, why, advice, conf = kept[2]
        return cause, list(why), list(advice), conf
    ctx = CauseContext(ev=ev, light=light, label=label, busy=busy,
                       probe_world_size=probe_world_size)
    found = find_cause(ctx, th, rules)
    why = list(found.why)
    if found.source:
        why.append(f"cause {found.source}" if found.basis == "inferred"
                   else f"cause measured: {found.source}")
    # The thresholds and rules are kept with the result, so their ids in the key stay theirs.
    ev.causes[key] = (th, rules, (found.cause, tuple(why), tuple(found.advice), found.confidence))
    return found.cause, why, list(found.advice), found.confidence
