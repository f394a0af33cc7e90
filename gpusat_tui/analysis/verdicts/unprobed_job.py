"""The job's verdict when no accelerator tool answers and its trainers have no probe.

A trainer the process census follows (with no tool: one given with ``--pid``) but started
without ``gpusat-tui run`` has neither the card's figures nor a measured data wait: what it
does between batches cannot be told, so a busy one is never called ``starving`` or
``host-bound`` from its CPU alone, and the verdict stays ``unknown`` and says what is missing
(the probe, the vendor's tool), with where its main thread stood when sampled from outside
(py-spy: `sources.polling.outside_stacks` dumps a quiet or pegged trainer).

``stalled`` is claimed on one rule only, the one that needs no card: two outside dumps a stall
time apart show every trainer's main thread on the same stack, its CPU flat between them
(`StackDump.still_since`), and nothing of the job used CPU since (each trainer and its workers
at or below three times the stall line at every poll: a slow loader whose workers compute
while the main thread waits for a batch is not a stall). Its other threads may read and
write (a heartbeat, a logger): that is no progress. What it costs: without the card's memory
and utilisation a job that sleeps on purpose for longer than the stall time in one place
(a long ``time.sleep`` between epochs) reads as stalled too; the verdict says which evidence
it stood on. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpusat_tui.analysis.clean_series import clean_median
from gpusat_tui.analysis.facts import FrameFacts, ProcFacts
from gpusat_tui.analysis.outside_stacks.outside_stack import OutsideStack
from gpusat_tui.analysis.outside_stacks.outside_words import busy_lines, outside_words
from gpusat_tui.analysis.probe_reading.measured import RUN_ADVICE
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.verdicts.probe_only import NO_TOOL_LINE
from gpusat_tui.analysis.wording import duration, pct, plural, stalled_advice
from gpusat_tui.model import Verdict

__all__ = ["unprobed_trainers", "unprobed_verdict"]

#: A dump that says the main thread stands still counts this many stall times after it was
#: read (a quiet trainer is dumped again after one: `sources.polling.outside_stacks`).
_STILL_DUMP_AGE = 1.5
#: Above this many times the stall line a poll shows work (as `stall.stall_run` reads it).
_BLIP_FACTOR = 3.0

_TOOL_ADVICE = (
    "Install or point at the vendor's tool (--tool VENDOR=PATH) to see the cards' own figures "
    "(utilisation, power, memory)"
)


def unprobed_trainers(ff: FrameFacts) -> list[ProcFacts]:
    """The frame's trainers that publish no probe file."""
    probed = {p.pid for p in ff.probes}
    return [p for p in ff.procs if p.is_trainer and p.pid not in probed]


def _who(p: ProcFacts) -> str:
    return f"rank {p.rank} (PID {p.pid})" if p.rank is not None else f"PID {p.pid}"


def _cpu_lines(facts: Sequence[FrameFacts], trainers: Sequence[ProcFacts]) -> list[str]:
    """Each trainer's median CPU and its workers' over the window."""
    lines = []
    for t in trainers:
        own = [p.cpu for ff in facts for p in ff.procs
               if p.pid == t.pid and p.is_trainer and p.cpu is not None]
        workers = {p.pid for p in facts[-1].procs if p.is_worker and p.trainer_pid == t.pid}
        work = [sum(p.cpu for p in ff.procs if p.pid in workers and p.cpu is not None)
                for ff in facts if any(p.pid in workers for p in ff.procs)]
        median = clean_median(own)
        if median is None:
            continue
        line = f"{_who(t)} at {pct(median)} CPU (median over the window)"
        if workers:
            line += (f", its {plural(len(workers), 'DataLoader worker')} at "
                     f"{pct(clean_median(work) or 0.0)} together")
        lines.append(line)
    return lines


