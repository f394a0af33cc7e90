"""What ``report`` makes of a recording: the runs of each verdict, the timeline of figures and
the JSON shape (``check --json``'s plus where the time went).

Apart from `report` (which reads and judges the file) and `report_text` (which writes it for a
person) so that both build on it and neither imports the other.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from gpusat_tui.commands.check_report import CheckBuilder, overall_verdict
from gpusat_tui.commands.check_schema import CheckCard, CheckEnergy, CheckReport, CheckVerdict
from gpusat_tui.model import VERDICT_KINDS, RecordingHeader, Verdict

#: Kinds that make a stretch "worst" (idle and unknown are not a training problem).
BAD_KINDS: tuple[str, ...] = ("starving", "fragmenting", "imbalanced", "stalled")
JOB_ID = "job"
#: Chart values (percentages) outside ±this are skipped, not drawn (plotext overflows on 1e308).
CHART_LIMIT = 1000.0


# --- JSON shape: check's, plus verdict_share ---------------------------------------------------


class Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Stretch(Out):
    """A run of one verdict: seconds from the session start, with what the engine said."""

    kind: str
    cause: str | None = None
    start_s: float
    end_s: float
    why: list[str] = Field(default_factory=list)
    advice: list[str] = Field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.end_s - self.start_s


class ReportCard(CheckCard):
    """`check`'s card, plus where its time went. ``verdict`` is the verdict it spent most
    time in (not ``unknown`` if it had any other), with the why/advice of its longest run."""

    verdict_share: dict[str, float] = Field(default_factory=dict)
    worst: list[Stretch] = Field(default_factory=list)


class ReportJSON(CheckReport):
    """The one JSON object ``report --json`` prints (`CheckReport` plus the session's shares)."""

    cards: list[ReportCard] = Field(default_factory=list)  # type: ignore[assignment]  # pydantic narrows the field in a subclass
    #: Fraction of the session per kind of the job verdict (all cards together).
    verdict_share: dict[str, float] = Field(default_factory=dict)
    job_worst: list[Stretch] = Field(default_factory=list)
    file: str
    #: "every poll" or "N sampled windows of W s" (see the module docstring).
    judged: str
    skipped_lines: int = 0
    #: What reading the file found: bad lines, damaged compressed blocks, a file that ended
    #: early, a clock that went back (the text report's notes about the file).
    file_notes: list[str] = Field(default_factory=list)
    header: RecordingHeader


# --- analysis ----------------------------------------------------------------------------------


@dataclass
class Runs:
    """Time per kind and the runs of equal verdicts of one card (or the job).

    A run's why/advice are those of the verdict ``lag`` polls before its end: the tracker's
    evidence window grows through a run (so late is better than early), but its very last
    polls already hold some of the next state, which the hysteresis has not shown yet.
    """

    lag: int = 0
    #: Seconds per verdict kind; a kind never seen has no entry.
    seconds: dict[str, float] = field(default_factory=dict)
    runs: list[Stretch] = field(default_factory=list)
    _recent: deque[Verdict] = field(default_factory=deque)

    def add(self, verdict: Verdict, start: float, end: float) -> None:
        span = max(0.0, end - start)
        self.seconds[verdict.kind] = self.seconds.get(verdict.kind, 0.0) + span
        last = self.runs[-1] if self.runs else None
        if last is not None and (last.kind, last.cause) == (verdict.kind, verdict.cause) and (
            abs(last.end_s - start) < 1e-6
        ):
            self._recent.append(verdict)
            if len(self._recent) > self.lag + 1:
                self._recent.popleft()
            told = self._recent[0]
            self.runs[-1] = last.model_copy(
                update={"end_s": end, "why": list(told.why), "advice": list(told.advice)}
            )
        else:
            self._recent = deque([verdict])
            self.runs.append(
                Stretch(kind=verdict.kind, cause=verdict.cause, start_s=start, end_s=end,
                        why=list(verdict.why), advice=list(verdict.advice))
            )

    def share(self) -> dict[str, float]:
        total = sum(self.seconds.values())
        if total <= 0:
            return {}
        return {
            k: round(self.seconds[k] / total, 4) for k in VERDICT_KINDS if self.seconds.get(k)
        }

    def dominant(self) -> str:
        known = {k: s for k, s in self.seconds.items() if k != "unknown" and s > 0}
        pool = known or dict(self.seconds)
        if not pool:
            return "unknown"
        return max(pool, key=lambda k: (pool[k], -VERDICT_KINDS.index(k)))

    def longest(self, kind: str) -> Stretch | None:
        runs = [r for r in self.runs if r.kind == kind]
        return max(runs, key=lambda r: r.seconds) if runs else None

    def worst(self, n: int = 3) -> list[Stretch]:
        bad = [r for r in self.runs if r.kind in BAD_KINDS and r.seconds > 0]
        return sorted(bad, key=lambda r: (-r.seconds, r.start_s))[:n]


@dataclass
class Timeline:
    """Per card, figures averaged into fixed time bins (for the charts)."""

    bins: int
    span_s: float
    sums: dict[str, list[list[float]]] = field(default_factory=dict)

    FIELDS = ("util", "power", "vram")

    def add(self, card_id: str, rel_t: float, util: float | None, power: float | None,
            vram: float | None) -> None:
        if card_id not in self.sums:
            self.sums[card_id] = [[0.0, 0.0] * 3 for _ in range(self.bins)]
        b = min(self.bins - 1, max(0, int(rel_t / self.span_s * self.bins))) if self.span_s else 0
        row = self.sums[card_id][b]
        for i, value in enumerate((util, power, vram)):
            # Charted as % (of 100, of the cap): anything far outside is not a figure, and
            # summing 1e308s would overflow to inf.
            if value is not None and math.isfinite(value) and -CHART_LIMIT <= value <= CHART_LIMIT:
                row[2 * i] += value
                row[2 * i + 1] += 1

    def series(self, card_id: str) -> tuple[list[float], dict[str, list[float | None]]]:
        """Bin centres (seconds) and, per field, the bin means (None where no figure)."""
        rows = self.sums.get(card_id, [])
        width = self.span_s / self.bins if self.bins else 0.0
        xs = [(i + 0.5) * width for i in range(len(rows))]
        out: dict[str, list[float | None]] = {}
        for i, name in enumerate(self.FIELDS):
            out[name] = [r[2 * i] / r[2 * i + 1] if r[2 * i + 1] else None for r in rows]
        return xs, out


@dataclass
class SessionReport:
    """Everything `render_text` and the JSON need, gathered in one pass."""

    path: Path
    header: RecordingHeader
    builder: CheckBuilder
    judged: str
    duration_s: float
    samples: int
    cards: dict[str, Runs]
    job: Runs
    timeline: Timeline
    skipped: int = 0
    notes: list[str] = field(default_factory=list)
    #: Data the file layer could not read (damaged compressed blocks, a cut end): also on stderr.
    loss_notes: list[str] = field(default_factory=list)

    def to_json(self) -> ReportJSON:
        base = self.builder.report(self.duration_s)
        if self.judged != "every poll":
            base = _scale_energy(base)
        cards: list[ReportCard] = []
        for card in base.cards:
            runs = self.cards.get(card.id, Runs())
            kind = runs.dominant()
            longest = runs.longest(kind)
            verdict = CheckVerdict(
                kind=kind,
                cause=longest.cause if longest else None,
                why=list(longest.why) if longest else [],
                advice=list(longest.advice) if longest else [],
            )
            data = card.model_dump(exclude={"verdict"})
            cards.append(
                ReportCard(**data, verdict=verdict, verdict_share=runs.share(),
                           worst=runs.worst())
            )
        overall = overall_verdict([c.verdict.kind for c in cards], self.job.dominant())
        dump = base.model_dump(exclude={"cards", "verdict", "samples"})
        return ReportJSON(
            **dump,
            samples=self.samples,
            cards=cards,
            verdict=overall,
            verdict_share=self.job.share(),
            job_worst=self.job.worst(),
            file=str(self.path),
            judged=self.judged,
            skipped_lines=self.skipped,
            file_notes=list(self.notes),
            header=self.header,
        )


def _scaled(energy: CheckEnergy | None) -> CheckEnergy | None:
    """Energy measured in sampled windows, scaled to the whole time seen (the windows' mean
    power taken as typical); said so in its note."""
    if energy is None or energy.joules is None or energy.covered_s <= 0:
        return energy
    factor = (energy.covered_s + energy.uncovered_s) / energy.covered_s
    joules = energy.joules * factor
    return energy.model_copy(update={
        "joules": round(joules, 3), "kwh": joules / 3.6e6,
        "note": "estimated: sampled windows' mean power over the whole recording",
    })


def _scale_energy(base: CheckReport) -> CheckReport:
    cards = [c.model_copy(update={"energy": _scaled(c.energy)}) for c in base.cards]
    jobs = [j.model_copy(update={"energy": _scaled(j.energy)}) for j in base.jobs]
    return base.model_copy(update={"cards": cards, "jobs": jobs})
