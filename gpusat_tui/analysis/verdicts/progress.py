"""Whether a job makes progress: its own counters, read from outside, or its probe's batches.

A card that shows no work does not tell a hang from a pause: an evaluation whose workers wait on
a slow fetch, a checkpoint being written, a hung collective all read ``util 0`` with the memory
held and the processes near 0 % CPU. What tells them apart is whether anything moves: the
probe's batch counter where the job runs under ``gpusat-tui run``, else the counters the kernel
keeps for every process (`ProcessSample.rchar_per_s` and the rest: bytes and calls through
read/write, and the main threads' context switches). A worker asleep on a socket wakes for every
answer; a hung job's threads sleep on timeouts of seconds. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from gpusat_tui.analysis.facts import FrameFacts, ProcFacts
from gpusat_tui.analysis.thresholds import Thresholds

__all__ = ["Progress", "poll_progress", "probe_batches", "progress_lines", "rate_words"]


class Progress(NamedTuple):
    """The progress counters of some processes at one poll, summed (None: none read)."""

    io_bps: float | None
    syscalls: float | None
    #: The most wake-ups of one process (a job's count of workers must not make a hung job's
    #: rare timeouts add up to progress).
    switches: float | None

    @property
    def read(self) -> bool:
        """Whether any counter was read (Linux with /proc; never in older recordings)."""
        return self.io_bps is not None or self.switches is not None

    def marginal(self, th: Thresholds) -> bool:
        """Moving, but under 3x every line: one such poll may be a counting blip (a few
        wake-ups over a short poll), as one poll a little over the CPU line is."""
        return (
            (self.io_bps or 0.0) < 3 * th.progress_io_bps
            and (self.syscalls or 0.0) < 3 * th.progress_syscalls_per_s
            and (self.switches or 0.0) < 3 * th.progress_switches_per_s
        )

    def moving(self, th: Thresholds) -> bool | None:
        """Whether they show work; None when no counter was read."""
        if not self.read:
            return None
        return (
            (self.io_bps or 0.0) >= th.progress_io_bps
            or (self.syscalls or 0.0) >= th.progress_syscalls_per_s
            or (self.switches or 0.0) >= th.progress_switches_per_s
        )


def _total(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def poll_progress(procs: Sequence[ProcFacts]) -> Progress:
    """The summed counters of ``procs`` at one poll."""
    io = _total(
        (p.rchar or 0.0) + (p.wchar or 0.0) if p.has_counters else None for p in procs
    )
    switches = [p.switches for p in procs if p.switches is not None]
    return Progress(io, _total(p.syscalls for p in procs), max(switches) if switches else None)


def rate_words(bps: float) -> str:
    """``3.2 MiB/s``, ``48 KiB/s``, ``120 B/s``."""
    if bps >= 1024 * 1024:
        return f"{bps / (1024 * 1024):.1f} MiB/s"
    if bps >= 1024:
        return f"{bps / 1024:.0f} KiB/s"
    return f"{bps:.0f} B/s"


def progress_lines(p: Progress) -> str:
    """``12 KiB/s read/written, 4 read/write calls/s, up to 2 wake-ups/s a process``."""
    parts = []
    if p.io_bps is not None:
        parts.append(f"{rate_words(p.io_bps)} read/written")
    if p.syscalls is not None:
        parts.append(f"{p.syscalls:.0f} read/write calls/s")
    if p.switches is not None:
        parts.append(f"up to {p.switches:.0f} wake-ups/s a process")
    return ", ".join(parts)


def probe_batches(
    ff: FrameFacts, card_id: str, trainer_pids: Iterable[object], th: Thresholds
) -> float | None:
    """Batches/s the fresh probes of the trainers driving ``card_id`` counted at this poll
    (tied by the card, or by the trainer's PID); None when no fresh probe says."""
    pids = set(trainer_pids)
    rates = [
        p.batches_per_s for p in ff.probes
        if (p.card_id == card_id or p.pid in pids)
        and (p.age_s is None or p.age_s <= th.probe_max_age_s)
        and p.batches_per_s is not None
    ]
    return sum(rates) if rates else None