def _quiet_since(facts: Sequence[FrameFacts], pids: set[object], since: float,
                 th: Thresholds) -> bool:
    """Whether the trainers ``pids`` and their workers used no CPU worth the name at every
    poll from ``since`` on (the polls in the window)."""
    line = _BLIP_FACTOR * th.stall_cpu_pct
    for ff in facts:
        if ff.t is None or ff.t < since:
            continue
        for p in ff.procs:
            ours = p.pid in pids or (p.is_worker and p.trainer_pid in pids)
            if ours and any(c is not None and c > line for c in (p.cpu, p.pin)):
                return False
    return True


def _still_since(trainers: Sequence[ProcFacts], t: float, th: Thresholds) -> float | None:
    """Since when every trainer's main thread has stood still by its outside dumps, the
    earliest; None unless each has a recent dump that says so."""
    since = []
    for p in trainers:
        dump = p.dump
        if dump is None or dump.error is not None or dump.still_since is None \
                or t - dump.t > _STILL_DUMP_AGE * th.stall_min_s:
            return None
        since.append(dump.still_since)
    return min(since, default=None)


def _stacks(trainers: Sequence[ProcFacts], t: float) -> list[OutsideStack]:
    return [OutsideStack.of(p.pid, p.rank, p.dump, t) for p in trainers
            if p.dump is not None and isinstance(p.pid, int)]


def unprobed_verdict(facts: Sequence[FrameFacts], th: Thresholds) -> Verdict | None:
    """The job verdict from the trainers with no probe in the window's newest frame; None
    when it has none (or no time)."""
    if not facts:
        return None
    newest = facts[-1]
    trainers = unprobed_trainers(newest)
    if not trainers or newest.t is None:
        return None
    t = newest.t
    stacks = _stacks(trainers, t)
    since = _still_since(trainers, t, th)
    pids = {p.pid for p in trainers}
    if since is not None and t - since >= th.stall_min_s and _quiet_since(facts, pids, since, th):
        return _stalled(facts, trainers, stacks, t - since, th)
    who = ", ".join(_who(p) for p in trainers[:4]) + (", ..." if len(trainers) > 4 else "")
    why = [
        NO_TOOL_LINE,
        f"{plural(len(trainers), 'trainer')} with no probe ({who}): its data wait is not "
        "measured, and whether "
        "the card is busy needs the vendor's tool, so neither starving nor saturated can be "
        "told",
        *_cpu_lines(facts, trainers),
        *busy_lines([s for s in stacks if s.error is None]),
    ]
    failed = [s for s in stacks if s.error is not None]
    out_why, out_advice = outside_words(failed)
    why += out_why
    if since is not None:
        why.append(f"its main thread has stood still for {duration(t - since)} by two stack "
                   "dumps, but its workers or other threads used CPU meanwhile (it may wait on "
                   "its input pipeline): not called stalled")
    return Verdict(kind="unknown", why=why, advice=[RUN_ADVICE, *out_advice, _TOOL_ADVICE],
                   confidence=0.0)


def _stalled(facts: Sequence[FrameFacts], trainers: Sequence[ProcFacts],
             stacks: Sequence[OutsideStack], still_s: float, th: Thresholds) -> Verdict:
    placed = [replace(s, stack_still_s=still_s) for s in stacks if s.error is None]
    out_why, out_advice = outside_words(placed)
    moved = any(p.pid in {t.pid for t in trainers} and (p.syscalls or 0.0) > 0.0
                for ff in facts for p in ff.procs)
    why = [
        NO_TOOL_LINE,
        f"stalled for {duration(still_s)}: two stack dumps a stall time apart show the main "
        "thread of every trainer on the same stack, its CPU flat between them",
        *out_why,
        *_cpu_lines(facts, trainers),
    ]
    if moved:
        why.append("other threads of the trainer read and write (a heartbeat, a logger, a "
                   "watchdog), but its main thread has not moved: that is no progress")
    why.append(f"a stall is called after {duration(th.stall_min_s)} of this; with no card "
               "and no probe it stands on the dumps alone (a job that sleeps on purpose that "
               "long in one place reads the same)")
    states = tuple(p.state for p in trainers if p.state)
    advice = stalled_advice("", tuple(p.pid for p in trainers), states)
    advice[1:1] = out_advice
    return Verdict(kind="stalled", why=why, advice=advice, confidence=0.6)
