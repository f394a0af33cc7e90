"""Measured evidence: what the probes inside the trainers saw, over a window.

The probe times ``next(dataloader)``, counts steps and reads the allocator in the training
process itself, so its figures outrank everything inferred from outside (a duty-cycle
utilisation, power, worker CPU). This module turns the `ProbeSample`s of a window into
`Measured` per card (data-wait share of the window, step time, throughput, allocator figures)
and `Rank` per trainer (for the straggler), plus the sentences that quote them. Pure.

The data-wait share, step time and samples/s of a window come from the cumulative counters of
its first and last publication (`probe_rates`): exact where two publications of one process
are in it, whatever the publishing interval; else the publication's own figures. A process
that never got a batch from a DataLoader gives no data-wait figure (its loop reads data some
other way), and publications older than ``probe_max_age_s`` are not evidence.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from gpusat_tui.analysis.probe_rates import span_rates
from gpusat_tui.analysis.probe_words import lines_words, note_line, phases_words, wait_sentence
from gpusat_tui.analysis.stack_shares import StackShares, stack_shares
from gpusat_tui.analysis.window import num
from gpusat_tui.model import CodeLine, Frame, ProbeAlloc

if TYPE_CHECKING:
    from gpusat_tui.analysis.thresholds import Thresholds

__all__ = [
    "PHASE_WORDS",
    "RUN_ADVICE",
    "Measured",
    "ProbeFacts",
    "Rank",
    "Straggler",
    "WithProbes",
    "measured_for_card",
    "probe_facts",
    "probe_phase",
    "ranks_of",
    "sample_phase",
    "straggler",
]

#: Advice for a verdict that rests on outside clues only.
RUN_ADVICE = (
    "Measure it from inside the job: start it as `gpusat-tui run -- python train.py ...` "
    "(or torchrun ...) and the verdict stands on its measured data wait, step time and "
    "allocator"
)


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


@dataclass
class Rank:
    """One probed trainer over the window."""

    pid: int
    rank: int | None
    card_id: str | None
    tie: str | None
    #: Data-wait share of the window, percent (None: the loop used no DataLoader).
    wait_pct: float | None
    step_ms: float | None
    samples_per_s: float | None
    batches_per_s: float | None
    span_s: float
    publications: int
    first_alloc: ProbeAlloc | None
    last_alloc: ProbeAlloc | None
    #: The DataLoader's worker processes as the probe read them; None if unknown.
    num_workers: int | None = None
    world_size: int | None = None
    #: The step's phases and the user's hottest lines over the window (`stack_shares`); None
    #: without a sampling probe.
    stack: StackShares | None = None
    #: Batches and optimizer steps counted over the window, and the phase they show.
    batches_delta: int = 0
    steps_delta: int = 0
    phase: str | None = None
    #: Why this trainer's data wait is not measured (its ``wait_pct`` is then None).
    wait_note: str | None = None
    framework: str | None = None

    @property
    def who(self) -> str:
        return f"PID {self.pid}" + (f", rank {self.rank}" if self.rank is not None else "")

    @property
    def name(self) -> str:
        return f"rank {self.rank}" if self.rank is not None else f"PID {self.pid}"


class WithProbes(Protocol):
    """What `ranks_of` reads of a frame's facts (`facts.FrameFacts`, which is built on this
    module's `probe_facts`)."""

    @property
    def probes(self) -> tuple[ProbeFacts, ...]: ...


