"""How the host evidence is written in ``why`` lines: the workers' CPU and the host's load.

Beside the evidence it writes, so the shared formatting (`wording`) needs no evidence of its own.
"""

from __future__ import annotations

from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
from gpusat_tui.analysis.wording import pct, plural

__all__ = ["host_line", "worker_line"]


def worker_line(ev: HostEvidence) -> str:
    if not ev.n_workers:
        return "no DataLoader workers seen"
    if ev.worker_cpu is None:
        return f"{plural(ev.n_workers, 'worker')}, CPU not readable"
    if ev.n_workers == 1:
        return f"1 worker at {pct(ev.worker_cpu)} CPU"
    return (
        f"{plural(ev.n_workers, 'worker')} at {pct(ev.worker_cpu)} CPU each "
        f"({pct(ev.worker_sum or 0.0)} together)"
    )


def host_line(ev: HostEvidence) -> str | None:
    parts = []
    if ev.cpu_count:
        parts.append(f"{ev.cpu_count} cores")
    if ev.host_cpu is not None:
        parts.append(f"host CPU {pct(ev.host_cpu)}")
    if ev.iowait is not None:
        parts.append(f"iowait {pct(ev.iowait)}")
    return ", ".join(parts) if parts else None
