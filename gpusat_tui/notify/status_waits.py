"""The data wait a monitor's status file quotes: each probed trainer's share of time blocked on
its next batch over the span the verdict judges (the polls since the job's kind was adopted,
`EVIDENCE_WINDOW_S` at most), from the probe's cumulative counters as the verdict's why reads them.

The probe's own figure covers only its last publishing interval (about a second): beside a why
of "data wait 90 % over the last 30 s" the badge read 52 % and then 81–98 % from call to call.
Kept apart from `status_file` because the status bar's read path must not load this (the
probe's rates need ``dataclasses`` and ``statistics``). Costs a deque of the window's
publications per probed trainer (30 at a 1 s poll).
"""

from __future__ import annotations

from collections import deque

from gpusat_tui.analysis.probe_reading.probe_rates import span_rates
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.verdicts.tracker import EVIDENCE_WINDOW_S
from gpusat_tui.model import Frame, ProbeSample

__all__ = ["WaitWindow"]


class WaitWindow:
    """Each probed trainer's publications over the span, and the worst one's data wait."""

    def __init__(self, window_s: float = EVIDENCE_WINDOW_S, th: Thresholds | None = None) -> None:
        self.window_s = window_s
        self.max_age_s = (th or Thresholds()).probe_max_age_s
        self._pubs: dict[int, deque[tuple[float, ProbeSample]]] = {}

    def update(self, frame: Frame, since: float | None) -> float | None:
        """Fold in ``frame``; the worst measured data wait, percent, over the polls since
        ``since`` (the kind's start) and `window_s` at most; None where no trainer's wait is
        measured (no probe, no batch yet, a probe that says its wait is not measured)."""
        start = frame.t - self.window_s if since is None else max(since, frame.t - self.window_s)
        live = {p.pid for p in frame.probes}
        for pid in [pid for pid in self._pubs if pid not in live]:
            del self._pubs[pid]
        waits: list[float] = []
        for probe in frame.probes:
            pubs = self._pubs.setdefault(probe.pid, deque())
            pubs.append((frame.t, probe))
            while pubs and pubs[0][0] < start:
                pubs.popleft()
            if probe.batches <= 0 or probe.data_wait_note:
                continue
            fresh = [p for _, p in pubs if p.age_s is None or p.age_s <= self.max_age_s]
            wait = span_rates(fresh).wait_pct if fresh else None
            if wait is not None:
                waits.append(wait)
        return max(waits) if waits else None
