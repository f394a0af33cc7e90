"""How figures are written in ``why`` and ``advice``: shared formatting and sentences.

People read these lines to decide what to change, so the same figure is always written the
same way (``pct``, ``gib``, ``plural``) and the sentences about host evidence live in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpusat_tui.analysis.evidence import HostEvidence

__all__ = [
    "ALLOC_CONF_VARS",
    "gib",
    "host_line",
    "pct",
    "plural",
    "util_nature",
    "worker_line",
]

#: The PyTorch caching-allocator variable of each vendor's PyTorch build.
ALLOC_CONF_VARS: dict[str, str] = {
    "nvidia": "PYTORCH_CUDA_ALLOC_CONF",
    "amd": "PYTORCH_HIP_ALLOC_CONF",
    "hygon": "PYTORCH_HIP_ALLOC_CONF",
    "ascend": "PYTORCH_NPU_ALLOC_CONF",
    "cambricon": "PYTORCH_MLU_ALLOC_CONF",
    "mthreads": "PYTORCH_MUSA_ALLOC_CONF",
}


def util_nature(vendor: str) -> str:
    """What the vendor's utilisation figure measures, for ``why`` lines."""
    if vendor == "ascend":
        return "the share of time the AI (cube) cores were busy, vector work not counted"
    return "a duty cycle (the share of time any kernel ran: one small kernel counts as busy)"


# --- formatting --------------------------------------------------------------------------------


def pct(value: float) -> str:
    return f"{value:.0f} %"


def gib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


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