def ranks_of(facts: Sequence[WithProbes], th: Thresholds) -> list[Rank]:
    """Every probed trainer in the window with fresh publications, by rank then PID."""
    by_pid: dict[int, list[ProbeFacts]] = {}
    for ff in facts:
        for p in ff.probes:
            if p.age_s is not None and p.age_s > th.probe_max_age_s:
                continue
            by_pid.setdefault(p.pid, []).append(p)
    ranks: list[Rank] = []
    for pid, pubs in by_pid.items():
        # One entry per publication (a file read twice between two writes counts once).
        seen: dict[float | None, ProbeFacts] = {}
        for p in pubs:
            seen.setdefault(p.elapsed_s, p)
        distinct = list(seen.values())
        last = pubs[-1]
        figures = span_rates(distinct)
        allocs = [p.alloc for p in pubs if p.alloc is not None]
        first = min(distinct, key=lambda p: p.elapsed_s or 0.0)
        newest = max(distinct, key=lambda p: p.elapsed_s or 0.0)
        d_batches = max(0, newest.batches - first.batches)
        d_steps = max(0, newest.steps - first.steps)
        if len(distinct) >= 2:
            phase = probe_phase(d_batches, d_steps, newest.steps)
        else:
            phase = sample_phase(newest)
        ranks.append(Rank(
            pid=pid,
            rank=last.rank,
            card_id=last.card_id,
            tie=last.tie,
            # A process that never got a batch waits on nothing we time: no figure.
            # Nor one whose probe says its wait is not measured (Keras fit, data sink...).
            wait_pct=figures.wait_pct if last.batches > 0 and not last.wait_note else None,
            step_ms=figures.step_ms,
            samples_per_s=figures.samples_per_s,
            batches_per_s=figures.batches_per_s,
            span_s=figures.span_s,
            publications=len(distinct),
            first_alloc=allocs[0] if allocs else None,
            last_alloc=allocs[-1] if allocs else None,
            num_workers=last.num_workers,
            world_size=last.world_size,
            batches_delta=d_batches,
            steps_delta=d_steps,
            phase=phase,
            wait_note=last.wait_note,
            framework=last.framework,
            stack=stack_shares(first, newest),
        ))
    ranks.sort(key=lambda r: (r.rank if r.rank is not None else 1 << 30, r.pid))
    return ranks


@dataclass
class Measured:
    """The probed trainer(s) driving one card, over the window."""

    ranks: list[Rank]

    @property
    def world_size(self) -> int | None:
        sizes = [r.world_size for r in self.ranks if r.world_size is not None]
        return max(sizes) if sizes else None

    @property
    def batches_flow(self) -> bool:
        """Batches were counted in the window (the job makes progress)."""
        return any(r.batches_delta > 0 or (r.batches_per_s or 0.0) > 0 for r in self.ranks)

    @property
    def phase(self) -> str | None:
        """The main rank's phase: ``eval``, ``no-steps``, ``train`` or None."""
        phases = [r.phase for r in self.ranks if r.phase is not None]
        if not phases:
            return None
        return "train" if "train" in phases else phases[0]

    @property
    def main(self) -> Rank:
        """The rank quoted: the one that waits most on data (they share the card)."""
        return max(self.ranks, key=lambda r: (r.wait_pct or 0.0, -(r.rank or 0)))

    @property
    def wait_pct(self) -> float | None:
        waits = [r.wait_pct for r in self.ranks if r.wait_pct is not None]
        return max(waits) if waits else None

    def note_lines(self) -> list[str]:
        """What the probes say they cannot measure, one line per trainer without a wait."""
        return [note_line(r.wait_note, r.who)
                for r in self.ranks if r.wait_pct is None and r.wait_note]

    @property
    def guess(self) -> bool:
        return any(r.tie == "guess" for r in self.ranks)

    def phase_line(self) -> str | None:
        """``why``'s line for where the main rank's step goes over the window, with its
        hottest user line ("step 458 ms: data 62 % · forward 20 % · …; hottest line
        train.py:40 collate_fn 58 %"); None without a sampling probe."""
        main = self.main
        shares = main.stack
        if shares is None:
            return None
        words = phases_words(main.step_ms, shares.phases)
        if words is None:
            return None
        hot = lines_words((s.line.file, s.line.line, s.line.function, s.pct)
                          for s in shares.lines[:1])
        who = f"{main.who}: " if len(self.ranks) > 1 else ""
        return f"{who}{words}" + (f"; hottest line {hot}" if hot else "") + \
            " (the trainer's sampled stack)"

    def wait_line(self, th: Thresholds) -> str:
        """``why``'s line for the main rank's measured data wait (`probe_words`)."""
        return wait_sentence(self.main, th,
                             phase=PHASE_WORDS["eval"] if self.phase == "eval" else None,
                             guess=self.guess)

    def fragmenting(self, th: Thresholds) -> list[str] | None:
        """The why lines of measured fragmentation, or None when the allocator is healthy
        (or unknown)."""
        for r in self.ranks:
            first, last = r.first_alloc, r.last_alloc
            if last is None or last.reserved_bytes is None or last.allocated_bytes is None:
                continue
            reserved, allocated = last.reserved_bytes, last.allocated_bytes
            if reserved < th.frag_reserved_ratio * max(allocated, 1):
                continue
            retries = _delta(first, last, "alloc_retries")
            ooms = _delta(first, last, "ooms")
            split_now = last.inactive_split_bytes
            split_grew = (
                split_now is not None
                and split_now >= th.frag_inactive_split_frac * reserved
                and (_delta(first, last, "inactive_split_bytes") or 0) > 0
            )
            if not (retries or split_grew):
                continue
            why = [
                f"allocator measured in the trainer ({r.who}): {_gib(allocated)} allocated "
                f"of {_gib(reserved)} reserved ({reserved / max(allocated, 1):.1f}x)"
            ]
            if retries:
                why.append(f"{retries} allocation retries in the window (the allocator "
                           "flushed its cache to find room: every retry stalls the device)")
            if split_now is not None:
                why.append(f"{_gib(split_now)} in inactive split blocks"
                           + (", growing" if split_grew else ""))
            if ooms:
                why.append(f"{ooms} out-of-memory errors in the window")
            return why
        return None

    def has_alloc(self) -> bool:
        return any(r.last_alloc is not None and r.last_alloc.reserved_bytes is not None
                   for r in self.ranks)


