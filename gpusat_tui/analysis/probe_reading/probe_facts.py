"""One probe publication as the verdict reads it: `ProbeFacts`, taken once per frame from its
`ProbeSample`s (`probe_facts`), every figure checked for its type (a recording from an older or
hostile probe gives None, never a crash), and the phase one publication or two show
(`probe_phase`, `sample_phase`). Pure."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpusat_tui.analysis.window import num
from gpusat_tui.model import CodeLine, Frame, ProbeAlloc

__all__ = ["PHASE_WORDS", "ProbeFacts", "probe_facts", "probe_phase", "sample_phase"]


@dataclass(frozen=True, slots=True)
class ProbeFacts:
    """The figures of one ProbeSample the verdict reads, taken once per frame."""

    pid: int
    rank: int | None
    card_id: str | None
    tie: str | None
    data_wait_s: float | None
    elapsed_s: float | None
    data_wait_pct: float | None
    step_ms: float | None
    samples_per_s: float | None
    batches_per_s: float | None
    batches: int
    age_s: float | None
    alloc: ProbeAlloc | None
    steps: int = 0
    last_batch_s: float | None = None
    last_step_s: float | None = None
    batch_size: int | None = None
    num_workers: int | None = None
    world_size: int | None = None
    #: Why the probe does not measure this trainer's data wait (then no wait figure).
    wait_note: str | None = None
    #: Whose hooks measured ("torch", "tf.data", "mindspore"...).
    framework: str | None = None
    #: The training thread's newest sampled stack (`ProbeSample`): for how long it has not
    #: changed, its phase, the framework function that decided it, its innermost user line
    #: ("train.py:88") and its signature; None without a sampling probe.
    stack_still_s: float | None = None
    stack_phase: str | None = None
    stack_where: str | None = None
    stack_line: str | None = None
    stack_sig: str | None = None
    #: The sampler's cumulative counts (`stack_shares` takes a window's shares from two).
    stack_samples: int = 0
    phase_samples: Mapping[str, int] = field(default_factory=dict)
    user_lines: tuple[CodeLine, ...] = ()


def probe_facts(frame: Frame) -> tuple[ProbeFacts, ...]:
    probes = getattr(frame, "probes", None)
    if not isinstance(probes, list | tuple):
        return ()
    out = []
    for p in probes:
        pid = getattr(p, "pid", None)
        if not isinstance(pid, int):
            continue
        card = getattr(p, "card_id", None)
        rank = getattr(p, "rank", None)
        batches = getattr(p, "batches", 0)
        size = getattr(p, "batch_size", None)
        workers = getattr(p, "num_workers", None)
        alloc = getattr(p, "alloc", None)
        note = getattr(p, "data_wait_note", None)
        out.append(ProbeFacts(
            pid=pid,
            rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
            card_id=card if isinstance(card, str) else None,
            tie=getattr(p, "tie", None) if isinstance(getattr(p, "tie", None), str) else None,
            data_wait_s=num(getattr(p, "data_wait_s", None)),
            elapsed_s=num(getattr(p, "elapsed_s", None)),
            data_wait_pct=num(getattr(p, "data_wait_pct", None)),
            step_ms=num(getattr(p, "step_ms", None)),
            samples_per_s=num(getattr(p, "samples_per_s", None)),
            batches_per_s=num(getattr(p, "batches_per_s", None)),
            batches=batches if isinstance(batches, int) else 0,
            age_s=num(getattr(p, "age_s", None)),
            alloc=alloc if isinstance(alloc, ProbeAlloc) else None,
            steps=_count(getattr(p, "steps", 0)) or 0,
            world_size=_count(getattr(p, "world_size", None)),
            last_batch_s=num(getattr(p, "last_batch_s", None)),
            last_step_s=num(getattr(p, "last_step_s", None)),
            batch_size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            num_workers=(workers if isinstance(workers, int) and not isinstance(workers, bool)
                         else None),
            wait_note=note if isinstance(note, str) and note else None,
            framework=(getattr(p, "framework", None)
                       if isinstance(getattr(p, "framework", None), str) else None),
            stack_still_s=num(getattr(p, "stack_still_s", None)),
            stack_phase=_text(getattr(p, "stack_phase", None)),
            stack_where=_text(getattr(p, "stack_where", None)),
            stack_line=_stack_line(p),
            stack_sig=_text(getattr(p, "stack_sig", None)),
            stack_samples=_count(getattr(p, "stack_samples", 0)) or 0,
            phase_samples=_mapping(getattr(p, "phase_samples", None)),
            user_lines=_lines(getattr(p, "user_lines", ())),
        ))
    return tuple(out)


def _mapping(value: object) -> Mapping[str, int]:
    return value if isinstance(value, dict) else {}


def _lines(value: object) -> tuple[CodeLine, ...]:
    if not isinstance(value, tuple):
        return ()
    return tuple(v for v in value if isinstance(v, CodeLine))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _stack_line(p: object) -> str | None:
    """``train.py:88``: the newest sampled stack's innermost user line (`ProbeFacts`)."""
    line = getattr(p, "stack_line", None)
    file, number = getattr(line, "file", None), getattr(line, "line", None)
    if isinstance(file, str) and isinstance(number, int):
        return f"{os.path.basename(file)}:{number}"
    return None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def probe_phase(batches_delta: int, steps_delta: int, steps: int) -> str | None:
    """``eval`` for batches without optimizer steps after steps were counted (validation,
    generation); ``no-steps`` for batches where no optimizer step was ever counted (an
    inference job, or an optimizer the probe cannot see); ``train`` with steps; None when no
    batch moved."""
    if steps_delta > 0:
        return "train"
    if batches_delta <= 0:
        return None
    return "eval" if steps > 0 else "no-steps"


def sample_phase(probe: object) -> str | None:
    """`probe_phase` of one publication (a `ProbeSample`, or its `ProbeFacts`): over its last
    interval, batches without an optimizer step give no step time while ``steps`` is already
    counted."""
    rate = num(getattr(probe, "batches_per_s", None))
    steps = getattr(probe, "steps", 0)
    if not isinstance(steps, int) or rate is None or rate <= 0:
        return None
    step_ms = num(getattr(probe, "step_ms", None))
    if steps > 0 and step_ms is None:
        return "eval"
    return "train" if steps > 0 else "no-steps"


#: How the job line and ``why`` name a phase.
PHASE_WORDS = {
    "eval": "evaluation (batches without optimizer steps)",
    "no-steps": "batches without optimizer steps (inference, or an optimizer not seen)",
    "train": "training",
}
