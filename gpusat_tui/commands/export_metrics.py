"""What ``gpusat-tui export`` serves: Frames and verdicts as Prometheus metric families.

Pure: `ExportState.update(frame, assessment)` folds each poll in (the poller's thread), and
`ExportCollector.collect()` turns the latest snapshot into metric families (the scrape's thread),
walking `metric_table.METRICS`. A scrape never waits on a tool call: it reads the snapshot the
last poll left, which is replaced whole (one reference assignment), so a scrape sees one poll,
never half of two.

Shares that change faster than a scrape (the card's utilisation, the CPU of the trainer and its
workers, the probe's data wait) are also exported as ``_seconds_total`` counters integrated
over the polls: ``rate(x_seconds_total[1m])`` is the mean share over the minute as sampled at
every poll, which a 15-30 s scrape of the gauge alone would alias.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from gpusat_tui import __version__
from gpusat_tui.analysis.energy import EnergyMeter
from gpusat_tui.commands.metric_table import (
    CARD_ROWS,
    METRIC_BY_NAME,
    METRICS,
    METRICS_VERSION,
    POLL_ROWS,
    PROBE_ROWS,
    TRAINER_ROWS,
    MetricDef,
    Snapshot,
    TrainerView,
    probe_card,
)
from gpusat_tui.model import (
    TOOL_ERROR_KINDS,
    VERDICT_KINDS,
    Assessment,
    CardReading,
    Frame,
    Verdict,
)

__all__ = ["ExportCollector", "ExportState", "exporter_cpu_seconds"]

S = TypeVar("S")

#: A gap between two polls longer than this many intervals is not integrated into the
#: ``_seconds_total`` counters (the exporter was suspended, or a poll hung): a guess over a
#: long gap would be worse than leaving it out.
_MAX_GAP_INTERVALS = 3.0


def _family(name: str) -> GaugeMetricFamily | CounterMetricFamily:
    spec = METRIC_BY_NAME[name]
    if spec.type == "counter":
        # The library adds the ``_total`` suffix to a counter's samples itself.
        return CounterMetricFamily(name.removesuffix("_total"), spec.help, labels=spec.labels)
    return GaugeMetricFamily(name, spec.help, labels=spec.labels)


@dataclass
class ExportState:
    """Folds each poll into counters and publishes one immutable snapshot for scrapes."""

    host: str
    interval_s: float = 1.0
    #: The tools this exporter runs: their error counters are served at 0 from the first
    #: scrape, so that ``rate()``/``increase()`` see zero, not nothing, until one fails.
    tools: tuple[str, ...] = ()
    _prev_t: float | None = None
    _card_busy_s: dict[str, float] = field(default_factory=dict)
    _trainer_cpu_s: dict[int, float] = field(default_factory=dict)
    _workers_cpu_s: dict[int, float] = field(default_factory=dict)
    _data_wait_s: dict[tuple[int, str], float] = field(default_factory=dict)
    _errors: dict[tuple[str, str], int] = field(default_factory=dict)
    _polls: int = 0
    snapshot: Snapshot = field(init=False)
    _energy: EnergyMeter = field(init=False)

    def __post_init__(self) -> None:
        for tool in self.tools:
            for kind in TOOL_ERROR_KINDS:
                self._errors[(tool, kind)] = 0
        self.snapshot = Snapshot(None, Assessment(), {}, {}, {}, {}, dict(self._errors), 0)
        self._energy = EnergyMeter(interval_s=self.interval_s)

    def update(self, frame: Frame, assessment: Assessment) -> None:
        """Fold in one poll (the poller's thread) and publish the new snapshot."""
        dt = None if self._prev_t is None else frame.t - self._prev_t
        if dt is not None and not 0 < dt <= _MAX_GAP_INTERVALS * max(self.interval_s, 0.1):
            dt = None
        self._prev_t = frame.t
        self._polls += 1
        for err in frame.errors:
            error_key = (err.tool, err.kind)
            self._errors[error_key] = self._errors.get(error_key, 0) + 1
        # Counters of cards and processes that left are dropped: their series end, as the
        # gauges' do (a counter that comes back starts again at 0, which rate() handles).
        live_cards = {c.id for c in frame.cards}
        self._card_busy_s = {k: v for k, v in self._card_busy_s.items() if k in live_cards}
        for card in frame.cards:
            self._card_busy_s.setdefault(card.id, 0.0)
            if dt is not None and card.stale_s is None and card.util_pct is not None:
                self._card_busy_s[card.id] += dt * card.util_pct / 100.0
        trainers = {p.pid for p in frame.processes if p.role == "trainer"}
        self._trainer_cpu_s = {k: v for k, v in self._trainer_cpu_s.items() if k in trainers}
        self._workers_cpu_s = {k: v for k, v in self._workers_cpu_s.items() if k in trainers}
        for pid in trainers:
            self._trainer_cpu_s.setdefault(pid, 0.0)
            self._workers_cpu_s.setdefault(pid, 0.0)
        if dt is not None:
            for proc in frame.processes:
                if proc.cpu_pct is None:
                    continue
                if proc.role == "trainer":
                    self._trainer_cpu_s[proc.pid] += dt * proc.cpu_pct / 100.0
                elif proc.trainer_pid in self._workers_cpu_s:
                    self._workers_cpu_s[proc.trainer_pid] += dt * proc.cpu_pct / 100.0
        probes = list(getattr(frame, "probes", None) or [])
        keys = {(p.pid, probe_card(p)) for p in probes}
        self._data_wait_s = {k: v for k, v in self._data_wait_s.items() if k in keys}
        for probe in probes:
            key = (probe.pid, probe_card(probe))
            self._data_wait_s.setdefault(key, 0.0)
            wait = getattr(probe, "data_wait_pct", None)
            if dt is not None and wait is not None:
                self._data_wait_s[key] += dt * wait / 100.0
        self._energy.add(frame)
        energy = {k: v for k, v in self._energy.card_joules().items() if k in live_cards}
        self.snapshot = Snapshot(
            frame, assessment, dict(self._card_busy_s), dict(self._trainer_cpu_s),
            dict(self._workers_cpu_s), dict(self._data_wait_s), dict(self._errors),
            self._polls, energy,
        )


def _card_labels(host: str, card: CardReading) -> list[str]:
    return [host, card.vendor, card.id, str(card.index), card.name or "", card.uuid or ""]


def _verdict_samples(
    family: GaugeMetricFamily | CounterMetricFamily, prefix: list[str], verdict: Verdict
) -> None:
    kind = verdict.kind if verdict.kind in VERDICT_KINDS else "unknown"
    for each in VERDICT_KINDS:
        cause = (verdict.cause or "") if each == kind else ""
        family.add_metric([*prefix, each, cause], 1.0 if each == kind else 0.0)


def exporter_cpu_seconds() -> float:
    """CPU seconds of this process and the tools it ran and reaped (microsecond rusage)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


class ExportCollector(Collector):
    """A prometheus_client collector over `ExportState`'s latest snapshot."""

    def __init__(self, state: ExportState) -> None:
        self.state = state

    def describe(self) -> Iterable[Metric]:
        # Registering must not call collect() (it would read a half-started state).
        return []

    def collect(self) -> Iterator[Metric]:
        snap = self.state.snapshot
        host = self.state.host
        info = InfoMetricFamily("gpusat_exporter", METRIC_BY_NAME["gpusat_exporter_info"].help)
        info.add_metric(
            [], {"host": host, "version": __version__, "metrics_version": str(METRICS_VERSION)}
        )
        yield info
        frame = snap.frame
        families: dict[str, GaugeMetricFamily | CounterMetricFamily] = {
            m.name: _family(m.name) for m in METRICS if m.type != "info"
        }

        def put(name: str, labels: list[str], value: float | None) -> None:
            if value is not None:
                families[name].add_metric(labels, float(value))

        def emit(rows: tuple[MetricDef[S], ...], subject: S, labels: list[str]) -> None:
            for row in rows:
                assert row.read is not None
                put(row.name, labels, row.read(subject, snap))

        if frame is not None:
            for card in frame.cards:
                labels = _card_labels(host, card)
                emit(CARD_ROWS, card, labels)
                verdict = snap.assessment.cards.get(card.id) or Verdict()
                _verdict_samples(families["gpusat_card_verdict"], labels, verdict)
            if frame.cards or frame.probes:  # no tool: the job's verdict from its probes
                _verdict_samples(families["gpusat_job_verdict"], [host], snap.assessment.job)
            for trainer in _trainers(frame):
                emit(TRAINER_ROWS, trainer, [host, str(trainer.proc.pid), trainer.proc.name])
            for probe in frame.probes:
                rank = "" if probe.rank is None else str(probe.rank)
                labels = [host, str(probe.pid), rank, probe_card(probe)]
                if probe.framework:
                    put("gpusat_probe_info", [*labels, probe.framework], 1.0)
                for phase, count in probe.phase_samples.items():
                    put("gpusat_probe_phase_samples_total", [*labels, phase], float(count))
                emit(PROBE_ROWS, probe, labels)
            emit(POLL_ROWS, frame, [host])
        for (tool, kind), count in snap.errors.items():
            put("gpusat_tool_errors_total", [host, tool, kind], count)
        put("gpusat_exporter_cpu_seconds_total", [host], exporter_cpu_seconds())
        put("gpusat_exporter_polls_total", [host], snap.polls)
        yield from (family for family in families.values() if family.samples)
        if frame is not None and frame.jobs:
            yield from _job_families(frame, host)


def _trainers(frame: Frame) -> Iterator[TrainerView]:
    """The poll's training processes, each with its workers' CPU and the throttled shares."""
    workers: dict[int, list[float | None]] = {}
    held: dict[int, list[float]] = {}
    for proc in frame.processes:
        owner = proc.trainer_pid if proc.role == "dataloader_worker" else proc.pid
        if proc.role == "dataloader_worker" and proc.trainer_pid is not None:
            workers.setdefault(proc.trainer_pid, []).append(proc.cpu_pct)
        if owner is not None and proc.cpu_throttled_pct is not None:
            held.setdefault(owner, []).append(proc.cpu_throttled_pct)
    for proc in frame.processes:
        if proc.role == "trainer":
            mine = workers.get(proc.pid, [])
            yield TrainerView(proc, len(mine), [c for c in mine if c is not None],
                              held.get(proc.pid, []))


def _job_families(frame: Frame, host: str) -> Iterator[Metric]:
    """``gpusat_job_info`` (one per job) and ``gpusat_card_job_info`` (one per card and job)."""
    jobs = InfoMetricFamily("gpusat_job", METRIC_BY_NAME["gpusat_job_info"].help)
    cards = InfoMetricFamily("gpusat_card_job", METRIC_BY_NAME["gpusat_card_job_info"].help)
    for job in frame.jobs:
        values = {
            "host": host, "job_key": job.key, "scheduler": job.scheduler,
            "job_id": job.job_id or "", "step": job.step or "", "name": job.name or "",
            "user": job.user or "", "partition": job.partition or "",
            "namespace": job.namespace or "", "pod_uid": job.pod_uid or "",
        }
        jobs.add_metric([], values)
        for card_id in job.card_ids:
            cards.add_metric([], {"host": host, "card": card_id, "job_key": job.key})
    yield jobs
    if cards.samples:
        yield cards