def _delta(first: ProbeAlloc | None, last: ProbeAlloc, name: str) -> int | None:
    now: int | None = getattr(last, name)
    then: int | None = getattr(first, name) if first is not None else None
    if now is None:
        return None
    return max(0, now - (then if then is not None else now))


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def measured_for_card(ranks: Sequence[Rank], card_id: str) -> Measured | None:
    if not ranks:
        return None  # no probe in the window (most windows)
    mine = [r for r in ranks if r.card_id == card_id]
    return Measured(mine) if mine else None


@dataclass(frozen=True)
class Straggler:
    """The rank the probes show out of line, and how."""

    rank: Rank
    #: The lines that say so (the job's ``why``).
    lines: list[str]
    #: "data-wait": it waits on its DataLoader while the others, in lock-step, wait for it in
    #: the collective; "step": it steps slower (ranks that do not step in lock-step).
    basis: str


def straggler(ranks: Sequence[Rank], th: Thresholds) -> Straggler | None:
    """The rank out of line with the others, and the lines that say so; None if none is.

    First by data wait: one rank waits on its DataLoader while the others (waiting in the
    collective for it) do not; where every rank waits on data, none is singled out. Else by
    step time, for ranks that do not step in lock-step.
    """
    waits = [r for r in ranks if r.wait_pct is not None]
    if len(waits) >= 2:
        worst = max(waits, key=lambda r: r.wait_pct or 0.0)
        others = [r for r in waits if r is not worst]
        base = statistics.median(r.wait_pct or 0.0 for r in others)
        wait = worst.wait_pct or 0.0
        # The others must not be input-bound themselves: ranks that all wait on their data
        # split a synchronised step's slack between data wait and the collective at random,
        # so equal ranks read 60 % and 40 % as often as not; that is input-bound everywhere,
        # not one rank holding the rest back.
        if (wait >= th.data_wait_starving_pct and wait - base >= th.straggler_wait_gap_pct
                and base < th.data_wait_starving_pct):
            names = ", ".join(r.name for r in others)
            return Straggler(worst, basis="data-wait", lines=[
                f"{worst.name} (PID {worst.pid}"
                + (f", {worst.card_id}" if worst.card_id else "")
                + f") waits {wait:.0f} % of the window on its DataLoader while {names} "
                f"wait{'s' if len(others) == 1 else ''} {base:.0f} %: measured in the "
                "trainers; the others spend that time waiting for it in the collective",
            ])
    steps = [r for r in ranks if r.step_ms is not None]
    if len(steps) >= 2:
        worst = max(steps, key=lambda r: r.step_ms or 0.0)
        others = [r for r in steps if r is not worst]
        base = statistics.median(r.step_ms or 0.0 for r in others)
        if base > 0 and (worst.step_ms or 0.0) >= th.straggler_step_ratio * base:
            return Straggler(worst, basis="step", lines=[
                f"{worst.name} (PID {worst.pid}) steps in {worst.step_ms:,.0f} ms while "
                f"{', '.join(r.name for r in others)} take {base:,.0f} ms: measured in the "
                "trainers",
            ])
    return None
