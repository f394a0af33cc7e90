"""What ``gpusat-tui check`` says, built from Frames: `CheckBuilder`.

Pure (no I/O, no clock): `check` feeds it polled Frames, ``report`` the Frames of a recording.
The JSON shapes it fills are `check_schema`'s (an interface).
`CheckBuilder` folds Frames into a report in constant memory (running statistics per card,
process, and per probed rank in `probe_accumulator`), so a week's recording costs no more
memory than a minute's; `probe_lines` writes a probed rank in words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpusat_tui.analysis.energy import EnergyMeter
from gpusat_tui.analysis.stats import RunningStats
from gpusat_tui.analysis.verdicts.job import SEVERITY as JOB_SEVERITY
from gpusat_tui.analysis.verdicts.job import job_verdicts
from gpusat_tui.commands.check_schema import (
    CheckCard,
    CheckEnergy,
    CheckError,
    CheckJob,
    CheckOutsideStack,
    CheckProcess,
    CheckReport,
    CheckVerdict,
    Stats,
    stats_figures,
)
from gpusat_tui.commands.probe_accumulator import ProbeAccumulator
from gpusat_tui.model import (
    VENDORS,
    Assessment,
    Frame,
    JobContext,
    ProcessRole,
    StackDump,
    Verdict,
    split_reasons,
)

__all__ = ["CheckBuilder", "overall_verdict"]


#: Ties between card verdicts go to the more severe, in the verdict engine's one order
#: (stalled, imbalanced, fragmenting, starving, saturated, idle, unknown).
SEVERITY: tuple[str, ...] = JOB_SEVERITY


def overall_verdict(card_kinds: Sequence[str], job_kind: str | None = None) -> str:
    """Top-level verdict: ``stalled`` or ``imbalanced`` if the job is; else the most frequent
    non-idle kind (ties to the more severe, in `SEVERITY` order); ``idle`` when all idle."""
    if job_kind in ("stalled", "imbalanced"):
        return job_kind
    if not card_kinds:
        return job_kind or "unknown"
    busy = Counter(k for k in card_kinds if k != "idle")
    if not busy:
        return "idle"
    rank = {kind: i for i, kind in enumerate(SEVERITY)}
    return min(busy, key=lambda k: (-busy[k], rank.get(k, len(SEVERITY))))


#: The figures summarised per card and process: the shapes' `Stats` fields.
_FIGURES = stats_figures(CheckCard)
_PROCESS_FIGURES = stats_figures(CheckProcess)
#: Numeric ``CardReading.extras`` that ``check --json`` summarises per card (names agreed
#: with the collectors: NVIDIA GPM counters).
CHECK_EXTRAS: tuple[str, ...] = (
    "sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "dram_active_pct",
    "fp16_active_pct", "fp32_active_pct", "fp64_active_pct",
)


@dataclass
class _CardAcc:
    vendor: str
    index: int
    name: str | None = None
    stats: dict[str, RunningStats] = field(
        default_factory=lambda: {f: RunningStats() for f in _FIGURES}
    )
    mem_total_mib: float | None = None
    power_cap_w: float | None = None
    instance: str | None = None
    extras: dict[str, RunningStats] = field(default_factory=dict)
    throttle: dict[str, int] | None = None


@dataclass
class _ProcAcc:
    pid: int
    role: ProcessRole
    name: str
    card_ids: list[str] = field(default_factory=list)
    probe: ProbeAccumulator | None = None
    stats: dict[str, RunningStats] = field(
        default_factory=lambda: {f: RunningStats() for f in _PROCESS_FIGURES}
    )
    world_size: int | None = None
    rank: int | None = None
    stack_dump: StackDump | None = None



class CheckBuilder:
    """Folds Frames (and the latest verdicts) into a `CheckReport`, in constant memory."""

    def __init__(self) -> None:
        self.samples = 0
        self._cards: dict[str, _CardAcc] = {}
        self._procs: dict[int, _ProcAcc] = {}
        self._errors: dict[tuple[str, str], CheckError] = {}
        self._notes: dict[str, None] = {}
        self.assessment: Assessment | None = None
        self.energy = EnergyMeter()
        #: Job key -> its context as last seen, with every PID and card it ever had.
        self._jobs: dict[str, JobContext] = {}
        self._job_of_pid: dict[int, str] = {}

    def add(self, frame: Frame, assessment: Assessment | None = None) -> None:
        self.samples += 1
        self.energy.add(frame)
        self._add_jobs(frame.jobs)
        if assessment is not None:
            self.assessment = assessment
        for card in frame.cards:
            acc = self._cards.get(card.id)
            if acc is None:
                acc = self._cards[card.id] = _CardAcc(
                    card.vendor, card.index, instance=card.instance
                )
            acc.name = card.name or acc.name
            if card.stale_s is not None:
                continue  # carried over from an earlier poll: not a new figure
            for name in _FIGURES:
                acc.stats[name].add(getattr(card, name))
            self._add_extras(acc, card.extras)
            if card.mem_total_mib is not None:
                acc.mem_total_mib = card.mem_total_mib
            if card.power_cap_w is not None:
                acc.power_cap_w = card.power_cap_w
        for proc in frame.processes:
            pacc = self._procs.get(proc.pid)
            if pacc is None or pacc.role != proc.role:
                pacc = self._procs[proc.pid] = _ProcAcc(proc.pid, proc.role, proc.name)
            pacc.name = proc.name
            for name in _PROCESS_FIGURES:
                pacc.stats[name].add(getattr(proc, name))
            if proc.world_size is not None or proc.rank is not None:
                pacc.world_size, pacc.rank = proc.world_size, proc.rank
            if proc.stack_dump is not None:
                pacc.stack_dump = proc.stack_dump
            for card_id in proc.card_ids:
                if card_id not in pacc.card_ids:
                    pacc.card_ids.append(card_id)
        for probe in frame.probes:
            pacc = self._procs.get(probe.pid)
            if pacc is None or pacc.role != "trainer":
                # A probed trainer the process monitor does not see (another PID namespace).
                pacc = self._procs[probe.pid] = _ProcAcc(probe.pid, "trainer", "(probe only)")
            if pacc.probe is None:
                pacc.probe = ProbeAccumulator()
            pacc.probe.add(probe)
            if probe.card_id and probe.card_id not in pacc.card_ids:
                pacc.card_ids.append(probe.card_id)
        for err in frame.errors:
            key = (err.tool, err.message)
            if key in self._errors:
                self._errors[key].count += 1
            else:
                self._errors[key] = CheckError(
                    tool=err.tool, message=err.message, count=1, kind=err.kind
                )
        for note in frame.notes:
            self._notes.setdefault(note, None)

    def _add_jobs(self, jobs: Sequence[JobContext]) -> None:
        for job in jobs:
            old = self._jobs.get(job.key)
            if old is not None:
                job = job.model_copy(update={
                    "pids": list(dict.fromkeys([*old.pids, *job.pids])),
                    "card_ids": list(dict.fromkeys([*old.card_ids, *job.card_ids])),
                })
            self._jobs[job.key] = job
            for pid in job.pids:
                self._job_of_pid[pid] = job.key

    @staticmethod
    def _add_extras(acc: _CardAcc, extras: dict[str, float | str | None]) -> None:
        for name in CHECK_EXTRAS:
            value = extras.get(name)
            if isinstance(value, (int, float)):
                acc.extras.setdefault(name, RunningStats()).add(float(value))
        reasons = extras.get("throttle")
        if isinstance(reasons, str):
            counts = acc.throttle if acc.throttle is not None else {}
            for reason in split_reasons(reasons):
                counts[reason] = counts.get(reason, 0) + 1
            acc.throttle = counts

    def report(self, duration_s: float) -> CheckReport:
        verdicts = self.assessment.cards if self.assessment else {}
        order: dict[str, int] = {v: i for i, v in enumerate(VENDORS)}
        cards: list[CheckCard] = []
        for card_id, acc in sorted(
            self._cards.items(),
            key=lambda kv: (order.get(kv[1].vendor, 99), kv[1].index, kv[1].instance or ""),
        ):
            verdict = verdicts.get(card_id) or Verdict()
            cards.append(
                CheckCard(
                    id=card_id,
                    vendor=acc.vendor,
                    index=acc.index,
                    name=acc.name,
                    mem_total_mib=acc.mem_total_mib,
                    power_cap_w=acc.power_cap_w,
                    verdict=CheckVerdict(
                        kind=verdict.kind, cause=verdict.cause,
                        why=list(verdict.why), advice=list(verdict.advice),
                    ),
                    **{name: Stats(**acc.stats[name].as_dict()) for name in _FIGURES},
                    instance=acc.instance,
                    extras={k: Stats(**v.as_dict()) for k, v in acc.extras.items()},
                    throttle=dict(acc.throttle) if acc.throttle is not None else None,
                    energy=CheckEnergy.of(self.energy.card(card_id)),
                )
            )
        processes = [
            CheckProcess(
                pid=p.pid, role=p.role, name=p.name,
                card_ids=list(p.card_ids),
                probe=p.probe.report() if p.probe is not None else None,
                job=self._job_of_pid.get(p.pid) if p.role == "trainer" else None,
                **{name: Stats(**stats.as_dict()) for name, stats in p.stats.items()},
                world_size=p.world_size, rank=p.rank,
                stack_dump=CheckOutsideStack.of(p.stack_dump) if p.stack_dump is not None else None,
            )
            for p in self._procs.values()
        ]
        own = job_verdicts(verdicts, {key: job.card_ids for key, job in self._jobs.items()})
        jobs = [
            CheckJob(
                key=key, **job.model_dump(exclude={"pids", "card_ids"}),
                pids=list(job.pids), card_ids=list(job.card_ids),
                energy=CheckEnergy.of(self.energy.job(key)),
                verdict=CheckVerdict(kind=v.kind, cause=v.cause, why=list(v.why),
                                     advice=list(v.advice)) if (v := own.get(key)) else None,
            )
            for key, job in self._jobs.items()
        ]
        job_verdict = self.assessment.job if self.assessment else None
        job = job_verdict.kind if job_verdict is not None else None
        return CheckReport(
            job=CheckVerdict(kind=job_verdict.kind, cause=job_verdict.cause,
                             why=list(job_verdict.why), advice=list(job_verdict.advice))
            if job_verdict is not None else None,
            no_tool=not cards and any(p.probe is not None or p.role == "trainer"
                                       for p in self._procs.values()),
            duration_s=round(duration_s, 3),
            samples=self.samples,
            cards=cards,
            processes=processes,
            errors=[e.model_copy() for e in self._errors.values()],
            verdict=overall_verdict([c.verdict.kind for c in cards], job),
            notes=list(self._notes),
            jobs=jobs,
        )
