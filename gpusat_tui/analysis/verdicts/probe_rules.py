"""The card rules that stand on measurements from the trainer's probe.

`measured_verdict` decides where the probe's figures are the better evidence: allocator
figures showing fragmentation (reserved far above allocated, with retries or growing inactive
split blocks), and a data wait at or above ``data_wait_starving_pct`` (starving whatever the
utilisation says; the cause from the workers). `with_measurement` completes a verdict the
outside figures decided: it quotes the wait, and a wait below ``data_wait_low_pct`` rules out
an input-side cause of a starving card (the step itself is slow: the trainer's own thread,
synchronisation or small kernels).
"""

from __future__ import annotations

from collections.abc import Callable

from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
from gpusat_tui.analysis.evidence.host_words import worker_line
from gpusat_tui.analysis.evidence.thread_pipelines import (
    THREAD_PIPELINES,
    more_in_flight,
    thread_pipeline_finding,
)
from gpusat_tui.analysis.probe_reading.measured import Measured
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.verdicts.card_figures import CardFigures, make_verdict
from gpusat_tui.analysis.verdicts.cause_finding import CauseContext
from gpusat_tui.analysis.verdicts.cause_rules import INPUT_RULES, spin_wait
from gpusat_tui.analysis.verdicts.causes import starving_cause
from gpusat_tui.analysis.wording import ALLOC_CONF_VARS, pct
from gpusat_tui.model import Verdict

__all__ = ["measured_verdict", "waiting_cause", "with_measurement"]

_INPUT_ADVICE = [
    "Give the DataLoader more in flight: more num_workers, a larger prefetch_factor, "
    "persistent_workers=True, pin_memory=True",
    "Look for blocking calls in the dataset (remote storage, a lock, sleeps, per-sample "
    "network requests): cache or prefetch what it fetches",
]


def measured_verdict(
    f: CardFigures, th: Thresholds, evidence: Callable[[], HostEvidence], meas: Measured
) -> Verdict | None:
    """The verdict the probe's figures decide on their own, or None to go on with the rules."""
    pfrac = f.pfrac
    working_hard = f.util.median >= th.busy_util_pct and (
        pfrac is not None and pfrac >= th.saturated_power_frac
    )
    frag = meas.fragmenting(th)
    if frag is not None and not working_hard:
        var = ALLOC_CONF_VARS.get(f.vendor, "PYTORCH_CUDA_ALLOC_CONF")
        advice = [
            f"Set {var}=expandable_segments:True so freed blocks can be reused",
            "Keep tensor shapes static (pad or bucket variable lengths) and pre-allocate "
            "buffers; no empty_cache() in the loop",
            "A smaller batch leaves the allocator headroom",
        ]
        return make_verdict(
            "fragmenting", None, [*frag, f.util_line(th), f.power_line()], advice, 0.9, f
        )
    wait = meas.wait_pct
    if wait is None or wait < th.data_wait_starving_pct or not meas.batches_flow:
        # No batch in the window: a loop stuck in next(dataloader) is no slow input but a
        # hang; the stall rule judges it.
        return None
    cause, cwhy, cadvice = waiting_cause(evidence(), th, f.label, meas.main.num_workers,
                                         meas.main.framework)
    why = [meas.wait_line(th), f.util_line(th), f.power_line()]
    if f.util.median >= th.busy_util_pct:
        why.append(f"{f.label} reads busy, but the measured wait says the card idles between "
                   "batches: the wait decides")
    return make_verdict("starving", cause, why + cwhy, cadvice, 0.9, f)


def waiting_cause(
    ev: HostEvidence, th: Thresholds, label: str, said_workers: int | None = None,
    framework: str | None = None,
) -> tuple[str, list[str], list[str]]:
    """(cause, why, advice) of a loop measured waiting on its data: ``cpu-quota`` where the
    job's cgroup quota throttles it, ``io-bound`` where its input pipeline waits on disk, else
    ``input-bound`` (the wait itself is the evidence). ``said_workers``:
    the DataLoader's ``num_workers`` as the probe read it (None: not said)."""
    cause, cwhy, cadvice, _ = starving_cause(ev, th, light=False, label=label,
                                             rules=INPUT_RULES)
    if cause in ("cpu-quota", "input-bound", "io-bound"):
        return cause, cwhy, cadvice
    advice = [more_in_flight(framework), _INPUT_ADVICE[1]]
    if ev.n_workers == 0 and framework in THREAD_PIPELINES:
        why, advice = thread_pipeline_finding(ev, th, framework)
        return "input-bound", why, advice
    if ev.n_workers == 0 and said_workers:
        return "input-bound", [
            f"the DataLoader runs {said_workers} worker{'s' if said_workers > 1 else ''} "
            "(measured in the trainer) that the process monitor cannot see (another PID "
            "namespace, or not readable): the batches arrive too slowly all the same"
        ], advice
    if ev.n_workers == 0:
        return "input-bound", [
            "no DataLoader workers seen: with num_workers=0 the loading runs in the training "
            "loop itself, and that is what it waits on"
        ], ["Set DataLoader num_workers > 0 so batches are prepared while the step runs",
            *_INPUT_ADVICE]
    return "input-bound", [
        f"{worker_line(ev)}, no disk wait: the batches arrive too slowly for another reason "
        "(too few in flight, slow storage or network, a lock)"
    ], advice


