"""Fake Intel Gaudi ``hl-smi`` output in the real format.

``render``: plain ``hl-smi`` in the 1.22.1 layout of
samples/smi/gaudi/hl-smi-8xHL225-1.22.1-P0-UncorEvents-2.txt (79 columns, cells 31/22/22 wide,
``88W /  600W``, ``768MiB /  98304MiB``, memory % as the last cell, a Compute Processes box with
an ``N/A`` row per idle AIP). ``render_query``: ``-Q ... -f csv,nounits`` with its header, like
samples/smi/gaudi/hl-smi-query-aip-csv-nounits-8xHL205-1.18.0.txt.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusat_tui.collectors.hl_smi import QUERY_FIELDS, SPECS
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import NA, by_query_name, respond, whole

RULE = "|" + "-" * 31 + "+" + "-" * 22 + "+" + "-" * 22 + "+"


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """Plain ``hl-smi`` for these cards."""
    lines = [
        "+" + "-" * 77 + "+",
        "| HL-SMI Version:                              hl-1.22.1-fw-61.4.2.1          |",
        "| Driver Version:                                     1.22.1-97ec1a4          |",
        "| Nic Driver Version:                                 1.22.1-97ec1a4          |",
        RULE,
        "| AIP  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncor-Events|",
        "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | AIP-Util  Compute M. |",
        "|" + "=" * 31 + "+" + "=" * 22 + "+" + "=" * 22 + "|",
    ]
    for c in cards:
        power = f"{whole(c.power_w, 'W')} / {whole(c.power_cap_w, 'W')}"
        mem = f"{whole(c.mem_used_mib, 'MiB')} / {whole(c.mem_total_mib, 'MiB')}"
        pct = (NA if c.mem_used_mib is None or not c.mem_total_mib
               else f"{round(100 * c.mem_used_mib / c.mem_total_mib)}%")
        bus = f"0000:{0x33 + c.index:02x}:00.0"
        lines.append(f"| {c.index:>3}  {c.name[:16]:<16}    N/A  | {bus}     N/A "
                     f"|                   0  |")
        lines.append(f"| N/A  {whole(c.temp_c, 'C'):>4}   P0 {power:>12}  | {mem:>20} "
                     f"| {whole(c.util_pct, '%'):>6}  {pct:>12} |")
        lines.append(RULE)
    lines += [
        "| Compute Processes:                                               AIP Memory |",
        "|  AIP       PID   Type   Process name                             Usage      |",
        "|" + "=" * 77 + "|",
    ]
    for c in cards:
        procs = [p for p in processes if p.card_index == c.index]
        if not procs:
            lines.append(f"| {c.index:>3}        N/A   N/A    N/A" + " " * 38 + "N/A        |")
        for p in procs:
            lines.append(f"| {c.index:>3}  {p.pid:>10}     C   {p.name[:15]:<39}"
                         f"{whole(p.mem_mib, 'MiB'):<11}|")
    lines.append("+" + "=" * 77 + "+")
    return "\n".join(lines) + "\n"


def render_query(cards: Sequence[FakeCard]) -> str:
    """``hl-smi -Q <QUERY_FIELDS> -f csv,nounits``: a header with units, bare values."""
    units = {"memory.total": " [MiB]", "memory.used": " [MiB]", "power.draw": " [W]",
             "power.max": " [W]", "temperature.aip": " [C]", "utilization.aip": " [%]"}
    out = [", ".join(f + units.get(f, "") for f in QUERY_FIELDS)]
    for c in cards:
        out.append(", ".join([
            str(c.index), f"01P4-HL3090A0-18-FAKE{c.index:02d}-00-00-00", c.name,
            whole(c.mem_total_mib), whole(c.mem_used_mib), whole(c.power_w),
            whole(c.power_cap_w), whole(c.temp_c), whole(c.util_pct),
        ]))
    return "\n".join(out) + "\n"


def render_for_args(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """The table for no args, the CSV for the ``-Q`` query, else a usage complaint."""
    views = by_query_name(SPECS[0], {
        "default": lambda: render(cards, processes),
        "query": lambda: render_query(cards),
    })
    return respond(args, views, "hl-smi: unrecognized arguments\nusage: hl-smi [-h] ...\n")
