"""The families ``gpusat-tui export`` serves, declared once: `METRICS` gives each its name,
type, labels and help text, and for a figure of a card, a trainer, a probe or the poll, how
each sample's value is read (`MetricDef.read`); the collector (`export_metrics`) only walks the
rows. The README's table and a contract test are built on it too.

Names follow the Prometheus naming rules and what the accelerator exporters already do (DCGM,
AMD's device-metrics-exporter, node_exporter): base units (`_bytes`, `_watts`, `_celsius`,
`_seconds`), shares as `_ratio` in 0..1 (never percent), `_total` for counters. Every card
series carries ``host``, ``vendor``, ``card`` (the card id, ``vendor:index``), ``index``, ``name``
and ``uuid`` (empty when the tool does not say). `METRICS_VERSION` is bumped on any
incompatible change (a rename, a label removed); the order of `METRICS` is the order of the
families in a scrape, pinned byte for byte by tests/commands/test_output_golden.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from gpusat_tui.model import Assessment, CardReading, Frame, ProbeSample, ProcessSample

__all__ = [
    "CARD_LABELS",
    "CARD_ROWS",
    "JOB_INFO_LABELS",
    "METRICS",
    "METRICS_VERSION",
    "METRIC_BY_NAME",
    "MIB",
    "POLL_ROWS",
    "PROBE_ROWS",
    "TRAINER_ROWS",
    "MetricDef",
    "Snapshot",
    "Subject",
    "TrainerView",
    "probe_card",
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
S = TypeVar("S")

@dataclass(frozen=True)
class Snapshot:
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


@dataclass(frozen=True)
class TrainerView:
    """A training process as its series see it: with its DataLoader workers' CPU (those with
    a figure) and count, and the throttled shares of it and its workers."""

    proc: ProcessSample
    workers: int
    workers_cpu: list[float]
    throttled: list[float]


#: What a family's samples are read from: a card, a trainer, a probe, the poll; "" for the
#: families built by hand (info, verdicts, per-phase samples, errors, the exporter's own).
Subject = Literal["card", "trainer", "probe", "poll", ""]


@dataclass(frozen=True)
class MetricDef(Generic[S]):
    """One exported family: its name as exposed, type, labels and help text, and (for a
    figure of a card, trainer, probe or poll) how each sample's value is read."""

    name: str
    type: str  # gauge | counter | info
    labels: tuple[str, ...]
    help: str
    subject: Subject = field(default="", repr=False, compare=False)
    #: ``read(subject, snapshot)``: the value of the subject's sample; None: no sample.
    read: Callable[[S, Snapshot], float | None] | None = field(
        default=None, repr=False, compare=False
    )


def _share(pct: float | None) -> float | None:
    return None if pct is None else pct / 100.0


def _card(name: str, kind: str, help: str,
          read: Callable[[CardReading, Snapshot], float | None]) -> MetricDef[CardReading]:
    return MetricDef(name, kind, CARD_LABELS, help, "card", read)


def _trainer(name: str, kind: str, help: str,
             read: Callable[[TrainerView, Snapshot], float | None]) -> MetricDef[TrainerView]:
    return MetricDef(name, kind, _TRAINER, help, "trainer", read)


def _probe(name: str, kind: str, help: str,
           read: Callable[[ProbeSample, Snapshot], float | None]) -> MetricDef[ProbeSample]:
    return MetricDef(name, kind, _PROBE, help, "probe", read)


def _poll(name: str, kind: str, help: str,
          read: Callable[[Frame, Snapshot], float | None]) -> MetricDef[Frame]:
    return MetricDef(name, kind, ("host",), help, "poll", read)


def _mib_bytes(mib: float | None) -> float | None:
    return None if mib is None else mib * MIB


def probe_card(probe: ProbeSample) -> str:
    return probe.card_id or ""


