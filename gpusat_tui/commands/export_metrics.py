"""What ``gpusat-tui export`` serves: Frames and verdicts as Prometheus metric families.

Pure: `ExportState.update(frame, assessment)` folds each poll in (the poller's thread), and
`ExportCollector.collect()` turns the latest snapshot into metric families (the scrape's thread).
A scrape never waits on a tool call: it reads the snapshot the last poll left, which is replaced
whole (one reference assignment), so a scrape sees one poll, never half of two.

Names follow the Prometheus naming rules and what the accelerator exporters already do (DCGM,
AMD's device-metrics-exporter, node_exporter): base units (`_bytes`, `_watts`, `_celsius`,
`_seconds`), shares as `_ratio` in 0..1 (never percent), `_total` for counters. Every card
series carries ``host``, ``vendor``, ``card`` (the card id, ``vendor:index``), ``index``, ``name``
and ``uuid`` (empty when the tool does not say). `METRICS` lists every family, with its type,
labels and help text; the README's table and a contract test are built on it, and
`METRICS_VERSION` is bumped on any incompatible change (a rename, a label removed).

Shares that change faster than a scrape (the card's utilisation, the CPU of the trainer and its
workers, the probe's data wait) are also exported as ``_seconds_total`` counters integrated
over the polls: ``rate(x_seconds_total[1m])`` is the mean share over the minute as sampled at
every poll, which a 15-30 s scrape of the gauge alone would alias.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from gpusat_tui import __version__
from gpusat_tui.analysis.energy import EnergyMeter
from gpusat_tui.model import (
    TOOL_ERROR_KINDS,
    VERDICT_KINDS,
    Assessment,
    CardReading,
    Frame,
    Verdict,
)

__all__ = [
    "CARD_LABELS",
    "METRICS",
    "METRICS_VERSION",
    "ExportCollector",
    "ExportState",
    "MetricDef",
]

#: Version of the exported names and labels. Bump on any incompatible change.
METRICS_VERSION = 1

#: Labels of every per-card series.
CARD_LABELS: tuple[str, ...] = ("host", "vendor", "card", "index", "name", "uuid")
_TRAINER = ("host", "pid", "name")
_PROBE = ("host", "pid", "rank", "card")
#: Labels of the one ``gpusat_job_info`` series per job (``job_key`` is its join label: a
#: ``job`` label would clash with Prometheus' own target label).
JOB_INFO_LABELS: tuple[str, ...] = (
    "host", "job_key", "scheduler", "job_id", "step", "name", "user", "partition", "namespace",
    "pod_uid",
)

MIB = 1024 * 1024

#: ``put(metric name, label values, value)``: adds one sample unless the value is None.
_Put = Callable[[str, list[str], "float | None"], None]

#: A gap between two polls longer than this many intervals is not integrated into the
#: ``_seconds_total`` counters (the exporter was suspended, or a poll hung): a guess over a
#: long gap would be worse than leaving it out.
_MAX_GAP_INTERVALS = 3.0


@dataclass(frozen=True)
class MetricDef:
    """One exported family: its name as exposed, type, labels and help text."""

    name: str
    type: str  # gauge | counter | info
    labels: tuple[str, ...]
    help: str


#: Every metric family the exporter serves. Order is the README table's order.
METRICS: tuple[MetricDef, ...] = (
    MetricDef("gpusat_exporter_info", "info", ("host", "version", "metrics_version"),
              "Always 1: the gpusat-tui version and metrics version of this exporter"),
    MetricDef("gpusat_card_utilization_ratio", "gauge", CARD_LABELS,
              "Utilisation as the vendor tool reports it (GPU-Util, HCU%, AICore%...), 0..1"),
    MetricDef("gpusat_card_busy_seconds_total", "counter", CARD_LABELS,
              "Utilisation integrated over the polls (fresh figures only): rate() is the mean "
              "utilisation between two scrapes"),
    MetricDef("gpusat_card_memory_used_bytes", "gauge", CARD_LABELS, "Device memory in use"),
    MetricDef("gpusat_card_memory_total_bytes", "gauge", CARD_LABELS, "Device memory size"),
    MetricDef("gpusat_card_memory_used_ratio", "gauge", CARD_LABELS,
              "Device memory in use as a share of its size, 0..1 (also for tools that give "
              "only a percentage)"),
    MetricDef("gpusat_card_power_watts", "gauge", CARD_LABELS, "Power draw"),
    MetricDef("gpusat_card_power_limit_watts", "gauge", CARD_LABELS, "Power cap"),
    MetricDef("gpusat_card_temperature_celsius", "gauge", CARD_LABELS, "Temperature"),
    MetricDef("gpusat_card_figures_age_seconds", "gauge", CARD_LABELS,
              "Age of the card's figures: 0 when the last poll read them, else how long ago "
              "they were read (the tool failed or hung since)"),
    MetricDef("gpusat_card_energy_joules_total", "counter", CARD_LABELS,
              "Energy used by the card: its power integrated over the polls (trapezoids between "
              "consecutive polls with a fresh figure; gaps are not bridged)"),
    MetricDef("gpusat_card_verdict", "gauge", (*CARD_LABELS, "kind", "cause"),
              "1 for the card's current verdict kind (cause: its cause, or empty), 0 for "
              "every other kind"),
    MetricDef("gpusat_job_verdict", "gauge", ("host", "kind", "cause"),
              "1 for the verdict on this host's job as a whole (imbalanced: a card lags; with "
              "no accelerator tool, the probed job's), 0 for every other kind"),
    MetricDef("gpusat_job_info", "info", JOB_INFO_LABELS,
              "Always 1, one series per job on this host: whose job it is (Slurm job, pod or "
              "plain); join to cards through gpusat_card_job_info's job_key"),
    MetricDef("gpusat_card_job_info", "info", ("host", "card", "job_key"),
              "Always 1, one series per card and job running on it: the join between card "
              "series (on host, card) and gpusat_job_info (on host, job_key)"),
    MetricDef("gpusat_trainer_cpu_ratio", "gauge", _TRAINER,
              "CPU of a training process over the last poll, in cores (1 = one core busy)"),
    MetricDef("gpusat_trainer_cpu_seconds_total", "counter", _TRAINER,
              "CPU time of a training process, integrated over the polls"),
    MetricDef("gpusat_trainer_workers", "gauge", _TRAINER,
              "Data-loading workers of a training process (pt_data_worker, or its "
              "multiprocessing children)"),
    MetricDef("gpusat_trainer_workers_cpu_ratio", "gauge", _TRAINER,
              "CPU of all DataLoader workers of a training process together, in cores"),
    MetricDef("gpusat_trainer_worker_cpu_max_ratio", "gauge", _TRAINER,
              "CPU of the busiest DataLoader worker, in cores (near 1: a worker is pegged)"),
    MetricDef("gpusat_trainer_workers_cpu_seconds_total", "counter", _TRAINER,
              "CPU time of all DataLoader workers of a training process, integrated"),
    MetricDef("gpusat_trainer_cpu_quota_ratio", "gauge", _TRAINER,
              "CPU quota of the training process's cgroup, in cores (cpu.max or "
              "cpu.cfs_quota_us; absent: no quota)"),
    MetricDef("gpusat_trainer_cpu_throttled_ratio", "gauge", _TRAINER,
              "Share of the quota's periods in which the kernel throttled the training "
              "process or its workers over the last poll (cpu.stat)"),
    MetricDef("gpusat_probe_data_wait_ratio", "gauge", _PROBE,
              "Share of the step spent waiting for the next batch (from the in-process probe)"),
    MetricDef("gpusat_probe_data_wait_seconds_total", "counter", _PROBE,
              "Time spent waiting for batches: the probe's own cumulative figure (exact), "
              "else the share integrated over the polls"),
    MetricDef("gpusat_probe_steps_total", "counter", _PROBE,
              "Training steps since the probe started (rate() is steps per second)"),
    MetricDef("gpusat_probe_step_seconds", "gauge", _PROBE, "Duration of one step (probe)"),
    MetricDef("gpusat_probe_samples_per_second", "gauge", _PROBE,
              "Training samples per second (probe)"),
    MetricDef("gpusat_probe_age_seconds", "gauge", _PROBE,
              "Age of the probe's last publication (it publishes about every second while "
              "the trainer runs; growing: the trainer is frozen or its probe stopped)"),
    MetricDef("gpusat_probe_info", "gauge", (*_PROBE, "framework"),
              "1 per probed trainer, labelled with the framework whose hooks measured"),
    MetricDef("gpusat_probe_phase_samples_total", "counter", (*_PROBE, "phase"),
              "Samples of the training thread's stack in each phase of the step (data, "
              "forward, backward, optimizer, collective, sync, checkpoint, evaluation, "
              "compiled, other): a phase's rate() over the sum of all phases' is its share"),
    MetricDef("gpusat_probe_stack_still_seconds", "gauge", _PROBE,
              "How long the training thread's sampled stack has not changed (growing with no "
              "step: the trainer is stuck where it stands)"),
    MetricDef("gpusat_host_cpu_ratio", "gauge", ("host",),
              "Whole-machine CPU busy share, 0..1"),
    MetricDef("gpusat_host_iowait_ratio", "gauge", ("host",),
              "Whole-machine CPU share waiting on I/O, 0..1"),
    MetricDef("gpusat_tool_errors_total", "counter", ("host", "tool", "kind"),
              "Polls on which a vendor tool failed, by tool and kind (timeout, exit, parse, "
              "denied, missing, process, other)"),
    MetricDef("gpusat_monitor_cpu_ratio", "gauge", ("host",),
              "CPU of the exporter and the tools it ran over the last poll, in cores"),
    MetricDef("gpusat_exporter_cpu_seconds_total", "counter", ("host",),
              "CPU time of the exporter process and the tools it ran (exact, from rusage)"),
    MetricDef("gpusat_exporter_polls_total", "counter", ("host",), "Polls done"),
    MetricDef("gpusat_exporter_last_poll_timestamp_seconds", "gauge", ("host",),
              "Unix time at which the last poll started"),
)

_BY_NAME = {m.name: m for m in METRICS}


def _family(name: str) -> GaugeMetricFamily | CounterMetricFamily:
    spec = _BY_NAME[name]
    if spec.type == "counter":
        # The library adds the ``_total`` suffix to a counter's samples itself.
        return CounterMetricFamily(name.removesuffix("_total"), spec.help, labels=spec.labels)
    return GaugeMetricFamily(name, spec.help, labels=spec.labels)


def _share(pct: float | None) -> float | None:
    return None if pct is None else pct / 100.0


@dataclass(frozen=True)
class _Snapshot:
    """What one scrape reads: the last poll and the counters as they stood after it."""

    frame: Frame | None
    assessment: Assessment
    card_busy_s: dict[str, float]
    trainer_cpu_s: dict[int, float]
    workers_cpu_s: dict[int, float]
    data_wait_s: dict[tuple[int, str], float]
    errors: dict[tuple[str, str], int]
    polls: int
    card_energy_j: dict[str, float] = field(default_factory=dict)


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
    snapshot: _Snapshot = field(init=False)
    _energy: EnergyMeter = field(init=False)

    def __post_init__(self) -> None:
        for tool in self.tools:
            for kind in TOOL_ERROR_KINDS:
                self._errors[(tool, kind)] = 0
        self.snapshot = _Snapshot(None, Assessment(), {}, {}, {}, {}, dict(self._errors), 0)
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
        keys = {(p.pid, _probe_card(p)) for p in probes}
        self._data_wait_s = {k: v for k, v in self._data_wait_s.items() if k in keys}
        for probe in probes:
            key = (probe.pid, _probe_card(probe))
            self._data_wait_s.setdefault(key, 0.0)
            wait = getattr(probe, "data_wait_pct", None)
            if dt is not None and wait is not None:
                self._data_wait_s[key] += dt * wait / 100.0
        self._energy.add(frame)
        energy = {k: v for k, v in self._energy.card_joules().items() if k in live_cards}
        self.snapshot = _Snapshot(
            frame, assessment, dict(self._card_busy_s), dict(self._trainer_cpu_s),
            dict(self._workers_cpu_s), dict(self._data_wait_s), dict(self._errors),
            self._polls, energy,
        )


def _probe_card(probe: object) -> str:
    return str(getattr(probe, "card_id", None) or "")


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
        info = InfoMetricFamily("gpusat_exporter", _BY_NAME["gpusat_exporter_info"].help)
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

        if frame is not None:
            for card in frame.cards:
                labels = _card_labels(host, card)
                put("gpusat_card_utilization_ratio", labels, _share(card.util_pct))
                put("gpusat_card_busy_seconds_total", labels, snap.card_busy_s.get(card.id))
                used = card.mem_used_mib
                total = card.mem_total_mib
                put("gpusat_card_memory_used_bytes", labels, None if used is None else used * MIB)
                put("gpusat_card_memory_total_bytes", labels,
                    None if total is None else total * MIB)
                put("gpusat_card_memory_used_ratio", labels, _share(card.mem_pct))
                put("gpusat_card_power_watts", labels, card.power_w)
                put("gpusat_card_power_limit_watts", labels, card.power_cap_w)
                put("gpusat_card_temperature_celsius", labels, card.temp_c)
                put("gpusat_card_figures_age_seconds", labels, card.stale_s or 0.0)
                put("gpusat_card_energy_joules_total", labels, snap.card_energy_j.get(card.id))
                verdict = snap.assessment.cards.get(card.id) or Verdict()
                _verdict_samples(families["gpusat_card_verdict"], labels, verdict)
            if frame.cards or frame.probes:  # no tool: the job's verdict from its probes
                _verdict_samples(families["gpusat_job_verdict"], [host], snap.assessment.job)
            self._processes(frame, snap, host, put)
            self._probes(frame, snap, host, put)
            if frame.host is not None:
                put("gpusat_host_cpu_ratio", [host], _share(frame.host.cpu_pct))
                put("gpusat_host_iowait_ratio", [host], _share(frame.host.iowait_pct))
            put("gpusat_monitor_cpu_ratio", [host], _share(frame.monitor_cpu_pct))
            put("gpusat_exporter_last_poll_timestamp_seconds", [host], frame.t)
        for (tool, kind), count in snap.errors.items():
            put("gpusat_tool_errors_total", [host, tool, kind], count)
        put("gpusat_exporter_cpu_seconds_total", [host], exporter_cpu_seconds())
        put("gpusat_exporter_polls_total", [host], snap.polls)
        yield from (family for family in families.values() if family.samples)
        if frame is not None and frame.jobs:
            yield from _job_families(frame, host)

    @staticmethod
    def _processes(frame: Frame, snap: _Snapshot, host: str, put: _Put) -> None:
        workers: dict[int, list[float | None]] = {}
        held: dict[int, list[float]] = {}
        for proc in frame.processes:
            owner = proc.trainer_pid if proc.role == "dataloader_worker" else proc.pid
            if proc.role == "dataloader_worker" and proc.trainer_pid is not None:
                workers.setdefault(proc.trainer_pid, []).append(proc.cpu_pct)
            if owner is not None and proc.cpu_throttled_pct is not None:
                held.setdefault(owner, []).append(proc.cpu_throttled_pct)
        for proc in frame.processes:
            if proc.role != "trainer":
                continue
            labels = [host, str(proc.pid), proc.name]
            mine = workers.get(proc.pid, [])
            cpus = [c for c in mine if c is not None]
            put("gpusat_trainer_cpu_ratio", labels, _share(proc.cpu_pct))
            put("gpusat_trainer_cpu_seconds_total", labels, snap.trainer_cpu_s.get(proc.pid))
            put("gpusat_trainer_workers", labels, len(mine))
            put("gpusat_trainer_workers_cpu_ratio", labels,
                _share(sum(cpus)) if cpus else None)
            put("gpusat_trainer_worker_cpu_max_ratio", labels,
                _share(max(cpus)) if cpus else None)
            put("gpusat_trainer_workers_cpu_seconds_total", labels,
                snap.workers_cpu_s.get(proc.pid))
            put("gpusat_trainer_cpu_quota_ratio", labels, proc.cpu_quota_cores)
            throttled = held.get(proc.pid)
            put("gpusat_trainer_cpu_throttled_ratio", labels,
                _share(max(throttled)) if throttled else None)

    @staticmethod
    def _probes(frame: Frame, snap: _Snapshot, host: str, put: _Put) -> None:
        for probe in getattr(frame, "probes", None) or []:
            card = _probe_card(probe)
            rank = getattr(probe, "rank", None)
            labels = [host, str(probe.pid), "" if rank is None else str(rank), card]
            framework = getattr(probe, "framework", None)
            if isinstance(framework, str) and framework:
                put("gpusat_probe_info", [*labels, framework], 1.0)
            put("gpusat_probe_data_wait_ratio", labels,
                _share(getattr(probe, "data_wait_pct", None)))
            exact = getattr(probe, "data_wait_s", None)
            put("gpusat_probe_data_wait_seconds_total", labels,
                exact if exact is not None else snap.data_wait_s.get((probe.pid, card)))
            steps = getattr(probe, "steps", None)
            put("gpusat_probe_steps_total", labels, None if steps is None else float(steps))
            step_ms = getattr(probe, "step_ms", None)
            put("gpusat_probe_step_seconds", labels, None if step_ms is None else step_ms / 1e3)
            put("gpusat_probe_samples_per_second", labels, getattr(probe, "samples_per_s", None))
            put("gpusat_probe_age_seconds", labels, getattr(probe, "age_s", None))
            phases = getattr(probe, "phase_samples", None) or {}
            for phase, count in phases.items():
                put("gpusat_probe_phase_samples_total", [*labels, phase], float(count))
            put("gpusat_probe_stack_still_seconds", labels,
                getattr(probe, "stack_still_s", None))


def _job_families(frame: Frame, host: str) -> Iterator[Metric]:
    """``gpusat_job_info`` (one per job) and ``gpusat_card_job_info`` (one per card and job)."""
    jobs = InfoMetricFamily("gpusat_job", _BY_NAME["gpusat_job_info"].help)
    cards = InfoMetricFamily("gpusat_card_job", _BY_NAME["gpusat_card_job_info"].help)
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
