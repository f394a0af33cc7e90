"""What ``gpusat-tui check`` says, built from Frames: `CheckBuilder` and the probe's lines.

Pure (no I/O, no clock): `check` feeds it polled Frames, ``report`` the Frames of a recording.
The JSON shapes it fills are `check_schema`'s (an interface).
`CheckBuilder` folds Frames into a report in constant memory (running statistics per card,
process and probe), so a week's recording costs no more memory than a minute's.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpusat_tui.analysis.energy import EnergyMeter
from gpusat_tui.analysis.probe_reading.probe_session import SessionCounters
from gpusat_tui.analysis.probe_reading.probe_words import (
    NO_BATCH,
    allocator_words,
    figures,
    lines_words,
    phases_words,
    place_words,
    step_words,
    throughput_words,
    wait_words,
)
from gpusat_tui.analysis.probe_reading.stack_shares import stack_shares
from gpusat_tui.analysis.stats import RunningStats
from gpusat_tui.analysis.verdicts.job import SEVERITY as JOB_SEVERITY
from gpusat_tui.analysis.verdicts.job import job_verdicts
from gpusat_tui.commands.check_schema import (
    CheckAlloc,
    CheckCard,
    CheckEnergy,
    CheckError,
    CheckJob,
    CheckOutsideStack,
    CheckProbe,
    CheckProbeRun,
    CheckProcess,
    CheckReport,
    CheckStack,
    CheckUserLine,
    CheckVerdict,
    Stats,
    stats_figures,
)
from gpusat_tui.model import (
    VENDORS,
    Assessment,
    Frame,
    JobContext,
    ProbeSample,
    ProcessRole,
    StackDump,
    Verdict,
    split_reasons,
)

__all__ = [
    "CheckBuilder",
    "ProbeAccumulator",
    "overall_verdict",
    "probe_line",
    "probe_who",
    "stack_lines",
]


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


#: The figures summarised per card, process, probe and allocator: the shapes' `Stats` fields.
_FIGURES = stats_figures(CheckCard)
_PROCESS_FIGURES = stats_figures(CheckProcess)
_PROBE_FIGURES = stats_figures(CheckProbe)
_ALLOC_FIGURES = stats_figures(CheckAlloc)
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
class ProbeAccumulator:
    """One probed rank's figures over a `check` run: each publication folded in once."""

    stats: dict[str, RunningStats] = field(
        default_factory=lambda: {f: RunningStats() for f in _PROBE_FIGURES + _ALLOC_FIGURES}
    )
    last: ProbeSample | None = None
    first: ProbeSample | None = None
    #: ``elapsed_s`` of the last publication folded in: a file read twice counts once.
    seen: float | None = None
    #: The run's figures from the counters, across a restart of the probe.
    counters: SessionCounters = field(default_factory=SessionCounters)

    def add(self, probe: ProbeSample) -> None:
        self.last = probe
        if self.first is None or (self.first.elapsed_s is None and probe.elapsed_s is not None):
            self.first = probe
        if probe.elapsed_s is not None and probe.elapsed_s == self.seen:
            return
        self.seen = probe.elapsed_s
        self.counters.add(probe)
        for name in _PROBE_FIGURES:
            self.stats[name].add(getattr(probe, name))
        if probe.alloc is not None:
            for name in _ALLOC_FIGURES:
                self.stats[name].add(getattr(probe.alloc, name))

    def report(self) -> CheckProbe:
        p = self.last
        assert p is not None
        alloc = None
        if p.alloc is not None or self.stats["reserved_bytes"].count:
            alloc = CheckAlloc(
                **{n: Stats(**self.stats[n].as_dict()) for n in _ALLOC_FIGURES},
                alloc_retries=p.alloc.alloc_retries if p.alloc else None,
                ooms=p.alloc.ooms if p.alloc else None,
            )
        return CheckProbe(
            **{n: Stats(**self.stats[n].as_dict()) for n in _PROBE_FIGURES},
            rank=p.rank, world_size=p.world_size, alloc=alloc, local_rank=p.local_rank,
            card_id=p.card_id, tie=p.tie, batches=p.batches, steps=p.steps,
            run=self.run(), framework=p.framework, data_wait_note=p.data_wait_note,
            stack=self.stack(),
        )

    def stack(self) -> CheckStack | None:
        last = self.last
        if last is None:
            return None
        shares = stack_shares(self.first, last)
        if shares is None:
            return None
        line = last.stack_line
        return CheckStack(
            samples=shares.samples,
            phases_pct={k: round(v, 1) for k, v in shares.phases.items()},
            user_lines=[CheckUserLine(file=s.line.file, line=s.line.line,
                                      function=s.line.function, pct=round(s.pct, 1))
                        for s in shares.lines],
            phase=last.stack_phase, where=last.stack_where,
            line=f"{os.path.basename(line.file)}:{line.line}" if line is not None else None,
            still_s=last.stack_still_s, sig=last.stack_sig,
            frames=[f"{f.module}.{f.function} ({f.file}:{f.line})" for f in last.stack],
        )

    def run(self) -> CheckProbeRun | None:
        rates = self.counters.rates()
        if rates is None:
            return None
        return CheckProbeRun(
            span_s=round(rates.span_s, 3),
            data_wait_pct=None if self.last is None or self.last.data_wait_note else rates.wait_pct,
            step_ms=rates.step_ms,
            batches_per_s=rates.batches_per_s, samples_per_s=rates.samples_per_s,
        )


