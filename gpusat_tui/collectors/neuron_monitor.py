"""AWS Neuron (Inferentia / Trainium) through ``neuron-monitor``: a JSON report per period.

``neuron-monitor -c CONFIG`` streams one JSON document per line; without a configuration it
reports every 5 s, so the live source hands it one (`CONFIG`) asking for the poll interval
(at least 1 s) and only the metric groups read here.

**One card per NeuronCore a rank uses.** A training rank drives one or more NeuronCores, not
a whole Neuron device, and neuron-monitor reports utilisation per NeuronCore per runtime
(``neuron_runtime_data[].report.neuroncore_counters.neuroncores_in_use``). So the cards are the
NeuronCores some Neuron runtime uses, indexed by their global NeuronCore id; idle cores that
no process has claimed are not listed (`neuron_ls` lists them all when it is the tool in use).
The runtime's pid is listed as the process on each of its own cores: those it holds memory on,
or every core it lists when it gives no per-core memory.

**Several runtimes.** Every runtime lists every NeuronCore of the devices it sees, with zeros
for the cores it does not use (the real inf1 capture: four runtimes, one core each, each listing
all four). A core's figures are the sum over the runtimes that report it (utilisation,
``effective_flops``, memory): a runtime's zero row for a core it does not use adds nothing.

Figures: ``neuroncore_utilization`` is the utilisation. A runtime's memory on a core is its
``usage_breakdown.neuroncore_memory_usage`` for that core summed over the categories (the inf1
capture has it); else, for a runtime listing a single core, the runtime's device memory
(``neuron_runtime_used_bytes.neuron_device``, ``device`` in the inf2 capture). A core's memory
is unknown when a runtime that lists it gives neither, with those runtimes' totals in
``extras["runtime_device_mib"]`` (splitting them across cores would invent figures). Memory
total per core is ``neuron_device_memory_size / neuroncore_per_device_count``. neuron-monitor
prints no power and no temperature: both are None. Parsed from two real (trimmed) reports; the
stream and the configuration file are untested against a real neuron-monitor.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gpusat_tui.collectors.base import Stream, ToolReading, ToolSpec, strip_ansi
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

TOOL = "neuron-monitor"
SEARCH_DIRS = ("/opt/aws/neuron/bin", "/usr/bin", "/usr/local/bin")
_MIB = 1024.0 * 1024.0

#: What neuron-monitor is asked to report, every ``{interval_s}`` seconds.
CONFIG = json.dumps({
    "period": "{interval_s}s",
    "neuron_runtimes": [{
        "tag_filter": ".*",
        "metrics": [{"type": "neuroncore_counters"}, {"type": "memory_used"}],
    }],
    "system_metrics": [],
})


def _last_report(text: str) -> dict[str, Any]:
    """The newest JSON report in ``text`` (one per line; a torn or foreign line is skipped)."""
    problem = "no JSON report"
    for line in reversed(strip_ansi(text).splitlines()):
        line = line.strip()
        if not line:
            continue
        try:
            report = json.loads(line)
        except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            problem = f"not JSON ({reason}): {line[:60]!r}"
            continue
        if isinstance(report, dict) and (
            "neuron_runtime_data" in report or "neuron_hardware_info" in report
        ):
            return report
        problem = f"a JSON document without neuron_runtime_data: {line[:60]!r}"
    raise ParseError(f"neuron-monitor: {problem}")


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _core_memory(breakdown: object, core: str) -> float | None:
    """Bytes a runtime holds on ``core`` per the documented usage breakdown, or None."""
    if not isinstance(breakdown, dict):
        return None
    per_core = breakdown.get("neuroncore_memory_usage")
    if not isinstance(per_core, dict) or not isinstance(per_core.get(core), dict):
        return None
    values = [_number(v) for v in per_core[core].values()]
    known = [v for v in values if v is not None]
    return sum(known) if known else None


@dataclass
class _CoreSum:
    """One NeuronCore's figures summed over the runtimes that report it."""

    util: float | None = None
    flops: float | None = None
    known_bytes: float = 0.0
    #: Runtimes that list the core without a per-core memory figure, and their device totals.
    missing: int = 0
    unsplit: float | None = None

    def add(self, util: float | None, flops: float | None, core_bytes: float | None,
            runtime_bytes: float | None) -> None:
        if util is not None:
            self.util = (self.util or 0.0) + util
        if flops is not None:
            self.flops = (self.flops or 0.0) + flops
        if core_bytes is not None:
            self.known_bytes += core_bytes
            return
        self.missing += 1
        if runtime_bytes is not None:
            self.unsplit = (self.unsplit or 0.0) + runtime_bytes

    def memory(self) -> float | None:
        """Bytes on the core, when every runtime that lists it said how much it holds there."""
        return None if self.missing else self.known_bytes


