"""Which processes serve which card: `ProcessTie` ties them through
``ProcessSample.card_ids`` (a worker inherits its trainer's cards; without any card ids every
process serves every card) and groups cards into jobs (`Frame.jobs`, else the trainers that
drive them). Pure."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence

from gpusat_tui.analysis.facts import FrameFacts, ProcFacts

__all__ = ["ProcessTie"]


class ProcessTie:
    """Which processes count as evidence for which card (see the module docstring)."""

    def __init__(self, facts: Sequence[FrameFacts]) -> None:
        self.trainer_cards: dict[object, set[str]] = {}
        self.any_card_ids = False
        #: Each job's key -> its cards (its trainers' and those `Frame.jobs` names), in the
        #: order the jobs were first seen; and each trainer's job.
        self.job_cards: dict[str, set[str]] = {}
        self.job_of: dict[object, str] = {}
        last: object = None
        last_jobs: object = None
        for ff in facts:
            if ff.any_card_ids:
                self.any_card_ids = True
            if ff.jobs is not last_jobs and ff.jobs != last_jobs:
                last_jobs = ff.jobs
                for key, pids, job_cards in ff.jobs:
                    self.job_cards.setdefault(key, set()).update(job_cards)
                    for pid in pids:
                        self.job_of.setdefault(pid, key)
            if ff.trainer_cards is last or ff.trainer_cards == last:
                continue  # the same trainers as the poll before (most polls): nothing new
            last = ff.trainer_cards
            for pid, card_ids in ff.trainer_cards:
                self.trainer_cards.setdefault(pid, set()).update(card_ids)
        for pid, cards in self.trainer_cards.items():
            job = self.job_of.get(pid)
            if job is not None:
                self.job_cards[job].update(cards)
        # Processes are tied card by card where a job names its cards (a probe's tie where the
        # tool lists no PID), and where two or more jobs run and none names a card: then no
        # card can take another job's processes as its evidence.
        if any(self.job_cards.values()) or len(self.job_cards) >= 2:
            self.any_card_ids = True
        self._tied_sets: dict[tuple[object, ...], frozenset[str]] = {}
        self._signature: object = None

    @property
    def signature(self) -> object:
        """Everything `tied_cards` depends on: two ties with equal signatures tie every process
        to the same cards (what lets a frame keep its per-card evidence between windows)."""
        if self._signature is None:
            self._signature = _interned((
                self.any_card_ids,
                frozenset((pid, frozenset(cards)) for pid, cards in self.trainer_cards.items()),
                frozenset((key, frozenset(cards)) for key, cards in self.job_cards.items()),
                frozenset(self.job_of.items()),
            ))
        return self._signature

    def tied_cards(self, proc: ProcFacts) -> frozenset[str]:
        """The cards ``proc`` is evidence for (only meaningful when ``any_card_ids``): its own,
        its trainer's, else those its job names (each rank of a job keeps its own card)."""
        key = (proc.card_ids, proc.is_worker, proc.trainer_pid, proc.pid)
        found = self._tied_sets.get(key)
        if found is None:
            cards = set(proc.card_ids)
            if proc.is_worker:
                cards.update(self.trainer_cards.get(proc.trainer_pid, ()))
            if not cards:
                job = self.job_of.get(proc.trainer_pid if proc.is_worker else proc.pid)
                cards.update(self.job_cards.get(job, ()) if job is not None else ())
            found = self._tied_sets[key] = frozenset(cards)
        return found

    def jobs_on(self, card_id: str) -> list[str]:
        """The keys of the jobs whose trainers drive ``card_id`` (first seen first)."""
        return [key for key, cards in self.job_cards.items() if card_id in cards]

    def shared_line(self, card_id: str, own: Mapping[str, str] | None = None) -> str | None:
        """``shared by 2 jobs: plain:1, plain:2``, for a card that two or more jobs drive;
        ``own``: a job's own figure, quoted beside its key (its probe's data wait)."""
        keys = self.jobs_on(card_id)
        if len(keys) < 2:
            return None
        named = [f"{key} ({own[key]})" if own and key in own else key for key in keys]
        return (f"shared by {len(keys)} jobs: {', '.join(named)}; this card's figures are "
                "theirs together, each job's processes are its own evidence")

    def groups(self, active: Iterable[str]) -> tuple[list[list[str]], str]:
        """Cards that belong to one job, and how that was decided.

        One job seen: it takes every card (cards whose processes cannot be seen included, as
        on a single-job host). Two or more (`Frame.jobs`): only the cards of one job are
        compared: two jobs on two cards are two groups of one card (never uneven), a card two
        jobs share is in no group (its figures are both jobs' together, no one job's level),
        and where no job names a card (a tool that lists no process) no card is compared.
        Without jobs (older recordings): cards sharing a trainer, else every card as one
        job."""
        active = list(active)
        if len(self.job_cards) == 1:
            [key] = self.job_cards
            return [active], f"every card taken as {key}'s, the only job seen"
        if self.job_cards:
            if any(self.job_cards.values()):
                grouped: list[list[str]] = []
                two_jobs = {c for c in active if len(self.jobs_on(c)) > 1}
                for cards in self.job_cards.values():
                    group = [c for c in active if c in cards and c not in two_jobs]
                    if group and group not in grouped:
                        grouped.append(group)
                return grouped, "cards grouped by job (" + ", ".join(self.job_cards) + ")"
            return [], (f"{len(self.job_cards)} jobs on this host and none tied to a card: "
                        "cards are not compared")
        parent = {c: c for c in active}

        def find(c: str) -> str:
            while parent[c] != c:
                c = parent[c]
            return c

        shared = False
        for cards in self.trainer_cards.values():
            members = [c for c in cards if c in parent]
            for other in members[1:]:
                parent[find(other)] = find(members[0])
                shared = True
        if not shared:
            return [active], "all cards holding memory are taken as one job"
        groups: dict[str, list[str]] = {}
        for c in active:
            groups.setdefault(find(c), []).append(c)
        return list(groups.values()), "cards grouped by the trainer process that drives them"


@functools.lru_cache(maxsize=64)
def _interned(signature: tuple[object, ...]) -> tuple[object, ...]:
    """One object for equal signatures (the first seen), so that a frame's kept evidence is
    matched by identity, not by comparing the trainers again at every poll of every window.
    Bounded: a job's trainers change rarely."""
    return signature
