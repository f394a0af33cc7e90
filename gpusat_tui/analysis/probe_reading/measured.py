"""Measured evidence: what the probes inside the trainers driving one card saw, over a window.

The probe times ``next(dataloader)``, counts steps and reads the allocator in the training
process itself, so its figures outrank everything inferred from outside (a duty-cycle
utilisation, power, worker CPU). `Measured` gathers the window's `probe_ranks.Rank`s of one
card and says what they show: the data wait of the rank that waits most, the step's phases,
measured fragmentation, and the sentences that quote them. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpusat_tui.analysis.probe_reading.probe_facts import PHASE_WORDS
from gpusat_tui.analysis.probe_reading.probe_ranks import Rank
from gpusat_tui.analysis.probe_reading.probe_words import (
    lines_words,
    note_line,
    phases_words,
    wait_sentence,
)
from gpusat_tui.model import ProbeAlloc

if TYPE_CHECKING:
    from gpusat_tui.analysis.thresholds import Thresholds

__all__ = ["RUN_ADVICE", "Measured", "measured_for_card"]

#: Advice for a verdict that rests on outside clues only.
RUN_ADVICE = (
    "Measure it from inside the job: start it as `gpusat-tui run -- python train.py ...` "
    "(or torchrun ...) and the verdict stands on its measured data wait, step time and "
    "allocator"
)


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
