"""The step's phases and the user's hottest lines over a span, from two probe publications.

The probe's stack counts are cumulative (`gpusat_tui.probe.sampler`), like its data wait: the
difference between the first and the last publication of a span is that span's, exactly, so
the card view, ``check --json``, ``report`` and the exporter quote the same kind of share as
the data wait beside it. A line that was not among the published most sampled lines at the
first publication counts from zero there (its share may be a little high); a phase never is.
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from gpusat_tui.model import CodeLine
from gpusat_tui.probe.phases import PHASES

__all__ = ["LineShare", "StackCounts", "StackShares", "stack_shares"]


class StackCounts(Protocol):
    """One publication's cumulative stack counts (`ProbeSample`, `probe_facts.ProbeFacts`)."""

    @property
    def stack_samples(self) -> int: ...
    @property
    def phase_samples(self) -> Mapping[str, int]: ...
    @property
    def user_lines(self) -> tuple[CodeLine, ...]: ...


@dataclass(frozen=True, slots=True)
class LineShare:
    """One user line and its share of the span's samples, percent."""

    line: CodeLine
    pct: float


@dataclass(frozen=True, slots=True)
class StackShares:
    """Samples of the training thread over a span, and their shares."""

    samples: int
    #: Phase -> percent of the samples, in `PHASES` order, phases never sampled left out.
    phases: dict[str, float]
    #: The most sampled user lines, most first.
    lines: tuple[LineShare, ...]


def stack_shares(
    first: StackCounts | None, last: StackCounts, top: int = 5
) -> StackShares | None:
    """Shares between ``first`` and ``last`` (one trainer's publications; ``first`` None or
    the same: since the probe started); None without samples in the span."""
    base = first if first is not None and first is not last and (
        0 < first.stack_samples <= last.stack_samples
    ) else None
    total = last.stack_samples - (base.stack_samples if base is not None else 0)
    if total <= 0:
        return None
    before: Mapping[str, int] = base.phase_samples if base is not None else {}
    phases = {}
    for phase in PHASES:
        count = last.phase_samples.get(phase, 0) - before.get(phase, 0)
        if count > 0:
            phases[phase] = 100.0 * min(count, total) / total
    earlier = ({(u.file, u.line): u.samples for u in base.user_lines}
               if base is not None else {})
    lines = []
    for u in last.user_lines:
        count = u.samples - earlier.get((u.file, u.line), 0)
        if count > 0:
            lines.append(LineShare(u, 100.0 * min(count, total) / total))
    lines.sort(key=lambda s: -s.pct)
    return StackShares(total, phases, tuple(lines[:top]))
