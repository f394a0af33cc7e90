"""Fake ``neuron-ls`` tables (template: the trn1.2xlarge sample, with ``--show-all-procs``).

Cards are NeuronCores, ``cores`` per device (2): a device row per pair, its memory the sum of its
cores' totals. `render_for_args`: ``neuron-ls`` and ``neuron-ls --show-all-procs``.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusat_tui.collectors.neuron_ls import SPECS
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import by_query_name, respond

CORES = 2


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = (),
           with_procs: bool = False) -> str:
    rule = "+--------+--------+----------+--------+--------------+" + (
        "--------+----------------------+" if with_procs else "")
    head1 = "| NEURON | NEURON |  NEURON  | NEURON |     PCI      |" + (
        "  PID   |       COMMAND        |" if with_procs else "")
    head2 = "| DEVICE | CORES  | CORE IDS | MEMORY |     BDF      |" + (
        "        |                      |" if with_procs else "")
    lines = ["instance-type: trn1.2xlarge", "instance-id: i-0bea223b1afb7e159",
             rule, head1, head2, rule]
    devices = sorted({c.index // CORES for c in cards})
    for device in devices:
        mine = [c for c in cards if c.index // CORES == device]
        gib = sum(c.mem_total_mib or 0 for c in mine) / 1024
        first = device * CORES
        procs = [p for p in processes if p.card_index // CORES == device] if with_procs else []
        cells = (f"| {device:<6} | {CORES:<6} | {f'{first}-{first + CORES - 1}':<8} | "
                 f"{f'{gib:.0f} GB':<6} | {f'0000:00:{0x1e - device:02x}.0':<12} |")
        if with_procs:
            proc = procs[0] if procs else None
            cells += (f" {proc.pid if proc else 'NA':<6} | {proc.name if proc else 'NA':<20} |")
        lines.append(cells)
        for extra in procs[1:]:
            lines.append("|        |        |          |        |              |"
                         f" {extra.pid:<6} | {extra.name:<20} |")
    lines.append(rule)
    return "\n".join(lines) + "\n"


def render_for_args(args: Sequence[str], cards: Sequence[FakeCard],
                    processes: Sequence[FakeProcess] = ()) -> str:
    views = by_query_name(SPECS[0], {
        "list": lambda: render(cards, processes),
        "show-all-procs": lambda: render(cards, processes, with_procs=True),
    })
    return respond(args, views, "neuron-ls: error: unrecognized arguments\n")
