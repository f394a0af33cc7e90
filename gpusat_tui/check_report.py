"""What ``gpusat-tui check`` says, built from Frames: the ``--json`` shapes and `CheckBuilder`.

Pure (no I/O, no clock): `check` feeds it polled Frames, ``report`` the Frames of a recording.
The JSON shape is defined by the pydantic models here (`CheckReport`); ``schema_version`` is
`model.SCHEMA_VERSION`, and a test pins the field names so that a rename cannot slip through.
`CheckBuilder` folds Frames into a report in constant memory (running statistics per card,
process and probe), so a week's recording costs no more memory than a minute's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from gpusat_tui.analysis.stats import RunningStats
from gpusat_tui.analysis.verdict import SEVERITY as JOB_SEVERITY
from gpusat_tui.collectors.nvidia_throttle import split_reasons
from gpusat_tui.model import (
    SCHEMA_VERSION,
    VENDORS,
    Assessment,
    Frame,
    ProbeSample,
    ProcessRole,
    Verdict,
)

__all__ = [
    "CheckAlloc",
    "CheckBuilder",
    "CheckCard",
    "CheckError",
    "CheckProbe",
    "CheckProcess",
    "CheckReport",
    "CheckVerdict",
    "Stats",
    "overall_verdict",
    "probe_line",
    "probe_who",
]


#: Ties between card verdicts go to the more severe, in the verdict engine's one order
#: (stalled, imbalanced, fragmenting, starving, saturated, idle, unknown).
SEVERITY: tuple[str, ...] = JOB_SEVERITY


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Stats(_Out):
    """Statistics of one figure over the good (fresh, non-missing) polls."""

    mean: float | None = None
    min: float | None = None
    max: float | None = None
    #: The last good figure, even when later polls failed and the card went stale.
    last: float | None = None


class CheckVerdict(_Out):
    kind: str = "unknown"
    cause: str | None = None
    why: list[str] = []
    advice: list[str] = []


class CheckCard(_Out):
    id: str
    vendor: str
    index: int
    name: str | None = None
    util_pct: Stats = Stats()
    mem_pct: Stats = Stats()
    mem_used_mib: Stats = Stats()
    mem_total_mib: float | None = None
    power_w: Stats = Stats()
    power_cap_w: float | None = None
    temp_c: Stats = Stats()
    verdict: CheckVerdict = CheckVerdict()
    #: Addition: the part of the card this is (a MIG instance: "mig1"), null for a whole card.
    instance: str | None = None
    #: Addition: vendor figures from `CHECK_EXTRAS` (NVIDIA GPM: ``sm_active_pct``...), only
    #: those the card gave at least once.
    extras: dict[str, Stats] = {}
    #: Addition: clock-event ("throttle") reasons -> the polls they were active in; {} when
    #: they were read and never active, null when the tool gave none.
    throttle: dict[str, int] | None = None


class CheckAlloc(_Out):
    """The trainer's device allocator, from its probe (bytes; retries and OOMs cumulative)."""

    allocated_bytes: Stats = Stats()
    reserved_bytes: Stats = Stats()
    inactive_split_bytes: Stats = Stats()
    alloc_retries: int | None = None
    ooms: int | None = None


class CheckProbe(_Out):
    """Figures measured inside one trainer by its probe (``gpusat-tui run``), issue 12."""

    data_wait_pct: Stats = Stats()
    step_ms: Stats = Stats()
    batches_per_s: Stats = Stats()
    samples_per_s: Stats = Stats()
    rank: int | None = None
    world_size: int | None = None
    alloc: CheckAlloc | None = None
    local_rank: int | None = None
    #: The card this rank drives and how that was known ("device", "tool", "guess").
    card_id: str | None = None
    tie: str | None = None
    batches: int = 0
    steps: int = 0


class CheckProcess(_Out):
    pid: int
    role: ProcessRole
    name: str
    cpu_pct: Stats = Stats()
    card_ids: list[str] = []
    #: Trainers started under ``gpusat-tui run`` only; absent (null) otherwise.
    probe: CheckProbe | None = None
    #: Progress counters per second (`ProcessSample.rchar_per_s` and the rest) over the run:
    #: bytes read and written through read/write calls, such calls, main-thread wake-ups.
    rchar_per_s: Stats = Stats()
    wchar_per_s: Stats = Stats()
    syscalls_per_s: Stats = Stats()
    ctx_switches_per_s: Stats = Stats()
    #: Trainers only: the launcher's world size and rank from the environment (null: unset).
    world_size: int | None = None
    rank: int | None = None


class CheckError(_Out):
    tool: str
    message: str
    count: int
    #: Addition to issue 2's shape: what kind of failure ("timeout", "exit", "parse"...).
    kind: str = "other"


class CheckReport(_Out):
    """The one JSON object ``check --json`` prints."""

    schema_version: int = SCHEMA_VERSION
    duration_s: float
    samples: int
    cards: list[CheckCard] = []
    processes: list[CheckProcess] = []
    errors: list[CheckError] = []
    verdict: str = "unknown"
    #: Addition to issue 2's shape: plain-language notes, each once, in order (a tool that
    #: turned out to be another vendor's, a card no longer listed, a refused flag...).
    notes: list[str] = []


def overall_verdict(card_kinds: Sequence[str], job_kind: str | None = None) -> str:
    """Top-level verdict: ``stalled`` or ``imbalanced`` if the job is; else the most frequent
    non-idle kind (ties to the more severe, in `SEVERITY` order); ``idle`` when all idle."""
    if job_kind in ("stalled", "imbalanced"):
        return job_kind
    if not card_kinds:
        return "unknown"
    busy = Counter(k for k in card_kinds if k != "idle")
    if not busy:
        return "idle"
    rank = {kind: i for i, kind in enumerate(SEVERITY)}
    return min(busy, key=lambda k: (-busy[k], rank.get(k, len(SEVERITY))))


