"""What a stalled verdict says of the stacks read from outside (py-spy), and of none read.

Where each trainer stands reads as a probe's would ("rank 0 has waited 42 s in
torch.distributed.all_reduce (train.py:88)", `probe_words.frozen_lines`), labelled as sampled
from outside. A dump that could not be taken says why and what allows it: the tool is not
installed (the extra that brings it), or the kernel refused to let it read the process
(ptrace: Yama's ``ptrace_scope``, a container without ``CAP_SYS_PTRACE``). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpusat_tui.analysis.facts import FrameFacts
    from gpusat_tui.model import StackDump

from gpusat_tui.analysis.outside_stacks.outside_stack import OutsideStack, dump_place
from gpusat_tui.analysis.probe_reading.probe_words import frozen_lines, place_words
from gpusat_tui.text import clean

__all__ = ["PYSPY_EXTRA", "busy_lines", "dump_row", "outside_words", "tied_dumps"]

#: How to install py-spy with gpusat-tui (the optional extra in pyproject.toml).
PYSPY_EXTRA = "pip install 'gpusat-tui[pyspy]'"


def _ago(seconds: float) -> str:
    return "just now" if seconds < 1.5 else f"{seconds:.0f} s ago"


def _pids(stacks: Sequence[OutsideStack]) -> str:
    return ", ".join(str(s.pid) for s in stacks[:4]) + (", ..." if len(stacks) > 4 else "")


def outside_words(stacks: Sequence[OutsideStack]) -> tuple[list[str], list[str]]:
    """``(why lines, advice lines)`` for the outside dumps of a stall's trainers."""
    placed = [s for s in stacks if s.error is None]
    why: list[str] = []
    advice: list[str] = []
    if placed:
        located = frozen_lines(placed)
        for i, line in enumerate(located[:len(placed)]):
            s = placed[i]
            located[i] = (f"{line} (sampled from outside by {clean(s.tool, 20)} "
                          f"{_ago(s.age_s)}: no probe in this trainer)")
        why += located
    missing = [s for s in stacks if s.error == "missing"]
    denied = [s for s in stacks if s.error == "denied"]
    failed = [s for s in stacks if s.error == "failed"]
    if missing and not placed:
        advice.append(
            f"Install py-spy to see where the trainer waits without restarting it: "
            f"{PYSPY_EXTRA} (the dashboard then reads its stack from outside when it stalls); "
            "or start the job under gpusat-tui run, whose probe samples it all the time"
        )
    if denied:
        tool = clean(denied[0].tool, 20)
        why.append(f"{tool} could not read the stack of PID {_pids(denied)}: the kernel refused "
                   f"ptrace ({clean(denied[0].message or 'permission denied', 160)})")
        advice.append(
            f"Let {tool} read the trainer: run gpusat-tui as the trainer's user or as root; "
            "where Yama restricts ptrace, sysctl kernel.yama.ptrace_scope=0 (as root; 1 allows "
            "only a process's parents); in a container, start it with --cap-add SYS_PTRACE "
            "(Kubernetes: securityContext.capabilities.add: [SYS_PTRACE])"
        )
    if failed:
        why.append(f"{clean(failed[0].tool, 20)} could not read the stack of PID "
                   f"{_pids(failed)}: {clean(failed[0].message or 'it failed', 160)}")
    return why, advice


def tied_dumps(facts: Sequence[FrameFacts], card_id: str) -> list[OutsideStack]:
    """The outside dumps of the trainers that drive ``card_id`` at the window's newest poll
    (listed on it; the only trainer where none is listed on a card), taken within the window."""
    if not facts:
        return []
    newest, start = facts[-1], facts[0].t
    trainers = [p for p in newest.procs if p.is_trainer]
    tied = [p for p in trainers if card_id in p.card_ids]
    if not tied and len(trainers) == 1 and not trainers[0].card_ids:
        tied = trainers
    out = []
    for p in tied:
        dump = p.dump
        if (dump is None or not isinstance(p.pid, int) or newest.t is None
                or (start is not None and dump.t < start)):
            continue
        out.append(OutsideStack.of(p.pid, p.rank, dump, newest.t))
    return out


def busy_lines(stacks: Sequence[OutsideStack]) -> list[str]:
    """Where pegged trainers with no probe stood when read from outside: "the trainer (PID 7)
    was in json.dumps (train.py:40) when sampled from outside by py-spy 12 s ago"."""
    lines = []
    for s in stacks:
        if s.error is not None:
            continue
        who = f"rank {s.rank}" if s.rank is not None else f"the trainer (PID {s.pid})"
        lines.append(f"{who} was {place_words(s.stack_where, s.stack_line)} when sampled from "
                     f"outside by {clean(s.tool, 20)} {_ago(s.age_s)} (one dump: where it "
                     "stood then, not a share of its time)")
    return lines


def dump_row(dump: StackDump) -> str | None:
    """The process panel's line under a trainer with no probe: where its newest outside dump
    found it ("sampled from outside by py-spy: in torch.distributed.all_reduce
    (train.py:88)"), or that ptrace was refused; None for no stack (py-spy missing: the
    stalled verdict's advice says what to install)."""
    tool = clean(dump.tool, 20)
    if dump.error == "denied":
        return f"{tool} could not read its stack: ptrace refused (see the verdict's advice)"
    place = dump_place(dump.frames) if dump.error is None else None
    if place is None:
        return None
    return f"sampled from outside by {tool}: {place_words(place.where, place.line)}"
