"""neuron-monitor with several Neuron runtimes: a NeuronCore's figures are summed over them.

Every runtime lists every NeuronCore, with zeros for the cores it does not use: the real
inf1.xlarge report here has four runtimes, one per core. Taking the first runtime's row per
core read cores 1-3 as idle and empty.
"""

from __future__ import annotations

import json
from typing import Any

from gpusat_tui.collectors.neuron_monitor import parse_neuron_monitor
from tests.collector_helpers import process_rows, read_sample, samples_dir

SAMPLES = samples_dir("neuron")
INF1 = "neuron-monitor-inf1.xlarge-4runtimes-1core-each-trimmed.json.txt"
MIB = 1048576.0
#: Each runtime's one core: constants + model code + runtime memory, from the capture.
CORE_BYTES = 61766864 + 1295008 + 43216


def test_inf1_four_runtimes_one_core_each() -> None:
    reading = parse_neuron_monitor(read_sample(SAMPLES, INF1))
    assert [(c.index, c.util_pct, c.mem_used_mib, c.mem_total_mib) for c in reading.cards] == [
        (0, 2.926414908153532, CORE_BYTES / MIB, None),
        (1, 3.0803098003189486, CORE_BYTES / MIB, None),
        (2, 2.517060487060293, CORE_BYTES / MIB, None),
        (3, 2.488352186334406, CORE_BYTES / MIB, None),
    ]
    assert round(CORE_BYTES / MIB, 1) == 60.2
    # Each runtime is the process on its own core only (it holds memory there).
    assert process_rows(reading.processes) == [
        (20843, "neuron:0", None, None), (21050, "neuron:1", None, None),
        (21411, "neuron:2", None, None), (21741, "neuron:3", None, None),
    ]
    assert [c.extras for c in reading.cards] == [{"device": 0.0}] * 4
    assert reading.notes == []


def _runtime(pid: int, util: dict[str, float], core_bytes: dict[str, int] | None,
             device: int) -> dict[str, Any]:
    used: dict[str, Any] = {"host": 1, "neuron_device": device}
    if core_bytes is not None:
        used["usage_breakdown"] = {"neuroncore_memory_usage": {
            c: {"constants": b, "tensors": 0} for c, b in core_bytes.items()
        }}
    return {"pid": pid, "report": {
        "neuroncore_counters": {"neuroncores_in_use": {
            c: {"neuroncore_utilization": u, "effective_flops": 10} for c, u in util.items()
        }},
        "memory_used": {"neuron_runtime_used_bytes": used},
    }}


def _report(*runtimes: dict[str, Any]) -> str:
    base = json.loads(read_sample(SAMPLES, INF1))
    base["neuron_runtime_data"] = list(runtimes)
    return json.dumps(base)


def test_two_runtimes_on_one_core_add_up() -> None:
    reading = parse_neuron_monitor(_report(
        _runtime(1, {"0": 30.0, "1": 0.0}, {"0": 4 * 1048576, "1": 0}, 4 * 1048576),
        _runtime(2, {"0": 25.5, "1": 0.0}, {"0": 1048576, "1": 0}, 1048576),
    ))
    assert [(c.index, c.util_pct, c.mem_used_mib, c.extras.get("effective_flops"))
            for c in reading.cards] == [(0, 55.5, 5.0, 20.0), (1, 0.0, 0.0, 20.0)]
    assert process_rows(reading.processes) == [(1, "neuron:0", None, None),
                                               (2, "neuron:0", None, None)]


def test_a_runtime_without_per_core_memory_leaves_the_core_unknown() -> None:
    """One runtime says what it holds per core, the other only its total over two cores: the
    core's memory is not known (the total is not split), and the totals are kept in extras."""
    reading = parse_neuron_monitor(_report(
        _runtime(1, {"0": 10.0, "1": 0.0}, {"0": 1048576, "1": 0}, 1048576),
        _runtime(2, {"0": 0.0, "1": 20.0}, None, 3 * 1048576),
    ))
    assert [(c.index, c.util_pct, c.mem_used_mib) for c in reading.cards] == [
        (0, 10.0, None), (1, 20.0, None),
    ]
    assert [c.extras.get("runtime_device_mib") for c in reading.cards] == [3.0, 3.0]
    # The runtime that says nothing per core is listed on every core it lists.
    assert process_rows(reading.processes) == [(1, "neuron:0", None, None),
                                               (2, "neuron:0", None, None),
                                               (2, "neuron:1", None, None)]
