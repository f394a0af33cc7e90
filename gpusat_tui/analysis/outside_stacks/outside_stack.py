"""Where a trainer with no probe stands, from a stack dump read from outside (``py-spy dump``).

The same place a probed trainer's sampler names (`probe.phases` decides the phase from the
frames' modules and functions; the framework function that decided it and the innermost line
of the user's code say where), so that a stalled job reads alike with or without a probe:
"rank 0 has waited 42 s in torch.distributed.all_reduce (train.py:88)". What one dump costs
against the probe's sampling: it is one moment. Two dumps of a quiet trainer, a stall time
apart, with the same main-thread stack and the main thread using no CPU between (`unchanged`),
say the thread stood still whatever its other threads did (a heartbeat writing a log is not
progress); one dump alone says where, and the stall's length (no batch and nothing moving on
the host side) how long. Pure.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from gpusat_tui.collectors.py_spy import is_user_frame
from gpusat_tui.model import CodeLine, StackDump
from gpusat_tui.probe.phases import frame_phase, stack_phase

__all__ = ["DumpPlace", "OutsideStack", "dump_place", "unchanged"]


@dataclass(frozen=True, slots=True)
class DumpPlace:
    """Where a dumped stack stands: its phase, the framework function that decided it
    ("torch.distributed.all_reduce"), its innermost user line ("train.py:88") and 8 hex
    digits naming the stack (equal on ranks stopped at the same place)."""

    phase: str
    where: str | None
    line: str | None
    sig: str


def dump_place(frames: Sequence[CodeLine]) -> DumpPlace | None:
    """The place of a stack given outermost first (`StackDump.frames`); None without frames."""
    if not frames:
        return None
    inner = list(reversed(frames))
    phase, at = stack_phase([frame_phase(f.module, f.function.rsplit(".", 1)[-1])
                             for f in inner])
    where = None
    if at >= 0:
        decided = inner[at]
        module = ".".join(decided.module.split(".")[:2])
        where = f"{module}.{decided.function}" if module else decided.function
    user = next((f for f in inner if is_user_frame(f)), None)
    line = f"{os.path.basename(user.file)}:{user.line}" if user is not None else None
    text = "|".join(f"{f.module}:{f.function.rsplit('.', 1)[-1]}:{f.line}" for f in inner)
    return DumpPlace(phase, where[:120] if where else None, line,
                     f"{zlib.crc32(text.encode()):08x}")


def unchanged(before: StackDump, after: StackDump, cpu_pct: float) -> bool:
    """Whether the main thread stood still from ``before`` to ``after`` (two dumps of one
    process): both read, the same stack, and its own CPU over the gap at most ``cpu_pct`` of
    one core. Without the thread's CPU figures nothing is claimed (a loop that returns to the
    same line at each dump would look the same)."""
    if before.error is not None or after.error is not None or after.t <= before.t:
        return False
    if before.main_cpu_s is None or after.main_cpu_s is None:
        return False
    first, second = dump_place(before.frames), dump_place(after.frames)
    if first is None or second is None or first.sig != second.sig:
        return False
    used = after.main_cpu_s - before.main_cpu_s
    return used >= 0.0 and 100.0 * used / (after.t - before.t) <= cpu_pct


@dataclass(frozen=True, slots=True)
class OutsideStack:
    """One trainer's outside dump as a stall shows it: the fields `probe_words.frozen_lines`
    reads (as a probe's), the tool and, for a dump that failed, why."""

    pid: int
    rank: int | None
    tool: str
    #: Seconds between the dump and the newest poll of the stall.
    age_s: float
    #: How long nothing has moved: the stall's length (one dump cannot say more).
    stack_still_s: float | None = None
    stack_phase: str | None = None
    stack_where: str | None = None
    stack_line: str | None = None
    stack_sig: str | None = None
    #: `StackDump.error` and its message (uncleaned).
    error: str | None = None
    message: str | None = None

    @classmethod
    def of(cls, pid: int, rank: int | None, dump: StackDump, now: float) -> OutsideStack:
        place = dump_place(dump.frames) if dump.error is None else None
        error = dump.error or (None if place is not None else "failed")
        return cls(
            pid=pid, rank=rank, tool=dump.tool, age_s=max(0.0, now - dump.t),
            stack_phase=place.phase if place else None,
            stack_where=place.where if place else None,
            stack_line=place.line if place else None,
            stack_sig=place.sig if place else None,
            error=error, message=dump.message,
        )