def with_measurement(
    verdict: Verdict,
    f: CardFigures,
    th: Thresholds,
    evidence: Callable[[], HostEvidence],
    meas: Measured,
) -> Verdict:
    """``verdict`` (decided by the outside figures) completed with what the probe measured."""
    verdict = _measured_why(verdict, f, th, evidence, meas)
    phases = meas.phase_line()
    if phases is None or phases in verdict.why or verdict.kind == "idle":
        return verdict
    return verdict.model_copy(update={"why": [*verdict.why, phases]})


def _measured_why(
    verdict: Verdict,
    f: CardFigures,
    th: Thresholds,
    evidence: Callable[[], HostEvidence],
    meas: Measured,
) -> Verdict:
    wait = meas.wait_pct
    notes = [n for n in meas.note_lines() if n not in verdict.why]
    if notes:
        verdict = verdict.model_copy(update={"why": [*verdict.why, *notes]})
    if wait is None or verdict.kind == "unknown":
        return verdict
    line = meas.wait_line(th)
    if line in verdict.why:  # decided by the measurement already
        return verdict
    if verdict.kind == "starving" and wait < th.data_wait_low_pct:
        return _not_data(verdict, f, th, evidence(), meas, line)
    if verdict.kind in ("fragmenting", "stalled"):  # what decided it stays first
        return verdict.model_copy(update={"why": [*verdict.why, line]})
    return verdict.model_copy(update={"why": [line, *verdict.why]})


def _not_data(
    verdict: Verdict,
    f: CardFigures,
    th: Thresholds,
    ev: HostEvidence,
    meas: Measured,
    line: str,
) -> Verdict:
    """A starving card whose loop does not wait on data: the step itself is slow (a
    checkpoint, or a wait for a peer on another node, keep their cause: neither reads data)."""
    if verdict.cause in ("checkpoint", "collective-wait"):
        return verdict.model_copy(update={"why": [line, *verdict.why]})
    base = [w for w in verdict.why if w][:3]
    pegged = ev.trainer_cpu is not None and ev.trainer_cpu >= th.trainer_pegged_pct
    busy = f.util.median >= th.busy_util_pct or (
        f.sm_active is not None and f.sm_active.median >= th.sm_active_busy_pct
    )
    spin = spin_wait(
        CauseContext(ev=ev, light=False, label=f.label, busy=True,
                     probe_world_size=meas.world_size), th,
    ) if pegged and busy else None
    if spin is not None:
        # A busy card does not wait on the host: the pegged trainer spins in a synchronise.
        cause, why, advice = spin.cause, [line, *base, *spin.why], list(spin.advice)
    elif pegged:
        cause = "host-bound"
        why = [line, *base, f"trainer at {pct(ev.trainer_cpu or 0.0)} CPU (pegged): the training "
                            "loop's own Python work holds the card back"]
        advice = [
            "Look for .item(), .cpu(), printing tensors or synchronize() in every step; log "
            "metrics every N steps",
            "Fewer, bigger kernels: larger batch, AMP/bf16, torch.compile or CUDA graphs",
        ]
    elif verdict.cause == "light-kernels":
        cause = "light-kernels"
        why = [line, *base, "so the card is fed, and runs small kernels"]
        advice = [a for a in verdict.advice if "gpusat-tui run" not in a]
    else:
        cause = "unknown"
        why = [line, *base, "not waiting on data and the trainer is not pegged: the step "
                            "waits on something else (synchronisation, collectives, another "
                            "process on the card)"]
        advice = [
            "Profile a few steps (torch.profiler) to see what each step waits on: "
            "communication, synchronisation (.item(), .cpu()), or small kernels",
        ]
    return make_verdict("starving", cause, why, advice, 0.75, f)