def parse_neuron_monitor(text: str) -> ToolReading:
    """One neuron-monitor report (the newest line of ``text``) -> one card per NeuronCore used."""
    report = _last_report(text)
    hw = report.get("neuron_hardware_info")
    hw = hw if isinstance(hw, dict) else {}
    device_bytes = _number(hw.get("neuron_device_memory_size"))
    per_device = _number(hw.get("neuroncore_per_device_count"))
    core_total = device_bytes / per_device / _MIB if device_bytes and per_device else None
    device_type, core_version = hw.get("neuron_device_type"), hw.get("neuroncore_version")
    name = str(device_type) if isinstance(device_type, str) and device_type else None
    if name and isinstance(core_version, str) and core_version:
        name = f"{name} NeuronCore-{core_version}"
    runtimes = report.get("neuron_runtime_data")
    runtimes = runtimes if isinstance(runtimes, list) else []
    cores: dict[int, _CoreSum] = {}
    processes: list[CardProcess] = []
    notes: list[str] = []
    for runtime in runtimes:
        if not isinstance(runtime, dict):
            continue
        pid = runtime.get("pid")
        body = runtime.get("report")
        if isinstance(runtime.get("error"), str) and runtime["error"]:
            notes.append(f"neuron-monitor: runtime {pid}: {strip_ansi(runtime['error'])[:160]}")
        if not isinstance(body, dict):
            continue
        counters = body.get("neuroncore_counters")
        in_use = counters.get("neuroncores_in_use") if isinstance(counters, dict) else None
        if not isinstance(in_use, dict):
            continue
        memory = body.get("memory_used")
        used = memory.get("neuron_runtime_used_bytes") if isinstance(memory, dict) else None
        used = used if isinstance(used, dict) else {}
        runtime_device = _number(used.get("neuron_device", used.get("device")))
        listed = [c for c in in_use if c.isdigit()]
        per_core = {c: _core_memory(used.get("usage_breakdown"), c) for c in listed}
        if len(listed) == 1 and per_core[listed[0]] is None:
            per_core[listed[0]] = runtime_device
        # The runtime's own cores: those it holds memory on (every runtime lists every core,
        # with zeros for the others); all it lists when it says nothing per core.
        own = [c for c in listed if (per_core[c] or 0) > 0] or listed
        for core in listed:
            figures = in_use[core] if isinstance(in_use[core], dict) else {}
            total = cores.setdefault(int(core), _CoreSum())
            total.add(_number(figures.get("neuroncore_utilization")),
                      _number(figures.get("effective_flops")), per_core[core], runtime_device)
            if core in own and isinstance(pid, int) and not isinstance(pid, bool):
                processes.append(CardProcess(pid=pid, card_id=f"neuron:{int(core)}"))
    cards: dict[int, CardReading] = {}
    for index, total in cores.items():
        extras: dict[str, float | str | None] = {}
        if per_device:
            extras["device"] = float(index // int(per_device))
        if total.flops is not None:
            extras["effective_flops"] = total.flops
        mem = total.memory()
        if mem is None and total.unsplit is not None:
            extras["runtime_device_mib"] = total.unsplit / _MIB
        cards[index] = CardReading(
            vendor="neuron", index=index, name=name, util_pct=total.util,
            mem_used_mib=mem / _MIB if mem is not None else None, mem_total_mib=core_total,
            extras=extras, tool=TOOL,
        )
    processes.sort(key=lambda p: (p.card_id.partition(":")[2].zfill(6), p.pid))
    if not cards:
        notes.append(
            "neuron-monitor: no Neuron runtime is running (NeuronCores are listed while a "
            "process uses them)"
        )
    return ToolReading(
        cards=[cards[i] for i in sorted(cards)], processes=processes, notes=notes
    )


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        tool=TOOL,
        vendor="neuron",
        names=("neuron-monitor",),
        search_dirs=SEARCH_DIRS,
        stream=Stream(
            name="-c",
            args=("-c", "{config}"),
            parse=parse_neuron_monitor,
            config=CONFIG,
            min_period_s=1.0,
        ),
        group="neuron",
        priority=0,
    ),
)
