"""How ``check`` and ``report`` word a job and its energy, from the ``check --json`` shapes.

Every string from a process's environment went through `gpusat_tui.text.clean` (in
`host.jobs.job_label`) before it reaches a line here.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusat_tui.analysis.energy import format_energy
from gpusat_tui.commands.check_schema import CheckCard, CheckEnergy, CheckJob
from gpusat_tui.host.scheduler.jobs import job_label
from gpusat_tui.text import clean

__all__ = ["energy_line", "job_words", "total_energy_line"]


def energy_line(energy: CheckEnergy | None) -> str:
    """``3.41 kWh over 2 h 10 min of card time · 0.91 J/sample · 3.9 M samples/kWh``."""
    if energy is None or energy.joules is None:
        return "no power figures"
    hours = energy.covered_s / 3600.0
    parts = [f"{format_energy(energy.joules)} over {hours:,.2f} h of power figures"]
    if energy.uncovered_s > 0:
        parts[0] += f" ({energy.uncovered_s:,.0f} s without)"
    if energy.joules_per_sample is not None:
        parts.append(f"{energy.joules_per_sample:,.3g} J/sample")
    if energy.samples_per_kwh is not None:
        parts.append(f"{energy.samples_per_kwh:,.0f} samples/kWh")
    if energy.note:
        parts.append(clean(energy.note, 120))
    return " · ".join(parts)


def job_words(job: CheckJob) -> str:
    """``slurm 4242 "train" step 0 · alice · gpu on nvidia:0, nvidia:1: 3.41 kWh ...``."""
    cards = ", ".join(clean(c, 40) for c in job.card_ids)
    if not cards:  # no card tied to it (no accelerator tool): no energy to speak of either
        return job_label(job)
    return f"{job_label(job)} on {cards}: energy {energy_line(job.energy)}"


def total_energy_line(cards: Sequence[CheckCard]) -> str:
    """The cards' energy together, and which cards gave no power figures."""
    known = [c.energy.joules for c in cards if c.energy is not None and c.energy.joules is not None]
    without = [clean(c.id, 40) for c in cards if c.energy is None or c.energy.joules is None]
    text = format_energy(sum(known)) if known else "no power figures"
    if known and without:
        text += f" (no power figures from {', '.join(without)})"
    return text
