"""Vendor collectors, one module per tool, all the same shape (see `base`).

Each module defines ``SPECS: tuple[ToolSpec, ...]``. `all_specs()` returns them in the order
tools are tried: within a ``group`` (tools that see the same cards) by ``priority``.
"""

from __future__ import annotations

from importlib import import_module

from gpusat_tui.collectors.base import ToolSpec

#: Every collector module. Order only matters for display; groups decide precedence.
COLLECTOR_MODULES: tuple[str, ...] = (
    "nvml",
    "nvidia_smi",
    "hy_smi",
    "amd_smi",
    "rocm_smi",
    "npu_smi",
    "cnmon",
    "xpu_smi",
    "mthreads_gmi",
    "birensmi",
    "tegrastats",
    "neuron_monitor",
    "neuron_ls",
    "hl_smi",
    "ixsmi",
    "efsmi",
    "mx_smi",
    "intel_xpu_smi",
    "tpu_info",
    "tt_smi",
)


def all_specs() -> list[ToolSpec]:
    """All tool specs, sorted so that the preferred tool of each group comes first."""
    specs: list[ToolSpec] = []
    for name in COLLECTOR_MODULES:
        module = import_module(f"gpusat_tui.collectors.{name}")
        specs.extend(module.SPECS)
    return sorted(specs, key=lambda s: (s.group or s.tool, s.priority))
