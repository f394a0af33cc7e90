"""Fake ``neuron-monitor`` reports (template: the inf2.xlarge sample), one JSON line each.

`render_report(cards, processes)`: each process is one Neuron runtime on the NeuronCore of its
``card_index``; a card no process uses is not reported (neuron-monitor lists cores in use).
Memory per core goes in the documented ``usage_breakdown.neuroncore_memory_usage``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tests.fakes import FakeCard, FakeProcess

MIB = 1024 * 1024


def render_report(cards: Sequence[FakeCard], processes: Sequence[FakeProcess],
                  cores_per_device: int = 2) -> str:
    by_index = {c.index: c for c in cards}
    runtimes = []
    for proc in processes:
        card = by_index.get(proc.card_index)
        if card is None:
            continue
        core = str(card.index)
        used = int((card.mem_used_mib or 0) * MIB)
        runtimes.append({"pid": proc.pid, "neuron_runtime_tag": "", "error": "", "report": {
            "neuroncore_counters": {"period": 1.0, "neuroncores_in_use": {
                core: {"neuroncore_utilization": card.util_pct, "effective_flops": 0},
            }},
            "memory_used": {"period": 1.0, "neuron_runtime_used_bytes": {
                "host": 1166249984, "neuron_device": used,
                "usage_breakdown": {"neuroncore_memory_usage": {core: {"tensors": used}}},
            }},
        }})
    total = max((c.mem_total_mib or 0) for c in cards) if cards else 0
    report = {
        "neuron_runtime_data": runtimes,
        "neuron_hardware_info": {
            "neuron_device_count": max(1, len(cards) // cores_per_device),
            "neuroncore_per_device_count": cores_per_device,
            "neuron_device_memory_size": int(total * MIB * cores_per_device),
            "neuron_device_type": "trainium", "neuroncore_version": "v2",
        },
        "system_data": {},
    }
    return json.dumps(report, separators=(",", ":"))
