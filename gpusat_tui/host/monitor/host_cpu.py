"""The host's CPU % and iowait % over one tick, from the totals a reader gives (``/proc/stat``
or psutil's ``cpu_times``).

psutil.cpu_percent(None) keeps one module-wide baseline that any other caller in the process
would reset; our own keeps the interval exactly one tick. The first tick has no figures.
"""

from __future__ import annotations

from gpusat_tui.model import HostSample

__all__ = ["HostCpuMeter"]


class HostCpuMeter:
    """Host CPU % and iowait % since the previous reading, from its own baseline."""

    def __init__(self, cpu_count: int | None) -> None:
        #: Logical CPUs, put on every `HostSample` (also one with no figures).
        self.cpu_count = cpu_count
        self._last: tuple[float, float, float | None] | None = None

    def sample(self, totals: tuple[float, float, float | None]) -> HostSample:
        """The figures from the previous ``totals`` (total, idle, iowait CPU seconds) to
        these; these become the baseline."""
        total, idle, iowait = totals
        last = self._last
        self._last = (total, idle, iowait)
        if last is None:
            return HostSample(cpu_count=self.cpu_count)
        d_total = total - last[0]
        if d_total <= 0:
            return HostSample(cpu_count=self.cpu_count)
        busy = d_total - (idle - last[1])
        io_pct = None
        if iowait is not None and last[2] is not None:
            io_pct = max(0.0, min(100.0, 100.0 * (iowait - last[2]) / d_total))
        return HostSample(
            cpu_pct=max(0.0, min(100.0, 100.0 * busy / d_total)),
            iowait_pct=io_pct,
            cpu_count=self.cpu_count,
        )
