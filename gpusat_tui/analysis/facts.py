"""What the verdict reads of one Frame, extracted once per frame (`frame_facts`).

Judging re-reads the same frames on every poll, so each frame's figures are cleaned here once
(`num`, percentages capped at 100) and every window that holds the frame reuses them
(`clean_series` summarises them without checking each again).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gpusat_tui.analysis.probe_reading.probe_facts import ProbeFacts, probe_facts
from gpusat_tui.analysis.window import card_id_of, cards_of, num
from gpusat_tui.model import LIMITING, Frame, ProcessSample, StackDump, split_reasons

__all__ = [
    "CardFacts",
    "FrameFacts",
    "ProcFacts",
    "frame_facts",
]


def _processes(frame: Frame) -> list[ProcessSample]:
    procs = getattr(frame, "processes", None)
    return list(procs) if isinstance(procs, (list, tuple)) else []


def _card_ids_of(proc: ProcessSample) -> tuple[str, ...]:
    ids = getattr(proc, "card_ids", None)
    if not ids or not isinstance(ids, (list, tuple)):
        return ()  # most processes (the workers) name no card
    return tuple(i for i in ids if isinstance(i, str))


def _hashable(value: object) -> object:
    """``value`` if it can be a dict key, else None (objects built without validation)."""
    if value is None or type(value) is int:
        return value  # a validated PID
    try:
        hash(value)
    except TypeError:
        return None
    return value


class ProcFacts(NamedTuple):
    """The figures of one ProcessSample the verdict reads, taken once per frame (a named
    tuple: a frame of many processes builds one per process on every poll, cheaply)."""

    pid: object
    is_trainer: bool
    is_worker: bool
    trainer_pid: object
    card_ids: tuple[str, ...]
    cpu: float | None
    pin: float | None
    #: The psutil state when it is a string (anything else is not counted).
    state: str | None
    #: Percent of wall time runnable but waiting for a CPU (None where not measured).
    run_delay: float | None = None
    #: Progress counters per second (`ProcessSample.rchar_per_s` and the rest; None: not read).
    rchar: float | None = None
    wchar: float | None = None
    syscalls: float | None = None
    switches: float | None = None
    #: Trainer only: the launcher's world size and rank from its environment.
    world_size: int | None = None
    rank: int | None = None
    #: Trainer only: its other threads' CPU % and how many are busy (`task_threads`).
    threads_cpu: float | None = None
    busy_threads: int | None = None
    #: The CPU quota holding the process back (cores) and the share of its periods throttled
    #: (`ProcessSample.cpu_quota_cores`, ``cpu_throttled_pct``); None: no quota read.
    quota_cores: float | None = None
    throttled_pct: float | None = None
    #: Trainer only, without a probe: the newest stack dump read from outside (py-spy).
    dump: StackDump | None = None

    @property
    def has_counters(self) -> bool:
        """Whether this poll read the process's I/O counters."""
        return self.rchar is not None and self.wchar is not None


class CardFacts(NamedTuple):
    """One card reading's figures as the verdict reads them: each already cleaned (`num`, or
    a percentage capped at 100), so the window's statistics need no second pass.

    A named tuple, so that ``zip(*readings)`` gives a window's columns in one call
    (`card.judge_card`)."""

    card: object
    fresh: bool
    stale_s: float | None
    util: float | None
    mem_pct: float | None
    mem_used: float | None
    mem_total: float | None
    power: float | None
    cap: float | None
    pfrac: float | None
    #: NVIDIA GPM (extras ``sm_active_pct``, ``tensor_active_pct``), None where not given.
    sm_active: float | None = None
    tensor_active: float | None = None
    #: Limiting clock-event reasons of this reading (extras ``throttle``); None: not read.
    throttle: tuple[str, ...] | None = None


def _extras_facts(card: object) -> tuple[float | None, float | None, tuple[str, ...] | None]:
    extras = getattr(card, "extras", None)
    if not isinstance(extras, dict) or not extras:
        return None, None, None
    reasons = extras.get("throttle")
    if reasons == "":  # read, none active (most polls of a tool that gives them)
        throttle: tuple[str, ...] | None = ()
    elif isinstance(reasons, str):
        throttle = tuple(r for r in split_reasons(reasons) if r in LIMITING)
    else:
        throttle = None
    return (
        pct_or_none(extras.get("sm_active_pct")),
        pct_or_none(extras.get("tensor_active_pct")),
        throttle,
    )


