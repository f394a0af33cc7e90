"""Energy per card and per job: each card's power integrated over the polls.

Pure (Frames in, figures out), so the dashboard, ``check``, ``report`` and the exporter fold the
same Frames into the same joules. The rule, and what it costs:

* **Trapezoids between consecutive polls.** Between two polls in a row that both read a card's
  power, the card used ``(P0 + P1) / 2 × dt``. A tool samples power at one instant per poll, so
  a load that swings faster than the poll interval is averaged by chance, not measured: at 1 Hz
  the figure is good to a few per cent over minutes, not per second.
* **Gaps are not bridged.** A poll without the card's power (missing, stale: the tool failed and
  the last figures were carried over; the card not listed) breaks the line: the time until the
  next two good polls counts as *uncovered*, not guessed. So does a gap between polls longer
  than `MAX_GAP_INTERVALS` typical intervals (a suspended monitor, a hung poll). Energy is then a
  lower bound, and ``covered_s`` says over how much of the time it was measured.
* **A card that disappears** keeps its total (marked gone); its window empties as time passes.
* **Per job**: each step's energy on a card goes to the job(s) on that card at both polls
  (`Frame.jobs`' ``card_ids`` at the later one), split evenly where several share it. "Since
  the job started" means since the monitor (or the recording) first saw the job: energy before
  it was not read.
* **Joules per sample** (with the probe): over the steps where every card of the job was
  integrated and its probed ranks gave samples/s at both polls, the job's energy divided by
  its samples (``samples_per_s`` integrated the same way, summed over its ranks).

Figures stay None where no power figure was ever read ("no power figures"), never 0.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from gpusat_tui.model import Frame, JobContext

__all__ = [
    "JOULES_PER_KWH",
    "MAX_GAP_INTERVALS",
    "WINDOW_S",
    "EnergyFigures",
    "EnergyMeter",
    "energy_words",
    "format_energy",
    "total_joules",
]

JOULES_PER_KWH = 3.6e6
#: A step longer than this many typical poll intervals is a gap, not integrated.
MAX_GAP_INTERVALS = 3.0
#: "Over the window": the last this many seconds (the verdict's window).
WINDOW_S = 30.0
#: Polls whose spacing makes up the typical interval (their median).
_INTERVAL_POLLS = 16


@dataclass(frozen=True)
class EnergyFigures:
    """Energy of one card or one job, since it was first seen and over the window."""

    #: Joules since first seen; None when no power figure was ever read.
    joules: float | None
    #: Seconds of power integrated (card-seconds for a job on several cards), and seconds
    #: seen but not integrated (gaps, polls without a figure).
    covered_s: float = 0.0
    uncovered_s: float = 0.0
    #: When it was first seen (Unix time) and whether it is gone (a card no longer listed).
    since_t: float | None = None
    gone: bool = False
    window_joules: float | None = None
    window_s: float = WINDOW_S
    #: Wall seconds of the window that were integrated (less than ``window_s`` early on).
    window_covered_s: float = 0.0
    #: Joules and samples over the steps both were known (job with a probe only).
    probe_joules: float | None = None
    samples: float | None = None
    window_probe_joules: float | None = None
    window_samples: float | None = None

    @property
    def kwh(self) -> float | None:
        return None if self.joules is None else self.joules / JOULES_PER_KWH

    @property
    def window_kwh(self) -> float | None:
        return None if self.window_joules is None else self.window_joules / JOULES_PER_KWH

    @property
    def joules_per_sample(self) -> float | None:
        return _ratio(self.probe_joules, self.samples)

    @property
    def samples_per_kwh(self) -> float | None:
        per = self.joules_per_sample
        return None if not per else JOULES_PER_KWH / per

    @property
    def window_joules_per_sample(self) -> float | None:
        return _ratio(self.window_probe_joules, self.window_samples)


def _ratio(joules: float | None, samples: float | None) -> float | None:
    if joules is None or not samples or samples <= 0:
        return None
    return joules / samples


@dataclass
class _Tally:
    """Running energy of one card or job."""

    since_t: float
    joules: float = 0.0
    covered_s: float = 0.0
    uncovered_s: float = 0.0
    has_power: bool = False
    gone: bool = False
    probe_joules: float = 0.0
    samples: float = 0.0
    has_samples: bool = False
    #: (end time, joules, probe joules, samples, wall seconds) of each step in the window.
    window: deque[tuple[float, float, float, float, float]] = field(default_factory=deque)

    def step(
        self, t: float, dt: float, joules: float, probe: tuple[float, float] | None = None
    ) -> None:
        self.joules += joules
        probe_j, samples = probe if probe is not None else (0.0, 0.0)
        if probe is not None:
            self.probe_joules += probe_j
            self.samples += samples
            self.has_samples = True
        self.window.append((t, joules, probe_j, samples, dt))

    def trim(self, now: float, window_s: float) -> None:
        while self.window and self.window[0][0] <= now - window_s:
            self.window.popleft()

    def figures(self, window_s: float) -> EnergyFigures:
        if not self.has_power:
            return EnergyFigures(joules=None, uncovered_s=self.uncovered_s,
                                 since_t=self.since_t, gone=self.gone, window_s=window_s)
        probe = self.has_samples
        return EnergyFigures(
            joules=self.joules, covered_s=self.covered_s, uncovered_s=self.uncovered_s,
            since_t=self.since_t, gone=self.gone,
            window_joules=sum(s[1] for s in self.window), window_s=window_s,
            window_covered_s=sum(s[4] for s in self.window),
            probe_joules=self.probe_joules if probe else None,
            samples=self.samples if probe else None,
            window_probe_joules=sum(s[2] for s in self.window) if probe else None,
            window_samples=sum(s[3] for s in self.window) if probe else None,
        )


class EnergyMeter:
    """Folds Frames (in time order) into energy per card and per job, in constant memory
    (the window keeps one entry per poll inside it)."""

    def __init__(self, interval_s: float | None = None, window_s: float = WINDOW_S) -> None:
        self.interval_s = interval_s
        self.window_s = window_s
        self._cards: dict[str, _Tally] = {}
        self._jobs: dict[str, _Tally] = {}
        self._job_info: dict[str, JobContext] = {}
        #: card id -> power at the previous poll (only cards with a fresh figure then).
        self._prev_power: dict[str, float] = {}
        #: job key -> sum of its ranks' samples/s at the previous poll, and which ranks.
        self._prev_rate: dict[str, tuple[frozenset[int], float]] = {}
        self._prev_cards: set[str] = set()
        self._prev_jobs: set[str] = set()
        self._prev_t: float | None = None
        self._dts: deque[float] = deque(maxlen=_INTERVAL_POLLS)
        self.now: float | None = None

    def _max_gap(self) -> float:
        interval = self.interval_s
        if interval is None and self._dts:
            interval = statistics.median(self._dts)
        return MAX_GAP_INTERVALS * interval if interval else float("inf")

    def add(self, frame: Frame) -> None:
        t = frame.t
        dt = None if self._prev_t is None else t - self._prev_t
        if dt is not None and dt > 0:
            bridged = dt <= self._max_gap()
            self._dts.append(dt)
        else:  # the first poll, or the clock went back: nothing to integrate
            bridged = False
        self._prev_t = t
        self.now = t
        jobs_on: dict[str, list[str]] = {}
        for job in frame.jobs:
            key = job.key
            self._job_info[key] = job
            if key not in self._jobs:
                self._jobs[key] = _Tally(since_t=t)
            self._jobs[key].gone = False
            if key not in self._prev_jobs:  # its first poll: no step of it to integrate yet
                continue
            for card_id in job.card_ids:
                jobs_on.setdefault(card_id, []).append(key)
        job_joules: dict[str, float] = {}
        integrated: set[str] = set()
        power_now: dict[str, float] = {}
        for card in frame.cards:
            card_id = card.id
            tally = self._cards.get(card_id)
            if tally is None:
                tally = self._cards[card_id] = _Tally(since_t=t)
            tally.gone = False
            power = card.power_w if card.stale_s is None else None
            if power is not None:
                tally.has_power = True
                power_now[card_id] = power
            before = self._prev_power.get(card_id)
            if dt is None or dt <= 0 or card_id not in self._prev_cards:
                continue
            if bridged and power is not None and before is not None:
                joules = (before + power) / 2.0 * dt
                tally.covered_s += dt
                tally.step(t, dt, joules)
                integrated.add(card_id)
                keys = jobs_on.get(card_id, [])
                for key in keys:
                    job_joules[key] = job_joules.get(key, 0.0) + joules / len(keys)
            else:
                tally.uncovered_s += dt
        for card_id in self._prev_cards - {c.id for c in frame.cards}:
            self._cards[card_id].gone = True
        self._fold_jobs(frame, t, dt if dt and dt > 0 else None, bridged, job_joules, integrated)
        self._prev_power = power_now
        self._prev_cards = {c.id for c in frame.cards}
        for tally in self._cards.values():
            tally.trim(t, self.window_s)

    def _fold_jobs(
        self, frame: Frame, t: float, dt: float | None, bridged: bool,
        job_joules: dict[str, float], integrated: set[str],
    ) -> None:
        rates: dict[str, tuple[frozenset[int], float]] = {}
        for job in frame.jobs:
            ranks = [p for p in frame.probes
                     if p.samples_per_s is not None
                     and (p.pid in job.pids or (p.card_id is not None
                                                and p.card_id in job.card_ids))]
            if ranks:
                rates[job.key] = (frozenset(p.pid for p in ranks),
                                  sum(p.samples_per_s or 0.0 for p in ranks))
        present = {j.key for j in frame.jobs}
        for key, tally in self._jobs.items():
            if key not in present:
                tally.gone = True
                continue
            job = self._job_info[key]
            if key not in self._prev_jobs:
                continue
            if dt is None:
                continue
            if not bridged or not any(c in integrated for c in job.card_ids):
                tally.uncovered_s += dt * len(job.card_ids)
                continue
            tally.has_power = True
            covered = [c for c in job.card_ids if c in integrated]
            tally.covered_s += dt * len(covered)
            tally.uncovered_s += dt * (len(job.card_ids) - len(covered))
            probe: tuple[float, float] | None = None
            now_rate, then_rate = rates.get(key), self._prev_rate.get(key)
            if (len(covered) == len(job.card_ids) and now_rate and then_rate
                    and now_rate[0] == then_rate[0]):
                probe = (job_joules.get(key, 0.0), (now_rate[1] + then_rate[1]) / 2.0 * dt)
            tally.step(t, dt, job_joules.get(key, 0.0), probe)
        self._prev_rate = rates
        self._prev_jobs = present
        for tally in self._jobs.values():
            tally.trim(t, self.window_s)

    # --- figures --------------------------------------------------------------------------

    def card(self, card_id: str) -> EnergyFigures | None:
        tally = self._cards.get(card_id)
        return None if tally is None else tally.figures(self.window_s)

    def job(self, key: str) -> EnergyFigures | None:
        tally = self._jobs.get(key)
        return None if tally is None else tally.figures(self.window_s)

    @property
    def cards(self) -> dict[str, EnergyFigures]:
        return {cid: t.figures(self.window_s) for cid, t in self._cards.items()}

    @property
    def jobs(self) -> dict[str, EnergyFigures]:
        return {key: t.figures(self.window_s) for key, t in self._jobs.items()}

    def job_context(self, key: str) -> JobContext | None:
        """The last context seen for a job (its cards and PIDs as they were then)."""
        return self._job_info.get(key)

    def card_joules(self) -> dict[str, float]:
        """Joules since first seen of every card with power figures (the exporter's counter)."""
        return {cid: t.joules for cid, t in self._cards.items() if t.has_power}


def format_energy(joules: float | None) -> str:
    """``812 J``, ``45.2 kJ``, ``3.41 kWh`` (kWh from 0.1 kWh up), ``no power figures``."""
    if joules is None:
        return "no power figures"
    if joules >= 0.1 * JOULES_PER_KWH:
        return f"{joules / JOULES_PER_KWH:,.2f} kWh"
    if joules >= 1e4:
        return f"{joules / 1e3:,.1f} kJ"
    return f"{joules:,.0f} J"


def energy_words(figures: EnergyFigures | None, *, window: bool = True) -> str:
    """One line: ``3.41 kWh (412 W over 30 s) · 0.91 J/sample · 3.9 M samples/kWh``."""
    if figures is None or figures.joules is None:
        return "no power figures"
    parts = [format_energy(figures.joules)]
    if window and figures.window_joules is not None and figures.window_covered_s > 0:
        watts = figures.window_joules / figures.window_covered_s
        parts[0] += f" ({watts:,.0f} W over {figures.window_covered_s:.0f} s)"
    per = figures.joules_per_sample
    if per is not None:
        parts.append(f"{per:,.3g} J/sample")
        per_kwh = figures.samples_per_kwh
        if per_kwh is not None:
            parts.append(f"{_si(per_kwh)} samples/kWh")
    return " · ".join(parts)


def _si(value: float) -> str:
    for factor, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if value >= factor:
            return f"{value / factor:,.1f}{suffix}"
    return f"{value:,.0f}"


def total_joules(figures: Iterable[EnergyFigures]) -> float | None:
    """Sum of the joules that are known; None when none are."""
    known = [f.joules for f in figures if f.joules is not None]
    return sum(known) if known else None