def probe_line(probe: CheckProbe) -> str:
    """``data wait 43 % · step 182 ms · 1,240 samples/s`` over the run: from the cumulative
    counters where two publications were seen, else the means of the publications'."""
    run = probe.run
    wait = run.data_wait_pct if run is not None else probe.data_wait_pct.mean
    step = run.step_ms if run is not None else probe.step_ms.mean
    samples = run.samples_per_s if run is not None else probe.samples_per_s.mean
    batches = run.batches_per_s if run is not None else probe.batches_per_s.mean
    alloc = probe.alloc
    return figures((
        # The probe's note outranks a figure: it says the figure is not the wait.
        wait_words(None if probe.data_wait_note else wait, note=probe.data_wait_note),
        step_words(step),
        throughput_words(samples, batches),
        allocator_words(alloc.allocated_bytes.last, alloc.reserved_bytes.last,
                        alloc.alloc_retries) if alloc is not None else None,
    )) or NO_BATCH


#: A stack that has not moved for this long is said so.
STILL_SHOWN_S = 5.0


def stack_lines(probe: CheckProbe) -> list[str]:
    """The sampled stack of one trainer over the run, in words: the step's phases, the
    hottest user lines, and where it is now (with how long it has not moved, from 5 s)."""
    stack = probe.stack
    if stack is None:
        return []
    run = probe.run
    step = run.step_ms if run is not None else probe.step_ms.mean
    out = [phases_words(step, stack.phases_pct)]
    out.append(lines_words((u.file, u.line, u.function, u.pct) for u in stack.user_lines))
    if stack.still_s is not None and stack.still_s >= STILL_SHOWN_S:
        place = place_words(stack.where, stack.line)
        out.append(f"now {place}, not moved for {stack.still_s:.0f} s")
    return [line for line in out if line]


def probe_who(pid: int, probe: CheckProbe) -> str:
    """``PID 4242 rank 1/8 → nvidia:1`` (with "(guess)" when the card tie is one)."""
    who = f"PID {pid}"
    if probe.rank is not None:
        who += f" rank {probe.rank}" + (f"/{probe.world_size}" if probe.world_size else "")
    if probe.card_id:
        who += f" → {probe.card_id}" + (" (guess)" if probe.tie == "guess" else "")
    return who


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