_FIGURES = ("util_pct", "mem_pct", "mem_used_mib", "power_w", "temp_c")
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


_PROBE_FIGURES = ("data_wait_pct", "step_ms", "batches_per_s", "samples_per_s")
_ALLOC_FIGURES = ("allocated_bytes", "reserved_bytes", "inactive_split_bytes")


@dataclass
class _ProbeAcc:
    stats: dict[str, RunningStats] = field(
        default_factory=lambda: {f: RunningStats() for f in _PROBE_FIGURES + _ALLOC_FIGURES}
    )
    last: ProbeSample | None = None
    #: ``elapsed_s`` of the last publication folded in: a file read twice counts once.
    seen: float | None = None

    def add(self, probe: ProbeSample) -> None:
        self.last = probe
        if probe.elapsed_s is not None and probe.elapsed_s == self.seen:
            return
        self.seen = probe.elapsed_s
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
        )


def probe_line(probe: CheckProbe) -> str:
    """``data wait 43 % · step 182 ms · 1,240 samples/s`` (means over the run)."""
    parts = []
    if probe.data_wait_pct.mean is not None:
        parts.append(f"data wait {probe.data_wait_pct.mean:.0f} %")
    if probe.step_ms.mean is not None:
        parts.append(f"step {probe.step_ms.mean:,.0f} ms")
    if probe.samples_per_s.mean is not None:
        parts.append(f"{probe.samples_per_s.mean:,.0f} samples/s")
    elif probe.batches_per_s.mean is not None:
        parts.append(f"{probe.batches_per_s.mean:,.1f} batches/s")
    alloc = probe.alloc
    if alloc is not None and alloc.reserved_bytes.last is not None:
        used = alloc.allocated_bytes.last
        parts.append(
            f"allocator {used / 2**30:.1f}/{alloc.reserved_bytes.last / 2**30:.1f} GiB"
            if used is not None else f"reserved {alloc.reserved_bytes.last / 2**30:.1f} GiB"
        )
        if alloc.alloc_retries:
            parts.append(f"{alloc.alloc_retries} alloc retries")
    return " · ".join(parts) or "no batch yet"


def probe_who(pid: int, probe: CheckProbe) -> str:
    """``PID 4242 rank 1/8 → nvidia:1`` (with "(guess)" when the card tie is one)."""
    who = f"PID {pid}"
    if probe.rank is not None:
        who += f" rank {probe.rank}" + (f"/{probe.world_size}" if probe.world_size else "")
    if probe.card_id:
        who += f" → {probe.card_id}" + (" (guess)" if probe.tie == "guess" else "")
    return who


#: The progress counters of `ProcessSample` folded per process.
_PROGRESS: tuple[str, ...] = (
    "rchar_per_s", "wchar_per_s", "syscalls_per_s", "ctx_switches_per_s",
)


@dataclass
class _ProcAcc:
    pid: int
    role: ProcessRole
    name: str
    cpu: RunningStats = field(default_factory=RunningStats)
    card_ids: list[str] = field(default_factory=list)
    probe: _ProbeAcc | None = None
    #: rchar, wchar, syscalls, context switches per second (`_PROGRESS` order).
    progress: tuple[RunningStats, ...] = field(
        default_factory=lambda: tuple(RunningStats() for _ in _PROGRESS)
    )
    world_size: int | None = None
    rank: int | None = None



class CheckBuilder:
    """Folds Frames (and the latest verdicts) into a `CheckReport`, in constant memory."""

    def __init__(self) -> None:
        self.samples = 0
        self._cards: dict[str, _CardAcc] = {}
        self._procs: dict[int, _ProcAcc] = {}
        self._errors: dict[tuple[str, str], CheckError] = {}
        self._notes: dict[str, None] = {}
        self.assessment: Assessment | None = None

    def add(self, frame: Frame, assessment: Assessment | None = None) -> None:
        self.samples += 1
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
            pacc.cpu.add(proc.cpu_pct)
            for name, stats in zip(_PROGRESS, pacc.progress, strict=True):
                stats.add(getattr(proc, name))
            if proc.world_size is not None or proc.rank is not None:
                pacc.world_size, pacc.rank = proc.world_size, proc.rank
            for card_id in proc.card_ids:
                if card_id not in pacc.card_ids:
                    pacc.card_ids.append(card_id)
        for probe in frame.probes:
            pacc = self._procs.get(probe.pid)
            if pacc is None or pacc.role != "trainer":
                # A probed trainer the process monitor does not see (another PID namespace).
                pacc = self._procs[probe.pid] = _ProcAcc(probe.pid, "trainer", "(probe only)")
            if pacc.probe is None:
                pacc.probe = _ProbeAcc()
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
        order = {v: i for i, v in enumerate(VENDORS)}
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
                )
            )
        processes = [
            CheckProcess(
                pid=p.pid, role=p.role, name=p.name,
                cpu_pct=Stats(**p.cpu.as_dict()), card_ids=list(p.card_ids),
                probe=p.probe.report() if p.probe is not None else None,
                **{name: Stats(**stats.as_dict())
                   for name, stats in zip(_PROGRESS, p.progress, strict=True)},
                world_size=p.world_size, rank=p.rank,
            )
            for p in self._procs.values()
        ]
        job = self.assessment.job.kind if self.assessment else None
        return CheckReport(
            duration_s=round(duration_s, 3),
            samples=self.samples,
            cards=cards,
            processes=processes,
            errors=[e.model_copy() for e in self._errors.values()],
            verdict=overall_verdict([c.verdict.kind for c in cards], job),
            notes=list(self._notes),
        )