def card_facts(card: object) -> CardFacts:
    stale = getattr(card, "stale_s", None)
    power = num(getattr(card, "power_w", None))
    cap = num(getattr(card, "power_cap_w", None))
    used = num(getattr(card, "mem_used_mib", None))
    total = num(getattr(card, "mem_total_mib", None))
    sm_active, tensor_active, throttle = _extras_facts(card)
    return CardFacts(
        card=card,
        fresh=stale is None,
        stale_s=num(stale),
        util=pct_or_none(getattr(card, "util_pct", None)),
        mem_pct=_mem_pct(card, used, total),
        mem_used=used,
        mem_total=total,
        power=power,
        cap=cap,
        pfrac=num(power / cap) if power is not None and cap else None,
        sm_active=sm_active,
        tensor_active=tensor_active,
        throttle=throttle,
    )


@dataclass(frozen=True, slots=True)
class FrameFacts:
    """What the verdict reads of one Frame, extracted once.

    Judging re-reads the same frames on every poll (the tracker judges a 30 s window each
    second), and walking pydantic objects through ``getattr``/`num` dominated that cost. A
    frame is immutable, so its facts can be taken once and reused by every window that holds
    it (see `judge_prepared`).
    """

    #: First reading of each card id in the frame, in frame order.
    cards: dict[str, CardFacts]
    procs: tuple[ProcFacts, ...]
    iowait: float | None
    host_cpu: float | None
    cpu_count: int | None
    #: The frame's time when usable (`num`), for the rules that measure durations.
    t: float | None = None
    #: What the probes in the trainers measured; empty without a probe.
    probes: tuple[ProbeFacts, ...] = ()
    #: (pid, card ids) of each trainer that names its cards, in process order, and whether
    #: any process names cards: what `process_tie.ProcessTie` folds over a window.
    trainer_cards: tuple[tuple[object, tuple[str, ...]], ...] = ()
    any_card_ids: bool = False
    #: (job key, its trainers' PIDs, its cards) of each job the frame names (`Frame.jobs`):
    #: what tells jobs apart (`process_tie.ProcessTie`). Empty in older recordings.
    jobs: tuple[tuple[str, tuple[object, ...], tuple[str, ...]], ...] = ()
    #: The readings of ``cards`` that are fresh (not carried over from a failed poll): what
    #: the statistics of a window read.
    fresh: dict[str, CardFacts] = field(default_factory=dict)
    #: The utilisation of each fresh reading (None where the tool gave none).
    fresh_util: dict[str, float | None] = field(default_factory=dict)
    #: (card id, fresh) of every reading in frame order, a card listed twice included: what
    #: the tracker counts to find each card's recent window.
    readings: tuple[tuple[str, bool], ...] = ()
    #: Whether any fresh reading names a limiting clock-event reason (NVIDIA's tools only).
    any_throttle: bool = False
    #: Figures derived from this frame alone that a window reads again on every poll (the
    #: host evidence of one card at this poll, `host_evidence.EvidenceCache`). Keyed per card, so
    #: bounded by the cards in the frame's windows; it goes with the frame. Keys are (what,
    #: card id); each user reads back the tuple it stored.
    memo: dict[tuple[str, str | None], tuple[Any, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )


assert ProcFacts._fields == (
    "pid", "is_trainer", "is_worker", "trainer_pid", "card_ids", "cpu", "pin", "state",
    "run_delay", "rchar", "wchar", "syscalls", "switches", "world_size", "rank", "threads_cpu",
    "busy_threads", "quota_cores", "throttled_pct", "dump",
), "frame_facts builds ProcFacts positionally, in this order"


def frame_facts(frame: Frame) -> FrameFacts:
    """The facts of one frame (never raises on odd figures)."""
    cards: dict[str, CardFacts] = {}
    readings: list[tuple[str, bool]] = []
    for card in cards_of(frame):
        cid = card_id_of(card)
        if cid is None:
            continue
        readings.append((cid, getattr(card, "stale_s", None) is None))
        if cid not in cards:
            cards[cid] = card_facts(card)
    procs = []
    for proc in _processes(frame):
        role = getattr(proc, "role", None)
        state = getattr(proc, "state", None)
        # Positional (in `ProcFacts` order): a named tuple's keywords cost a third more, for
        # every process of every poll.
        procs.append(
            ProcFacts(
                _hashable(getattr(proc, "pid", -1)),  # pid
                bool(role == "trainer"),  # is_trainer
                bool(role == "dataloader_worker"),  # is_worker
                _hashable(getattr(proc, "trainer_pid", None)),  # trainer_pid
                _card_ids_of(proc),  # card_ids
                num(getattr(proc, "cpu_pct", None)),  # cpu
                num(getattr(proc, "pin_cpu_pct", None)),  # pin
                state if isinstance(state, str) else None,  # state
                num(getattr(proc, "run_delay_pct", None)),  # run_delay
                num(getattr(proc, "rchar_per_s", None)),  # rchar
                num(getattr(proc, "wchar_per_s", None)),  # wchar
                num(getattr(proc, "syscalls_per_s", None)),  # syscalls
                num(getattr(proc, "ctx_switches_per_s", None)),  # switches
                _count(getattr(proc, "world_size", None)),  # world_size
                _count(getattr(proc, "rank", None)),  # rank
                num(getattr(proc, "other_threads_cpu_pct", None)),  # threads_cpu
                _count(getattr(proc, "busy_threads", None)),  # busy_threads
                num(getattr(proc, "cpu_quota_cores", None)),  # quota_cores
                num(getattr(proc, "cpu_throttled_pct", None)),  # throttled_pct
                _dump(getattr(proc, "stack_dump", None)),  # dump
            )
        )
    iowait = host_cpu = None
    cpu_count: int | None = None
    host = getattr(frame, "host", None)
    if host is not None:
        iowait = num(getattr(host, "iowait_pct", None))
        host_cpu = num(getattr(host, "cpu_pct", None))
        count = getattr(host, "cpu_count", None)
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            cpu_count = count
    t = num(getattr(frame, "t", None))
    trainer_cards = _interned(
        tuple((p.pid, p.card_ids) for p in procs if p.is_trainer and p.card_ids)
    )
    fresh = {cid: c for cid, c in cards.items() if c.fresh}
    return FrameFacts(cards, tuple(procs), iowait, host_cpu, cpu_count, t=t,
                      probes=probe_facts(frame), trainer_cards=trainer_cards,
                      any_card_ids=any(p.card_ids for p in procs),
                      jobs=_jobs_of(frame),
                      fresh=fresh,
                      fresh_util={cid: c.util for cid, c in fresh.items()},
                      readings=(
                          tuple(readings) if isinstance(getattr(frame, "cards", None),
                                                        (list, tuple))
                          else _readings(frame)
                      ),
                      any_throttle=any(c.throttle for c in fresh.values()))


@functools.lru_cache(maxsize=64)
def _interned(trainers: tuple[tuple[object, tuple[str, ...]], ...]) -> tuple[
    tuple[object, tuple[str, ...]], ...
]:
    """One object for the same trainers in every frame (the first seen), so that a window's
    tie sees at a glance (by identity) that a poll names the trainers of the poll before.
    Bounded: a job's trainers change rarely."""
    return trainers


def _jobs_of(frame: Frame) -> tuple[tuple[str, tuple[object, ...], tuple[str, ...]], ...]:
    jobs = getattr(frame, "jobs", None)
    if not jobs or not isinstance(jobs, (list, tuple)):
        return ()  # most frames of older recordings, and hosts with no trainer found
    out = []
    for job in jobs:
        try:
            key = job.key
        except (AttributeError, TypeError):
            continue
        pids = getattr(job, "pids", None) or ()
        cards = getattr(job, "card_ids", None) or ()
        if isinstance(key, str) and isinstance(pids, (list, tuple)) and isinstance(
            cards, (list, tuple)
        ):
            out.append((key, tuple(_hashable(p) for p in pids),
                        tuple(c for c in cards if isinstance(c, str))))
    return _interned_jobs(tuple(out))


@functools.lru_cache(maxsize=64)
def _interned_jobs(
    jobs: tuple[tuple[str, tuple[object, ...], tuple[str, ...]], ...],
) -> tuple[tuple[str, tuple[object, ...], tuple[str, ...]], ...]:
    """One object for the same jobs in every frame (see `_interned`)."""
    return jobs


def _readings(frame: Frame) -> tuple[tuple[str, bool], ...]:
    out = []
    for card in getattr(frame, "cards", None) or ():
        cid = card_id_of(card)
        if cid is not None:
            out.append((cid, getattr(card, "stale_s", None) is None))
    return tuple(out)


def _dump(value: object) -> StackDump | None:
    return value if isinstance(value, StackDump) else None


def _count(value: object) -> int | None:
    """A non-negative int (world size, rank), or None."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def pct_or_none(value: object) -> float | None:
    """A percentage, or None: a figure far above 100 is a misread, not a utilisation."""
    figure = num(value)
    if figure is None or figure > 100.5:
        return None
    return figure if figure <= 100.0 else 100.0  # min(figure, 100.0), without the call


def mem_pct_of(card: object) -> float | None:
    """VRAM % as given, or from used/total (objects built without validation lack it)."""
    return _mem_pct(
        card, num(getattr(card, "mem_used_mib", None)), num(getattr(card, "mem_total_mib", None))
    )


def _mem_pct(card: object, used: float | None, total: float | None) -> float | None:
    """`mem_pct_of` with the used and total MiB already read."""
    given = pct_or_none(getattr(card, "mem_pct", None))
    if given is not None:
        return given
    return pct_or_none(100.0 * used / total) if used is not None and total else None
