"""Fake Google ``tpu-info`` output in the real format.

``render``: the Markdown-table layout of
samples/smi/tpu/tpu-info-v6e-chips-0-1-4-5-duty100-tensorcore8-warning-panel.txt (TPU Chips, TPU
Runtime Utilization with HBM in GiB and the duty cycle, TensorCore Utilization). tpu-info shows
no power or temperature, so neither is rendered. Memory is printed in GiB with two decimals, as
the tool does: a round trip keeps MiB to within 0.01 GiB.
"""

from __future__ import annotations

from collections.abc import Sequence

from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import bare_command_only


def _gib(mib: float | None) -> str:
    return "N/A" if mib is None else f"{mib / 1024:.2f} GiB"


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """Plain ``tpu-info`` for these chips (a PID per chip from ``processes``, else none)."""
    lines = ["TPU Chips", "", "| Chip        | Type         | Devices | PID     |",
             "|-------------|--------------|---------|---------|"]
    for c in cards:
        pid = next((str(p.pid) for p in processes if p.card_index == c.index), "None")
        lines.append(f"| /dev/vfio/{c.index} | {c.name[:12]:<12} | 1       | {pid:<7} |")
    lines += ["", "TPU Runtime Utilization", "",
              "| Chip | HBM Usage (GiB)        | Duty cycle |",
              "|------|------------------------|------------|"]
    for c in cards:
        util = "N/A" if c.util_pct is None else f"{c.util_pct:.2f}%"
        usage = f"{_gib(c.mem_used_mib)} / {_gib(c.mem_total_mib)}"
        lines.append(f"| {c.index:<4} | {usage:<22} | {util:>10} |")
    lines += ["", "TensorCore Utilization", "", "| Core ID | TensorCore Utilization |",
              "|---------|------------------------|"]
    for c in cards:
        lines.append(f"| {c.index:<7} | {c.extras.get('tensorcore_pct', 0.0):.2f}%" + " " * 17
                     + "|")
    return "\n".join(lines) + "\n"


#: Plain ``tpu-info`` for no args; anything else gets a usage complaint.
render_for_args = bare_command_only(
    render, "usage: tpu-info [-h] [--streaming] [--rate RATE]\ntpu-info: error: unrecognized\n"
)
