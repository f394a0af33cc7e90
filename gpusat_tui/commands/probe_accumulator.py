"""One probed rank's figures over a ``check`` run or a recording, in constant memory.

Each publication is folded in once (a file read twice counts once), and the run's rates come
from the probe's cumulative counters, across a restart of the probe (`SessionCounters`). The
shape it fills is `check_schema.CheckProbe` (an interface).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from gpusat_tui.analysis.probe_reading.probe_session import SessionCounters
from gpusat_tui.analysis.probe_reading.stack_shares import stack_shares
from gpusat_tui.analysis.stats import RunningStats
from gpusat_tui.commands.check_schema import (
    CheckAlloc,
    CheckProbe,
    CheckProbeRun,
    CheckStack,
    CheckUserLine,
    Stats,
    stats_figures,
)
from gpusat_tui.model import ProbeSample

__all__ = ["ProbeAccumulator"]

#: The figures summarised per probe and allocator: the shapes' `Stats` fields.
_PROBE_FIGURES = stats_figures(CheckProbe)
_ALLOC_FIGURES = stats_figures(CheckAlloc)


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
