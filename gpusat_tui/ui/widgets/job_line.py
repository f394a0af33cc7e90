"""The job's verdict line above the cards (jobs on more than one card)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.style import Style
from textual.strip import Strip

from gpusat_tui.analysis.energy import EnergyMeter, energy_words, format_energy, total_joules
from gpusat_tui.analysis.verdicts.probe_only import NO_TOOL_LINE
from gpusat_tui.host.scheduler.jobs import job_label
from gpusat_tui.model import VERDICT_KINDS, JobContext, Verdict
from gpusat_tui.text import clean
from gpusat_tui.ui.widgets.badge import badge_word
from gpusat_tui.ui.widgets.lines import LineWidget

_BOLD = Style(bold=True)

def job_summary(jobs: Sequence[JobContext], energy: EnergyMeter) -> tuple[str, str]:
    """Whose job and its energy for the job line: ``slurm 4242 "train" · alice`` and
    ``3.41 kWh (2,410 W over 30 s) · 0.91 J/sample``; several jobs: how many, and their cards'
    energy together. Cleaned (`host.jobs.job_label`)."""
    if not jobs:
        return "", ""
    if len(jobs) == 1:
        return job_label(jobs[0], 80), energy_words(energy.job(jobs[0].key))
    cards = [energy.card(c) for job in jobs for c in dict.fromkeys(job.card_ids)]
    total = total_joules(f for f in cards if f is not None)
    users = sorted({clean(j.user, 20) for j in jobs if j.user})
    # How many jobs the line's head says (`JobLine.show`'s ``n_jobs``); here whose they are.
    return ", ".join(users[:3]), format_energy(total)


def _first_reason(verdict: Verdict) -> str:
    """The verdict's first reason, past the no-tool label (the banner above says it)."""
    return next((why for why in verdict.why if why != NO_TOOL_LINE), "")


def _shown(verdict: Verdict) -> tuple[str, str | None, str]:
    """What the job line shows of a verdict: its kind, cause and first reason."""
    return verdict.kind, verdict.cause, _first_reason(verdict)


class JobLine(LineWidget):
    """The job's verdict above the cards (jobs on more than one card, or any job whose
    scheduler context is known), one widget:
    ``Job (8 cards)  IMBALANCED  slurm 4242 · alice  data wait 2–41% · step 210 ms  3.4 kWh
    · 0.9 J/sample  card 3 at 41% while …``.

    The probe's figures (measured inside the trainers) come before the verdict's first
    reason; without a probe it says so in two words (the process panel says how to get one).
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "jobline--why", "jobline--probe", "jobline--who",
        *(f"jobline--{kind}" for kind in VERDICT_KINDS),
    }

    DEFAULT_CSS = """
    JobLine { height: 1; }
    """

    def __init__(self) -> None:
        super().__init__(id="job")
        self.n_cards = 0
        self.verdict = Verdict()
        self.probe: str | None = ""
        self.who = ""
        self.energy = ""
        self.ended = ""
        self.n_jobs = 1

    def show(self, n_cards: int, verdict: Verdict, probe: str | None = "", who: str = "",
             energy: str = "", n_jobs: int = 1, *, ended: str = "") -> None:
        """``probe``: the job's probe figures ("" says there is no probe; None leaves them
        out, where the screen shows a card's own figure instead). ``n_jobs``: several jobs
        share the cards (the head says "2 jobs", not "Job"). ``ended``: the followed job's
        end (`followed_job`), shown instead of a verdict."""
        # Only what the line shows decides a repaint: the verdict's figures (confidence, its
        # other reasons) move every poll, and each repaint resent the whole line (~0.3 KiB).
        before = (self.n_cards, *_shown(self.verdict), self.probe, self.who, self.energy,
                  self.n_jobs, self.ended)
        self.n_cards, self.verdict, self.probe = n_cards, verdict, probe
        self.who, self.energy, self.n_jobs, self.ended = who, energy, n_jobs, ended
        if (n_cards, *_shown(verdict), probe, who, energy, n_jobs, ended) != before:
            self.refresh()

    def _parts(self) -> list[tuple[str, str]]:
        """(text, component class or "" for bold) parts of the line, uncut."""
        if self.ended:
            return [("Job ", ""), (" ENDED ", "jobline--unknown"),
                    (f" {clean(self.ended, 400)}", "jobline--why")]
        verdict = self.verdict
        kind = verdict.kind if verdict.kind in VERDICT_KINDS else "unknown"
        first = _first_reason(verdict)
        cards = (f"{self.n_cards} card{'s' if self.n_cards != 1 else ''}" if self.n_cards
                 else "probe only")  # no accelerator tool: no card figures, the probes
        head = "Job" if self.n_jobs <= 1 else f"{self.n_jobs} jobs"
        parts = [
            (f"{head} ({cards}) ", ""),
            (f" {badge_word(kind, verdict.cause)} ", f"jobline--{kind}"),
        ]
        if self.who:
            parts.append((f" {clean(self.who, 100)} ", "jobline--who"))
        if self.probe is not None:
            parts.append((f" {self.probe or 'no probe'} ", "jobline--probe"))
        if self.energy and self.n_cards:  # no card: no power figure to speak of
            parts.append((f" {clean(self.energy, 100)} ", "jobline--probe"))
        if first:
            parts.append((f" {clean(first, 400)}", "jobline--why"))
        return parts

    def full_text(self) -> str:
        """The whole line as text (the why view shows it: here it may be cut at a word)."""
        return " ".join(" ".join(text.split()) for text, _ in self._parts())

    def render_line(self, y: int) -> Strip:
        if y:
            return self.blank()
        styled = [
            (text, self.part_style(part) if part else self.base_style + _BOLD)
            for text, part in self._parts()
        ]
        return self.fit_at_word(self.strip_parts(styled))