def _probe_wait_s(probe: ProbeSample, snap: Snapshot) -> float | None:
    """The probe's own cumulative wait (exact), else its share integrated over the polls."""
    if probe.data_wait_s is not None:
        return probe.data_wait_s
    return snap.data_wait_s.get((probe.pid, probe_card(probe)))


#: Every metric family the exporter serves, and where each figure's samples come from. Order
#: is the README table's order (and the order of the families in a scrape).
METRICS: tuple[MetricDef[Any], ...] = (
    MetricDef("gpusat_exporter_info", "info", ("host", "version", "metrics_version"),
              "Always 1: the gpusat-tui version and metrics version of this exporter"),
    _card("gpusat_card_utilization_ratio", "gauge",
          "Utilisation as the vendor tool reports it (GPU-Util, HCU%, AICore%...), 0..1",
          lambda card, _: _share(card.util_pct)),
    _card("gpusat_card_busy_seconds_total", "counter",
          "Utilisation integrated over the polls (fresh figures only): rate() is the mean "
          "utilisation between two scrapes",
          lambda card, snap: snap.card_busy_s.get(card.id)),
    _card("gpusat_card_memory_used_bytes", "gauge", "Device memory in use",
          lambda card, _: _mib_bytes(card.mem_used_mib)),
    _card("gpusat_card_memory_total_bytes", "gauge", "Device memory size",
          lambda card, _: _mib_bytes(card.mem_total_mib)),
    _card("gpusat_card_memory_used_ratio", "gauge",
          "Device memory in use as a share of its size, 0..1 (also for tools that give "
          "only a percentage)",
          lambda card, _: _share(card.mem_pct)),
    _card("gpusat_card_power_watts", "gauge", "Power draw", lambda card, _: card.power_w),
    _card("gpusat_card_power_limit_watts", "gauge", "Power cap",
          lambda card, _: card.power_cap_w),
    _card("gpusat_card_temperature_celsius", "gauge", "Temperature",
          lambda card, _: card.temp_c),
    _card("gpusat_card_figures_age_seconds", "gauge",
          "Age of the card's figures: 0 when the last poll read them, else how long ago "
          "they were read (the tool failed or hung since)",
          lambda card, _: card.stale_s or 0.0),
    _card("gpusat_card_energy_joules_total", "counter",
          "Energy used by the card: its power integrated over the polls (trapezoids between "
          "consecutive polls with a fresh figure; gaps are not bridged)",
          lambda card, snap: snap.card_energy_j.get(card.id)),
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
    _trainer("gpusat_trainer_cpu_ratio", "gauge",
             "CPU of a training process over the last poll, in cores (1 = one core busy)",
             lambda t, _: _share(t.proc.cpu_pct)),
    _trainer("gpusat_trainer_cpu_seconds_total", "counter",
             "CPU time of a training process, integrated over the polls",
             lambda t, snap: snap.trainer_cpu_s.get(t.proc.pid)),
    _trainer("gpusat_trainer_workers", "gauge",
             "Data-loading workers of a training process (pt_data_worker, or its "
             "multiprocessing children)",
             lambda t, _: t.workers),
    _trainer("gpusat_trainer_workers_cpu_ratio", "gauge",
             "CPU of all DataLoader workers of a training process together, in cores",
             lambda t, _: _share(sum(t.workers_cpu)) if t.workers_cpu else None),
    _trainer("gpusat_trainer_worker_cpu_max_ratio", "gauge",
             "CPU of the busiest DataLoader worker, in cores (near 1: a worker is pegged)",
             lambda t, _: _share(max(t.workers_cpu)) if t.workers_cpu else None),
    _trainer("gpusat_trainer_workers_cpu_seconds_total", "counter",
             "CPU time of all DataLoader workers of a training process, integrated",
             lambda t, snap: snap.workers_cpu_s.get(t.proc.pid)),
    _trainer("gpusat_trainer_cpu_quota_ratio", "gauge",
             "CPU quota of the training process's cgroup, in cores (cpu.max or "
             "cpu.cfs_quota_us; absent: no quota)",
             lambda t, _: t.proc.cpu_quota_cores),
    _trainer("gpusat_trainer_cpu_throttled_ratio", "gauge",
             "Share of the quota's periods in which the kernel throttled the training "
             "process or its workers over the last poll (cpu.stat)",
             lambda t, _: _share(max(t.throttled)) if t.throttled else None),
    _probe("gpusat_probe_data_wait_ratio", "gauge",
           "Share of the step spent waiting for the next batch (from the in-process probe)",
           lambda probe, _: _share(probe.data_wait_pct)),
    _probe("gpusat_probe_data_wait_seconds_total", "counter",
           "Time spent waiting for batches: the probe's own cumulative figure (exact), "
           "else the share integrated over the polls",
           _probe_wait_s),
    _probe("gpusat_probe_steps_total", "counter",
           "Training steps since the probe started (rate() is steps per second)",
           lambda probe, _: probe.steps),
    _probe("gpusat_probe_step_seconds", "gauge", "Duration of one step (probe)",
           lambda probe, _: None if probe.step_ms is None else probe.step_ms / 1e3),
    _probe("gpusat_probe_samples_per_second", "gauge", "Training samples per second (probe)",
           lambda probe, _: probe.samples_per_s),
    _probe("gpusat_probe_age_seconds", "gauge",
           "Age of the probe's last publication (it publishes about every second while "
           "the trainer runs; growing: the trainer is frozen or its probe stopped)",
           lambda probe, _: probe.age_s),
    MetricDef("gpusat_probe_info", "gauge", (*_PROBE, "framework"),
              "1 per probed trainer, labelled with the framework whose hooks measured"),
    MetricDef("gpusat_probe_phase_samples_total", "counter", (*_PROBE, "phase"),
              "Samples of the training thread's stack in each phase of the step (data, "
              "forward, backward, optimizer, collective, sync, checkpoint, evaluation, "
              "compiled, other): a phase's rate() over the sum of all phases' is its share"),
    _probe("gpusat_probe_stack_still_seconds", "gauge",
           "How long the training thread's sampled stack has not changed (growing with no "
           "step: the trainer is stuck where it stands)",
           lambda probe, _: probe.stack_still_s),
    _poll("gpusat_host_cpu_ratio", "gauge", "Whole-machine CPU busy share, 0..1",
          lambda frame, _: _share(frame.host.cpu_pct) if frame.host else None),
    _poll("gpusat_host_iowait_ratio", "gauge", "Whole-machine CPU share waiting on I/O, 0..1",
          lambda frame, _: _share(frame.host.iowait_pct) if frame.host else None),
    MetricDef("gpusat_tool_errors_total", "counter", ("host", "tool", "kind"),
              "Polls on which a vendor tool failed, by tool and kind (timeout, exit, parse, "
              "denied, missing, process, other)"),
    _poll("gpusat_monitor_cpu_ratio", "gauge",
          "CPU of the exporter and the tools it ran over the last poll, in cores",
          lambda frame, _: _share(frame.monitor_cpu_pct)),
    MetricDef("gpusat_exporter_cpu_seconds_total", "counter", ("host",),
              "CPU time of the exporter process and the tools it ran (exact, from rusage)"),
    MetricDef("gpusat_exporter_polls_total", "counter", ("host",), "Polls done"),
    _poll("gpusat_exporter_last_poll_timestamp_seconds", "gauge",
          "Unix time at which the last poll started",
          lambda frame, _: frame.t),
)

METRIC_BY_NAME = {m.name: m for m in METRICS}


def _rows(subject: Subject) -> tuple[MetricDef[Any], ...]:
    return tuple(m for m in METRICS if m.subject == subject)


CARD_ROWS, TRAINER_ROWS, PROBE_ROWS, POLL_ROWS = (
    _rows("card"), _rows("trainer"), _rows("probe"), _rows("poll")
)
