"""Host evidence of one card over a window: its tied processes' figures at each poll
(`poll_evidence`) folded across polls (`fold_evidence`, by each figure's fold in
`HostFigures`) into a `HostEvidence`, with the host's own figures. `EvidenceCache` computes it
on demand (once for every card when no process names cards), so a window of saturated cards
never computes it at all, and each frame keeps its poll's figures while the tie is the same.
The stall rule's evidence is `stall`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpusat_tui.analysis.clean_series import clean_median
from gpusat_tui.analysis.evidence.host_figures import FOLDS, HostFigures
from gpusat_tui.analysis.evidence.poll_evidence import PollEvidence, poll_evidence
from gpusat_tui.analysis.evidence.process_tie import ProcessTie
from gpusat_tui.analysis.facts import FrameFacts, ProcFacts

__all__ = ["SHARES", "EvidenceCache", "HostEvidence", "fold_evidence", "host_evidence"]


@dataclass
class HostEvidence(HostFigures):
    """Host figures tied to one card, summarised over the window (`HostFigures`, each folded
    across polls), the shares of its processes in disk-sleep, and the host's own figures."""

    #: The input pipeline's share of samples in disk-sleep (the workers', or the trainer's
    #: when it has none), and the trainer's own.
    dstate_frac: float | None = None
    trainer_dstate_frac: float | None = None
    iowait: float | None = None
    host_cpu: float | None = None
    cpu_count: int | None = None
    #: The starving cause found from this evidence, per set of `causes.starving_cause`'s
    #: arguments (the cards of a window that share this evidence share the finding).
    causes: dict[tuple[object, ...], tuple[Any, ...]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    @property
    def has_processes(self) -> bool:
        return self.n_process_samples > 0

    @property
    def distributed(self) -> bool:
        """The trainer is one rank of several (world size > 1, or a rank set without one)."""
        return (self.world_size or 0) > 1 or (self.world_size is None and self.rank is not None)


#: Shares over the window's samples, not medians: (part, whole, `HostEvidence` field).
SHARES: tuple[tuple[str, str, str], ...] = (
    ("d_states", "states", "dstate_frac"),
    ("trainer_d_states", "trainer_states", "trainer_dstate_frac"),
)


class EvidenceCache:
    """Host evidence of one window, computed on demand and shared between cards.

    The evidence depends on the card only through which processes are tied to it: without card
    ids every process serves every card (one computation for all cards). Only a ``starving``
    verdict reads it, so a window of saturated cards never computes it at all. Each frame keeps
    its own part (`PollEvidence`, in `FrameFacts.memo`) while the tie is the same, so the
    tracker, which judges windows of the same frames on every poll, summarises each poll once.
    """

    def __init__(self, facts: Sequence[FrameFacts], tie: ProcessTie) -> None:
        self._facts = facts
        self._tie = tie
        self._found: dict[tuple[str, str | None], HostEvidence] = {}

    def __call__(self, card_id: str) -> HostEvidence:
        tie = self._tie
        if not tie.any_card_ids:
            return self._folded(("evidence", None), lambda procs: procs)
        return self._folded(("evidence", card_id),
                            lambda procs: [p for p in procs if card_id in tie.tied_cards(p)])

    def of_job(self, key: str) -> HostEvidence:
        """The evidence of one job's own processes: its trainers (`ProcessTie.job_of`) and
        their workers, whatever card they serve (no card at all: no vendor tool). Another
        job's workers and disk waits are never this job's cause."""
        job_of = self._tie.job_of
        return self._folded(("job evidence", key), lambda procs: [
            p for p in procs
            if job_of.get(p.pid) == key or (p.is_worker and job_of.get(p.trainer_pid) == key)
        ])

    def _folded(
        self, memo_key: tuple[str, str | None],
        tied: Callable[[Sequence[ProcFacts]], Sequence[ProcFacts]],
    ) -> HostEvidence:
        """The window's evidence of the processes ``tied`` picks from each poll's; each poll's
        part kept in its `FrameFacts.memo` under ``memo_key`` while the tie is the same."""
        found = self._found.get(memo_key)
        if found is None:
            signature = self._tie.signature
            polls: list[PollEvidence] = []
            for ff in self._facts:
                kept = ff.memo.get(memo_key)
                if kept is not None and (kept[0] is signature or kept[0] == signature):
                    polls.append(kept[1])
                    continue
                poll = poll_evidence(ff.procs, tied(ff.procs))
                ff.memo[memo_key] = (signature, poll)
                polls.append(poll)
            found = self._found[memo_key] = fold_evidence(self._facts, polls)
        return found


def fold_evidence(facts: Sequence[FrameFacts], polls: Sequence[PollEvidence]) -> HostEvidence:
    """The window's `HostEvidence` from each poll's figures (``polls[i]`` of ``facts[i]``):
    each figure folded across polls by its fold (`HostFigures`) and each share by its row of
    `SHARES`, host figures from the frames."""
    ev = HostEvidence()
    if polls and not any(poll.n_process_samples for poll in polls):
        # No process tied to the card at any poll (a host without a trainer, or one seen
        # only through the tool): every process figure is missing, only `foreign` can be set.
        ev.foreign_processes = any(poll.foreign_processes for poll in polls)
    elif polls:
        for name, fold in FOLDS:
            setattr(ev, name, fold([getattr(poll, name) for poll in polls]))
        for part, whole, ev_field in SHARES:
            total = sum(getattr(poll, whole) for poll in polls)
            setattr(ev, ev_field,
                    sum(getattr(poll, part) for poll in polls) / total if total else None)
    for ff in reversed(facts):
        if ff.cpu_count is not None:
            ev.cpu_count = ff.cpu_count
            break
    ev.iowait = clean_median([ff.iowait for ff in facts])
    ev.host_cpu = clean_median([ff.host_cpu for ff in facts])
    return ev


def host_evidence(
    facts: Sequence[FrameFacts],
    card_id: str,
    tied_sets: Sequence[Sequence[frozenset[str]]] | None,
) -> HostEvidence:
    """``tied_sets[i][j]``: the cards process j of frame i serves; None: every process serves
    every card (no card ids anywhere in the window)."""
    polls = []
    for i, ff in enumerate(facts):
        procs = ff.procs
        if tied_sets is None:
            tied: Sequence[ProcFacts] = procs
        else:
            tied = [p for p, s in zip(procs, tied_sets[i], strict=True) if card_id in s]
        polls.append(poll_evidence(procs, tied))
    return fold_evidence(facts, polls)
