"""The verdict engine: is each card saturated, and if not, why? Pure; no Textual, no I/O.

``judge(window)`` looks at a window of Frames and returns one `Verdict` per card plus one for
the job. It has no memory and no hysteresis (see `tracker.VerdictTracker` for that), so ``check``
and ``report`` can call it on any stretch of a run.

How a card is judged, in order (each step quotes the figures that decided it in ``why``):

1. ``unknown``: fewer than ``min_samples`` fresh readings (stale carried-over readings are not
   evidence), or no utilisation figure at all.
2. ``idle``: no VRAM held and no utilisation, or no VRAM held and power near the floor even if
   the utilisation figure says busy (AMD/Iluvatar can read 100 % on an idle card).
3. ``fragmenting`` (a heuristic): VRAM nearly full, utilisation near 0 and used memory moving
   up and down: the allocator is churning, the card is not computing.
4. ``saturated``: utilisation (median) at or above the busy line, and power near its cap where
   the tool gives both. Between the "low" and "saturated" power lines it is still called
   saturated, with the caveat in ``why``; on a tool without power it is judged on utilisation
   alone, also said in ``why``. Utilisation is a duty cycle (any running kernel counts), so
   power against cap is the better signal where it exists.
5. ``starving``: anything else that holds VRAM. The ``cause`` comes from the host evidence:
   ``input-bound`` (DataLoader workers pegged), ``io-bound`` (workers in disk-sleep, or host
   iowait high), ``host-bound`` (the trainer pegged while workers are not),
   ``light-kernels`` (utilisation steadily high but power low, with no host bottleneck: small
   kernels keep the duty cycle up without doing much work), or ``unknown``.

Medians, not means, decide: one dip or one spike in a short window does not change a verdict,
and a window that is two thirds new evidence already reads as the new state (this is what lets
the tracker react within three polls).

Processes are tied to cards through ``ProcessSample.card_ids`` (a worker inherits its trainer's
cards). When no process in the window has any ``card_ids``, every process is assumed to serve
every card: the common single-job machine. Two unrelated jobs on one machine without card ids
would then share their host evidence; the ``why`` lines show the figures used so this is visible.

The job verdict is ``imbalanced`` when cards of one job (cards sharing a trainer; or, when every
trainer drives one card as in DDP, all cards that hold memory) have one lagging far behind the
others; otherwise it summarises the cards.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace

from gpusat_tui.analysis.window import (
    Stats,
    _card_id,
    _cards_of,
    interval_s,
    num,
)
from gpusat_tui.model import UTIL_LABELS, Assessment, Frame, ProcessSample, Verdict

__all__ = [
    "ALLOC_CONF_VARS",
    "DEFAULT_THRESHOLDS",
    "STARVING_CAUSES",
    "FrameFacts",
    "PreparedWindow",
    "Thresholds",
    "frame_facts",
    "judge",
    "judge_card_prepared",
    "judge_prepared",
]

#: Causes a ``starving`` verdict can carry.
STARVING_CAUSES: tuple[str, ...] = (
    "input-bound", "io-bound", "host-bound", "light-kernels", "unknown"
)

#: The PyTorch caching-allocator variable of each vendor's PyTorch build.
ALLOC_CONF_VARS: dict[str, str] = {
    "nvidia": "PYTORCH_CUDA_ALLOC_CONF",
    "amd": "PYTORCH_HIP_ALLOC_CONF",
    "hygon": "PYTORCH_HIP_ALLOC_CONF",
    "ascend": "PYTORCH_NPU_ALLOC_CONF",
    "cambricon": "PYTORCH_MLU_ALLOC_CONF",
    "mthreads": "PYTORCH_MUSA_ALLOC_CONF",
}


def _default_vendor_overrides() -> dict[str, dict[str, float]]:
    # Ascend's AICore % measures the cube units only (vector work runs on AIVector), so a busy
    # training step rarely reads above the 70s; and an idle 910 already shows ~3 GiB of its
    # 64 GiB HBM in use (firmware), hence a higher "holds memory" line.
    # NVIDIA GPU-Util, AMD GPU%, Hygon HCU% and Cambricon MLU util are all duty cycles (share of
    # time any kernel ran): the defaults, with power against cap as the deciding signal.
    return {"ascend": {"busy_util_pct": 70.0, "held_vram_pct": 10.0}}


@dataclass(frozen=True)
class Thresholds:
    """Every line the verdict engine draws, in one place. Percent figures are 0-100."""

    #: Fresh readings of a card needed before anything but ``unknown`` is said.
    min_samples: int = 3
    #: Utilisation median at or above this is "busy".
    busy_util_pct: float = 80.0
    #: Power/cap median at or above this is what full compute draws.
    saturated_power_frac: float = 0.70
    #: Below this, busy utilisation is not believed to be saturation.
    low_power_frac: float = 0.50
    #: Utilisation at or below this is "no utilisation".
    idle_util_pct: float = 5.0
    #: Power/cap below this on a card holding no memory is idle whatever utilisation says.
    idle_power_frac: float = 0.25
    #: A card "holds VRAM" at or above this percentage (or this many MiB when no % is known).
    held_vram_pct: float = 5.0
    held_vram_mib: float = 1024.0
    #: Utilisation max - min at or above this is "swinging".
    swing_util_pct: float = 40.0
    #: VRAM max - min (percent of total) below this is "steady".
    steady_vram_pct: float = 5.0
    #: Fragmenting: VRAM at or above this, utilisation at or below ``fragment_util_pct``, and
    #: used memory moving by at least ``fragment_swing_pct`` of the total.
    fragment_vram_pct: float = 90.0
    fragment_util_pct: float = 10.0
    fragment_swing_pct: float = 2.0
    #: A DataLoader worker at or above this % of one core is pegged.
    worker_pegged_pct: float = 85.0
    #: The trainer at or above this % of one core is pegged.
    trainer_pegged_pct: float = 90.0
    #: The pin-memory thread at or above this % is pegged.
    pin_pegged_pct: float = 90.0
    #: Host iowait at or above this is I/O-bound.
    iowait_high_pct: float = 20.0
    #: Share of worker/trainer samples in disk-sleep (D) at or above this is I/O-bound.
    dstate_frac: float = 0.30
    #: Host CPU at or above this leaves no room for more workers.
    host_busy_pct: float = 85.0
    #: Imbalanced: a card whose utilisation is at most ``imbalance_ratio`` of the leader's
    #: and at least ``imbalance_gap_pct`` points below it.
    imbalance_gap_pct: float = 35.0
    imbalance_ratio: float = 0.60
    #: Per-vendor replacements of the fields above, where the vendor's figures mean something
    #: else (see `_default_vendor_overrides`).
    vendor_overrides: Mapping[str, Mapping[str, float]] = field(
        default_factory=_default_vendor_overrides, hash=False
    )

    def __post_init__(self) -> None:
        names = {f.name for f in fields(self)} - {"vendor_overrides"}
        for vendor, overrides in self.vendor_overrides.items():
            unknown = set(overrides) - names
            if unknown:
                raise ValueError(f"unknown threshold(s) for {vendor}: {', '.join(sorted(unknown))}")
        if self.min_samples < 1:
            raise ValueError("min_samples must be at least 1")

    def for_vendor(self, vendor: str | None) -> Thresholds:
        """These thresholds with the vendor's overrides applied (itself when there are none)."""
        overrides = self.vendor_overrides.get(vendor or "")
        if not overrides:
            return self
        return replace(self, **dict(overrides))


DEFAULT_THRESHOLDS = Thresholds()

JOB_KEY = "job"


def _util_nature(vendor: str) -> str:
    """What the vendor's utilisation figure measures, for ``why`` lines."""
    if vendor == "ascend":
        return "the share of time the AI (cube) cores were busy, vector work not counted"
    return "a duty cycle (the share of time any kernel ran: one small kernel counts as busy)"


# --- formatting --------------------------------------------------------------------------------


def _p(value: float) -> str:
    return f"{value:.0f} %"


def _gib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --- host evidence -----------------------------------------------------------------------------


def _processes(frame: Frame) -> list[ProcessSample]:
    procs = getattr(frame, "processes", None)
    return list(procs) if isinstance(procs, list | tuple) else []


def _card_ids_of(proc: ProcessSample) -> list[str]:
    ids = getattr(proc, "card_ids", None)
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list | tuple) else []


def _hashable(value: object) -> object:
    """``value`` if it can be a dict key, else None (objects built without validation)."""
    try:
        hash(value)
    except TypeError:
        return None
    return value


@dataclass(frozen=True, slots=True)
class _ProcFacts:
    """The figures of one ProcessSample the verdict reads, taken once per frame."""

    pid: object
    is_trainer: bool
    is_worker: bool
    trainer_pid: object
    card_ids: tuple[str, ...]
    cpu: float | None
    pin: float | None
    #: The psutil state when it is a string (anything else is not counted).
    state: str | None


@dataclass(frozen=True, slots=True)
class _CardFacts:
    """One card reading's figures as the verdict reads them: each already cleaned (`num`, or
    a percentage capped at 100), so the window's statistics need no second pass."""

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


def _card_facts(card: object) -> _CardFacts:
    stale = getattr(card, "stale_s", None)
    power = num(getattr(card, "power_w", None))
    cap = num(getattr(card, "power_cap_w", None))
    return _CardFacts(
        card=card,
        fresh=stale is None,
        stale_s=num(stale),
        util=_pct_or_none(getattr(card, "util_pct", None)),
        mem_pct=_mem_pct(card),
        mem_used=num(getattr(card, "mem_used_mib", None)),
        mem_total=num(getattr(card, "mem_total_mib", None)),
        power=power,
        cap=cap,
        pfrac=num(power / cap) if power is not None and cap else None,
    )


def _clean_stats(values: Iterable[float | None]) -> Stats | None:
    """`stats` of figures already cleaned by `num` (same result, without re-checking each)."""
    items = list(values)
    present = [v for v in items if v is not None]
    n = len(present)
    if not n:
        return None
    # One sort gives the median (as `statistics.median` computes it) and the min (the first
    # of equal ones, as `min` picks: the sort is stable); `max` picks the first of equal ones
    # too (0.0 before -0.0), which the sorted list's end would not.
    ordered = sorted(present)
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return Stats(
        n=n,
        missing=len(items) - n,
        mean=math.fsum(present) / n,
        median=median,
        min=ordered[0],
        max=max(present),
        last=present[-1],
    )


def _clean_median(values: Iterable[float | None]) -> float | None:
    """The median of `_clean_stats`, alone (for figures of which only the median is read)."""
    present = sorted(v for v in values if v is not None)
    n = len(present)
    if not n:
        return None
    mid = n // 2
    return present[mid] if n % 2 else (present[mid - 1] + present[mid]) / 2


def _clean_reversals(values: Sequence[float | None], min_step: float) -> int:
    """`reversals` of figures already cleaned by `num` (same count, without re-checking)."""
    count = 0
    direction = 0
    previous: float | None = None
    for figure in values:
        if figure is None:
            continue
        if previous is None:
            previous = figure
        elif abs(figure - previous) > min_step:
            step = 1 if figure > previous else -1
            if direction and step != direction:
                count += 1
            direction = step
            previous = figure
    return count


@dataclass(frozen=True, slots=True)
class FrameFacts:
    """What the verdict reads of one Frame, extracted once.

    Judging re-reads the same frames on every poll (the tracker judges a 30 s window each
    second), and walking pydantic objects through ``getattr``/`num` dominated that cost. A
    frame is immutable, so its facts can be taken once and reused by every window that holds
    it (see `judge_prepared`).
    """

    #: First reading of each card id in the frame, in frame order.
    cards: dict[str, _CardFacts]
    procs: tuple[_ProcFacts, ...]
    iowait: float | None
    host_cpu: float | None
    cpu_count: int | None


def frame_facts(frame: Frame) -> FrameFacts:
    """The facts of one frame (never raises on odd figures)."""
    cards: dict[str, _CardFacts] = {}
    for card in _cards_of(frame):
        cid = _card_id(card)
        if cid is not None and cid not in cards:
            cards[cid] = _card_facts(card)
    procs = []
    for proc in _processes(frame):
        role = getattr(proc, "role", None)
        state = getattr(proc, "state", None)
        procs.append(
            _ProcFacts(
                pid=_hashable(getattr(proc, "pid", -1)),
                is_trainer=bool(role == "trainer"),
                is_worker=bool(role == "dataloader_worker"),
                trainer_pid=_hashable(getattr(proc, "trainer_pid", None)),
                card_ids=tuple(_card_ids_of(proc)),
                cpu=num(getattr(proc, "cpu_pct", None)),
                pin=num(getattr(proc, "pin_cpu_pct", None)),
                state=state if isinstance(state, str) else None,
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
    return FrameFacts(cards, tuple(procs), iowait, host_cpu, cpu_count)


class _ProcessTie:
    """Which processes count as evidence for which card (see the module docstring)."""

    def __init__(self, facts: Sequence[FrameFacts]) -> None:
        self.trainer_cards: dict[object, set[str]] = {}
        self.any_card_ids = False
        for ff in facts:
            for proc in ff.procs:
                if proc.card_ids:
                    self.any_card_ids = True
                    if proc.is_trainer:
                        self.trainer_cards.setdefault(proc.pid, set()).update(proc.card_ids)
        self._tied_sets: dict[tuple[tuple[str, ...], bool, object], frozenset[str]] = {}

    def tied_cards(self, proc: _ProcFacts) -> frozenset[str]:
        """The cards ``proc`` is evidence for (only meaningful when ``any_card_ids``)."""
        key = (proc.card_ids, proc.is_worker, proc.trainer_pid)
        found = self._tied_sets.get(key)
        if found is None:
            cards = set(proc.card_ids)
            if proc.is_worker:
                cards.update(self.trainer_cards.get(proc.trainer_pid, ()))
            found = self._tied_sets[key] = frozenset(cards)
        return found

    def groups(self, active: Iterable[str]) -> tuple[list[list[str]], str]:
        """Cards that belong to one job, and how that was decided."""
        active = list(active)
        parent = {c: c for c in active}

        def find(c: str) -> str:
            while parent[c] != c:
                c = parent[c]
            return c

        shared = False
        for cards in self.trainer_cards.values():
            members = [c for c in cards if c in parent]
            for other in members[1:]:
                parent[find(other)] = find(members[0])
                shared = True
        if not shared:
            return [active], "all cards holding memory are taken as one job"
        groups: dict[str, list[str]] = {}
        for c in active:
            groups.setdefault(find(c), []).append(c)
        return list(groups.values()), "cards grouped by the trainer process that drives them"


class _EvidenceCache:
    """Host evidence of one window, computed on demand and shared between cards.

    The evidence depends on the card only through which processes are tied to it: without card
    ids every process serves every card (one computation for all cards), and with them cards
    tied to the same processes share one. Only a ``starving`` verdict reads it, so a window of
    saturated cards never computes it at all.
    """

    def __init__(self, facts: Sequence[FrameFacts], tie: _ProcessTie) -> None:
        self._facts = facts
        self._tie = tie
        self._tied: list[list[frozenset[str]]] | None = None
        self._distinct: list[frozenset[str]] = []
        self._by_key: dict[object, _HostEvidence] = {}

    def __call__(self, card_id: str) -> _HostEvidence:
        if not self._tie.any_card_ids:
            key: object = None
            tied_sets = None
        else:
            if self._tied is None:
                self._tied = [[self._tie.tied_cards(p) for p in ff.procs] for ff in self._facts]
                self._distinct = list({s for sets in self._tied for s in sets})
            # Cards in the same distinct tie sets are tied to exactly the same processes.
            key = frozenset(i for i, s in enumerate(self._distinct) if card_id in s)
            tied_sets = self._tied
        found = self._by_key.get(key)
        if found is None:
            found = self._by_key[key] = _host_evidence(self._facts, card_id, tied_sets)
        return found


@dataclass
class _HostEvidence:
    """Host figures tied to one card, summarised over the window (medians across polls)."""

    n_process_samples: int = 0
    trainer_cpu: float | None = None
    pin_cpu: float | None = None
    n_workers: int = 0
    worker_cpu: float | None = None
    worker_sum: float | None = None
    dstate_frac: float | None = None
    iowait: float | None = None
    host_cpu: float | None = None
    cpu_count: int | None = None
    foreign_processes: bool = False

    @property
    def has_processes(self) -> bool:
        return self.n_process_samples > 0


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _host_evidence(
    facts: Sequence[FrameFacts],
    card_id: str,
    tied_sets: Sequence[Sequence[frozenset[str]]] | None,
) -> _HostEvidence:
    """``tied_sets[i][j]``: the cards process j of frame i serves; None: every process serves
    every card (no card ids anywhere in the window)."""
    ev = _HostEvidence()
    trainer_cpus: list[float] = []
    pin_cpus: list[float] = []
    worker_counts: list[int] = []
    worker_meds: list[float] = []
    worker_sums: list[float] = []
    d_states = 0
    states = 0
    iowaits: list[float] = []
    host_cpus: list[float] = []
    for i, ff in enumerate(facts):
        procs = ff.procs
        if tied_sets is None:
            tied: Sequence[_ProcFacts] = procs
        else:
            tied = [p for p, s in zip(procs, tied_sets[i], strict=True) if card_id in s]
        if procs and not tied:
            ev.foreign_processes = True
        ev.n_process_samples += len(tied)
        t_cpu = [p.cpu for p in tied if p.is_trainer and p.cpu is not None]
        if t_cpu:
            trainer_cpus.append(max(t_cpu))
        pins = [p.pin for p in tied if p.is_trainer and p.pin is not None]
        if pins:
            pin_cpus.append(max(pins))
        n_workers = 0
        w_cpu: list[float] = []
        for p in tied:
            if p.is_worker:
                n_workers += 1
                if p.cpu is not None:
                    w_cpu.append(p.cpu)
            if p.state is not None:
                states += 1
                d_states += p.state == "disk-sleep"
        if n_workers:
            worker_counts.append(n_workers)
        if w_cpu:
            worker_meds.append(statistics.median(w_cpu))
            worker_sums.append(sum(w_cpu))
        if ff.iowait is not None:
            iowaits.append(ff.iowait)
        if ff.host_cpu is not None:
            host_cpus.append(ff.host_cpu)
        if ff.cpu_count is not None:
            ev.cpu_count = ff.cpu_count
    ev.trainer_cpu = _median(trainer_cpus)
    ev.pin_cpu = _median(pin_cpus)
    ev.n_workers = round(statistics.median(worker_counts)) if worker_counts else 0
    ev.worker_cpu = _median(worker_meds)
    ev.worker_sum = _median(worker_sums)
    ev.dstate_frac = d_states / states if states else None
    ev.iowait = _median(iowaits)
    ev.host_cpu = _median(host_cpus)
    return ev


def _worker_line(ev: _HostEvidence) -> str:
    if not ev.n_workers:
        return "no DataLoader workers seen"
    if ev.worker_cpu is None:
        return f"{_plural(ev.n_workers, 'worker')}, CPU not readable"
    if ev.n_workers == 1:
        return f"1 worker at {_p(ev.worker_cpu)} CPU"
    return (
        f"{_plural(ev.n_workers, 'worker')} at {_p(ev.worker_cpu)} CPU each "
        f"({_p(ev.worker_sum or 0.0)} together)"
    )


def _host_line(ev: _HostEvidence) -> str | None:
    parts = []
    if ev.cpu_count:
        parts.append(f"{ev.cpu_count} cores")
    if ev.host_cpu is not None:
        parts.append(f"host CPU {_p(ev.host_cpu)}")
    if ev.iowait is not None:
        parts.append(f"iowait {_p(ev.iowait)}")
    return ", ".join(parts) if parts else None


def _starving_cause(
    ev: _HostEvidence, th: Thresholds, *, light: bool, label: str
) -> tuple[str, list[str], list[str], float]:
    """(cause, why, advice, confidence) for a starving card, from the host evidence."""
    why: list[str] = []
    host = _host_line(ev)
    pegged_workers = ev.n_workers > 0 and (
        (ev.worker_cpu is not None and ev.worker_cpu >= th.worker_pegged_pct)
        or (
            ev.worker_sum is not None
            and ev.worker_sum >= th.worker_pegged_pct * ev.n_workers
        )
    )
    io = (ev.dstate_frac is not None and ev.dstate_frac >= th.dstate_frac) or (
        ev.iowait is not None and ev.iowait >= th.iowait_high_pct
    )
    trainer_pegged = ev.trainer_cpu is not None and ev.trainer_cpu >= th.trainer_pegged_pct

    if pegged_workers:
        why.append(f"{_worker_line(ev)}: the input pipeline is CPU-bound")
        if host:
            why.append(host)
        advice: list[str] = []
        if ev.cpu_count:
            busy = ev.n_workers + 1
            free = ev.cpu_count - busy
            host_busy = ev.host_cpu is not None and ev.host_cpu >= th.host_busy_pct
            if free >= 2 and not host_busy:
                target = min(ev.cpu_count - 1, ev.n_workers * 2)
                advice.append(
                    f"Raise DataLoader num_workers from {ev.n_workers} towards {target}: "
                    f"{ev.cpu_count} cores, about {free} not used by this job"
                    + (f" (host CPU {_p(ev.host_cpu)})" if ev.host_cpu is not None else "")
                )
            else:
                advice.append(
                    f"All {ev.cpu_count} cores are busy"
                    + (f" (host CPU {_p(ev.host_cpu)})" if ev.host_cpu is not None else "")
                    + ": more workers will not help; make each sample cheaper"
                )
        else:
            advice.append("Add DataLoader workers if the machine has idle cores")
        advice += [
            "Cache or pre-decode the dataset (decoded tensors, shards) so workers stop "
            "decoding and resizing every epoch",
            "Lighten the CPU augmentation, or move it to the accelerator",
            "DataLoader(persistent_workers=True, pin_memory=True, prefetch_factor=4) keeps "
            "workers alive between epochs and copies overlapping compute",
        ]
        return "input-bound", why, advice, 0.85

    if io:
        if ev.dstate_frac is not None and ev.dstate_frac >= th.dstate_frac:
            why.append(
                f"processes waiting on disk (D state) in {_p(100 * ev.dstate_frac)} of samples"
            )
        if ev.iowait is not None:
            why.append(f"host iowait {_p(ev.iowait)}")
        if ev.n_workers:
            why.append(_worker_line(ev))
        advice = [
            "Reads wait on storage: copy the dataset to local NVMe or /dev/shm, or cache it "
            "after the first epoch",
            "Pack many small files into large sequential shards (tar/WebDataset, LMDB)",
            "Keep more reads in flight: more workers and a larger prefetch_factor",
        ]
        return "io-bound", why, advice, 0.8

    if trainer_pegged:
        why.append(
            f"trainer at {_p(ev.trainer_cpu or 0.0)} CPU (pegged) while {_worker_line(ev)}"
        )
        if ev.pin_cpu is not None and ev.pin_cpu >= th.pin_pegged_pct:
            why.append(f"its pin-memory thread at {_p(ev.pin_cpu)} CPU")
        advice = [
            "The training loop's own Python work is the bottleneck: look for .item(), .cpu(), "
            "tensor printing or torch.cuda.synchronize() in every step (each forces a sync)",
            "Log and compute metrics every N steps, not every step",
            "Launch fewer, bigger kernels: larger batch, AMP/bf16, torch.compile or CUDA graphs",
        ]
        if not ev.n_workers:
            advice.insert(
                0,
                "No DataLoader workers seen: with num_workers=0 the data loading runs in this "
                "thread; set num_workers > 0",
            )
        return "host-bound", why, advice, 0.8

    if light:
        why.append(
            f"no host bottleneck seen ({_worker_line(ev)}"
            + (f", trainer at {_p(ev.trainer_cpu)} CPU" if ev.trainer_cpu is not None else "")
            + ")"
            if ev.has_processes
            else "no process figures to check the host side"
        )
        advice = [
            f"{label} counts any running kernel: the card runs many small kernels. Give each "
            "more work: larger batch, AMP/bf16, fused ops, torch.compile or CUDA graphs",
            "If nothing should be running, trust power: some tools read busy on an idle card",
        ]
        if not ev.has_processes:
            advice.append("Run with --pid <trainer PID> to add the host side to the verdict")
        return "light-kernels", why, advice, 0.6

    if not ev.has_processes:
        if ev.foreign_processes:
            why.append("processes were seen, but none is tied to this card")
        else:
            why.append("no process figures: cannot tell input-, I/O- or host-bound apart")
        if host:
            why.append(host)
        advice = [
            "Run with --pid <trainer PID> so the trainer and its DataLoader workers are "
            "watched: their CPU tells input-, I/O- and host-bound apart"
        ]
        return "unknown", why, advice, 0.5

    parts = [_worker_line(ev)]
    if ev.trainer_cpu is not None:
        parts.append(f"trainer at {_p(ev.trainer_cpu)} CPU")
    if host:
        parts.append(host)
    why.append("no host bottleneck in the figures: " + ", ".join(parts))
    advice = [
        "Profile a few steps (torch.profiler) to see what the step waits on: "
        "communication, synchronisation, a lock, or another process",
    ]
    return "unknown", why, advice, 0.5


# --- one card ------------------------------------------------------------------------------


@dataclass
class _CardFigures:
    """A card's figures over the window, and the sentences that quote them."""

    card_id: str
    vendor: str
    label: str
    n: int
    util: Stats
    mem_pct: Stats | None
    mem_used: Stats | None
    mem_total: float | None
    power: Stats | None
    cap: float | None
    pfrac: Stats | None
    mem_reversals: int

    def util_line(self, th: Thresholds) -> str:
        u = self.util
        shape = ""
        if u.span >= th.swing_util_pct:
            shape = f" swinging {u.min:.0f}–{u.max:.0f} %"
        elif u.span >= 1:
            shape = f" (range {u.min:.0f}–{u.max:.0f} %)"
        elif u.n > 1:
            shape = ", steady"
        return f"{self.label} median {_p(u.median)}, mean {_p(u.mean)}{shape} over {u.n} samples"

    def power_line(self) -> str:
        if self.pfrac is not None and self.cap:
            return (
                f"power {_p(100 * self.pfrac.median)} of {self.cap:.0f} W cap"
                + (f" ({self.power.median:.0f} W)" if self.power is not None else "")
            )
        if self.power is not None:
            return f"power {self.power.median:.0f} W (no cap reported)"
        return "no power figure"

    def vram_line(self, th: Thresholds) -> str | None:
        m = self.mem_pct
        if m is None:
            if self.mem_used is not None:
                return f"VRAM {_gib(self.mem_used.median)} used (no total reported)"
            return None
        size = ""
        if self.mem_used is not None and self.mem_total:
            size = f" ({_gib(self.mem_used.median)} of {_gib(self.mem_total)})"
        shape = (
            ", steady"
            if m.span < th.steady_vram_pct
            else f", moving {m.min:.0f}–{m.max:.0f} %"
        )
        return f"VRAM {_p(m.median)} used{size}{shape}"

    def held(self, th: Thresholds) -> bool | None:
        if self.mem_pct is not None:
            return self.mem_pct.median >= th.held_vram_pct
        if self.mem_used is not None:
            return self.mem_used.median >= th.held_vram_mib
        return None


def _confidence(base: float, n: int) -> float:
    """Less data, less confidence: full confidence from 10 samples."""
    return round(max(0.0, min(1.0, base * min(1.0, 0.5 + n / 20))), 2)


# Verdicts are built without pydantic validation (``model_construct``): every card of every
# judged window gets one, on every poll, and validating them was a fifth of the tracker's
# cost. What goes in is built right here (a known kind, lists of str, a float), so validation
# could not change or reject anything; the objects compare equal to validated ones.


def _verdict(kind: str, cause: str | None, why: list[str], advice: list[str], conf: float,
             n: int) -> Verdict:
    return Verdict.model_construct(
        kind=kind,  # type: ignore[arg-type]
        cause=cause,
        why=[w for w in why if w],
        advice=advice,
        confidence=_confidence(conf, n),
    )


def _unknown(why: list[str], advice: list[str]) -> Verdict:
    return Verdict.model_construct(kind="unknown", why=why, advice=advice, confidence=0.0)


def _pct_or_none(value: object) -> float | None:
    """A percentage, or None: a figure far above 100 is a misread, not a utilisation."""
    figure = num(value)
    return None if figure is None or figure > 100.5 else min(figure, 100.0)


def _mem_pct(card: object) -> float | None:
    """VRAM % as given, or from used/total (objects built without validation lack it)."""
    given = _pct_or_none(getattr(card, "mem_pct", None))
    if given is not None:
        return given
    used = num(getattr(card, "mem_used_mib", None))
    total = num(getattr(card, "mem_total_mib", None))
    return _pct_or_none(100.0 * used / total) if used is not None and total else None


def _readings(
    facts: Sequence[FrameFacts], card_id: str, thresholds: Thresholds
) -> tuple[list[_CardFacts], list[_CardFacts], str, Thresholds]:
    """(every reading, the fresh ones, vendor, its thresholds) of one card in the window."""
    # One reading per frame that has the card (the first, as `card_readings` takes it).
    everything = [ff.cards[card_id] for ff in facts if card_id in ff.cards]
    fresh = [c for c in everything if c.fresh]
    vendor = str(getattr(everything[-1].card, "vendor", "")) if everything else ""
    return everything, fresh, vendor, thresholds.for_vendor(vendor)


def _light_figures(
    facts: Sequence[FrameFacts], card_id: str, thresholds: Thresholds
) -> tuple[_CardFigures | None, Thresholds]:
    """Only the figures that decide whether a card is unknown (None), idle, and how busy it is
    (what `_judge_job` reads of the other cards): `judge_card_prepared` needs no more."""
    _, fresh, vendor, th = _readings(facts, card_id, thresholds)
    if len(fresh) < th.min_samples:
        return None, th
    util = _clean_stats(c.util for c in fresh)
    if util is None or util.n < th.min_samples:
        return None, th
    mem_pct = _clean_stats(c.mem_pct for c in fresh)
    figs = _CardFigures(
        card_id=card_id,
        vendor=vendor,
        label=UTIL_LABELS.get(vendor, "util"),
        n=len(fresh),
        util=util,
        mem_pct=mem_pct,
        # `held` reads the used MiB only when there is no percentage.
        mem_used=_clean_stats(c.mem_used for c in fresh) if mem_pct is None else None,
        mem_total=None,
        power=None,
        cap=None,
        pfrac=_clean_stats(c.pfrac for c in fresh),
        mem_reversals=0,
    )
    return figs, th


def _is_idle(f: _CardFigures, th: Thresholds) -> bool:
    """Whether `_decide` says ``idle`` (its step 1, the same two tests)."""
    u = f.util
    held = f.held(th)
    pfrac = f.pfrac.median if f.pfrac is not None else None
    near_floor = pfrac is not None and pfrac < th.idle_power_frac
    if held is False and (u.median <= th.idle_util_pct or near_floor):
        return True
    return held is None and u.median <= th.idle_util_pct and (pfrac is None or near_floor)


def _judge_card(
    frames: Sequence[Frame],
    facts: Sequence[FrameFacts],
    card_id: str,
    thresholds: Thresholds,
    evidence: Callable[[str], _HostEvidence],
) -> tuple[Verdict, _CardFigures | None]:
    everything, fresh, vendor, th = _readings(facts, card_id, thresholds)
    label = UTIL_LABELS.get(vendor, "util")
    n = len(fresh)
    if n < th.min_samples:
        why = [f"{_plural(n, 'fresh sample')} of {card_id}; need at least {th.min_samples}"]
        step = interval_s(frames)
        if step:
            why[0] += f" (about {th.min_samples * step:.0f} s at this poll interval)"
        stale = [c.stale_s for c in everything if not c.fresh]
        if stale:
            oldest = max((s for s in stale if s is not None), default=None)
            why.append(
                f"{_plural(len(stale), 'reading')} carried over from failed polls"
                + (f" (up to {oldest:.0f} s old)" if oldest is not None else "")
                + " are not counted"
            )
        advice = [f"Wait for {_plural(th.min_samples - n, 'more poll')}"]
        if stale:
            advice.append("The tool is failing: see the errors in the status line")
        return _unknown(why, advice), None

    util = _clean_stats(c.util for c in fresh)
    if util is None or util.n < th.min_samples:
        got = util.n if util else 0
        why = [
            f"{label} given in {got} of {n} fresh samples of {card_id}; "
            f"need at least {th.min_samples}"
        ]
        return _unknown(why, ["Check the tool errors; another tool may report it (--tool)"]), None

    # One pass over the readings for every other column (not one generator per figure).
    _, mem_pcts, mem_used, mem_totals, powers, caps, pfracs = zip(
        *[(None, c.mem_pct, c.mem_used, c.mem_total, c.power, c.cap, c.pfrac) for c in fresh],
        strict=True,
    )
    mem_pct = _clean_stats(mem_pcts)
    mem_total = _clean_median(mem_totals)
    cap = _clean_median(caps)
    figs = _CardFigures(
        card_id=card_id,
        vendor=vendor,
        label=label,
        n=n,
        util=util,
        mem_pct=mem_pct,
        mem_used=_clean_stats(mem_used),
        mem_total=mem_total,
        power=_clean_stats(powers),
        cap=cap if cap is not None and cap > 0 else None,
        pfrac=_clean_stats(pfracs),
        mem_reversals=_clean_reversals(mem_pcts, 0.5),
    )
    return _decide(figs, th, lambda: evidence(card_id)), figs


def _decide(f: _CardFigures, th: Thresholds, evidence: Callable[[], _HostEvidence]) -> Verdict:
    """The card's verdict; ``evidence`` (the host figures) is only read for ``starving``."""
    u = f.util
    held = f.held(th)
    pfrac = f.pfrac.median if f.pfrac is not None else None
    util_line = f.util_line(th)
    power_line = f.power_line()
    vram_line = f.vram_line(th)

    # 1. idle
    near_floor = pfrac is not None and pfrac < th.idle_power_frac
    if held is False and (u.median <= th.idle_util_pct or near_floor):
        why = [vram_line or "", util_line, power_line]
        conf = 0.9
        if u.median > th.idle_util_pct:
            why.append(
                f"{f.label} reads busy, but power is at the idle floor and no memory is "
                f"held: a utilisation reading that power does not back (a known quirk of "
                f"some tools), not work"
            )
            conf = 0.7
        return _verdict("idle", None, why, ["Nothing runs on this card"], conf, f.n)
    if held is None and u.median <= th.idle_util_pct and (pfrac is None or near_floor):
        why = ["VRAM not reported", util_line, power_line]
        return _verdict("idle", None, why, ["Nothing seems to run on this card"], 0.5, f.n)

    # 2. fragmenting (heuristic)
    m = f.mem_pct
    if (
        m is not None
        and m.max >= th.fragment_vram_pct
        and u.median <= th.fragment_util_pct
        and m.span >= th.fragment_swing_pct
    ):
        moved = ""
        if f.mem_total:
            moved = f", {_gib(m.span * f.mem_total / 100)} back and forth"
        why = [
            f"heuristic: VRAM up to {_p(m.max)} full while {f.label} median is {_p(u.median)}",
            f"used memory moving {m.min:.0f}–{m.max:.0f} % "
            f"({_plural(f.mem_reversals, 'change')} of direction{moved}): "
            "allocator churn (frees and re-allocations), not compute",
            power_line,
        ]
        var = ALLOC_CONF_VARS.get(f.vendor)
        alloc = (
            f"Set {var}=expandable_segments:True so freed blocks can be reused"
            if var
            else "Enable the vendor PyTorch build's expandable segments (its equivalent of "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)"
        )
        advice = [
            alloc,
            "Free and re-allocate less: pre-allocate buffers, keep tensor shapes static "
            "(pad or bucket variable lengths), no empty_cache() in the loop",
            "A smaller batch leaves the allocator headroom",
            "Confirm with torch.cuda.memory_stats(): a growing num_alloc_retries means the "
            "allocator keeps flushing its cache to find room",
        ]
        return _verdict("fragmenting", None, why, advice, 0.5, f.n)

    # 3. saturated
    vram_note = vram_line
    busy = u.median >= th.busy_util_pct
    light = False
    saturated_advice = [
        "The card is the bottleneck: gains now come from the model side (AMP/bf16, "
        "torch.compile, fused optimizers, a larger batch if memory allows)"
    ]
    if busy:
        if pfrac is None:
            why = [
                util_line,
                f"{power_line}: judged on {f.label} alone, {_util_nature(f.vendor)}, so this "
                "may overstate the work done",
                vram_note or "",
            ]
            return _verdict("saturated", None, why, saturated_advice, 0.55, f.n)
        if pfrac >= th.saturated_power_frac:
            return _verdict(
                "saturated", None, [util_line, power_line, vram_note or ""], saturated_advice,
                0.9, f.n,
            )
        if pfrac >= th.low_power_frac:
            why = [
                util_line,
                f"{power_line}: below the {_p(100 * th.saturated_power_frac)} full compute "
                "usually draws, so the kernels are light or memory-bound; counted as saturated "
                "with that caveat",
                vram_note or "",
            ]
            advice = [
                "Busy but not drawing full power: more work per kernel (larger batch, "
                "AMP/bf16, torch.compile, fused ops) can still speed it up"
            ]
            return _verdict("saturated", None, why, advice, 0.5, f.n)
        light = u.span < th.swing_util_pct
    elif (
        pfrac is not None
        and pfrac >= th.saturated_power_frac
        and u.median >= th.busy_util_pct - th.swing_util_pct
    ):
        why = [
            util_line,
            f"{power_line}: {f.label} is under {_p(th.busy_util_pct)}, but the power draw says "
            "the card is working hard",
            vram_note or "",
        ]
        return _verdict("saturated", None, why, saturated_advice, 0.6, f.n)

    # 4. starving
    why = [util_line]
    if busy:
        why.append(
            f"{f.label} reads {_p(u.median)} while power is only {_p(100 * (pfrac or 0.0))} of "
            f"the {f.cap or 0:.0f} W cap: {f.label} is {_util_nature(f.vendor)}, so this is "
            "not saturation"
        )
    else:
        far = pfrac is not None and pfrac < th.saturated_power_frac
        why.append(power_line + (", far below it" if far else ""))
    if held is False and f.mem_pct is not None:
        why.append(f"holds only {_p(f.mem_pct.median)} of its VRAM")
    elif vram_line:
        why.append(vram_line)
    cause, cwhy, cadvice, conf = _starving_cause(evidence(), th, light=light, label=f.label)
    return _verdict("starving", cause, why + cwhy, cadvice, conf, f.n)


# --- the job -------------------------------------------------------------------------------

_SEVERITY = ("imbalanced", "starving", "fragmenting", "saturated", "idle", "unknown")


@dataclass
class _Lag:
    """The first group of cards of one job with a card lagging far behind the others."""

    group: list[str]
    laggards: list[str]
    others: list[str]
    centers: dict[str, float]
    other_med: float
    basis: str

    def line(self, card_id: str) -> str:
        """The line added to a lagging card's ``why``."""
        return (
            f"lags the job: {_p(self.centers[card_id])} vs {_p(self.other_med)} "
            f"on {', '.join(self.others)}"
        )


def _lagging(
    active: list[str],
    figures: Mapping[str, _CardFigures],
    tie: _ProcessTie,
    thresholds: Thresholds,
) -> _Lag | None:
    groups, basis = tie.groups(active)
    for group in groups:
        if len(group) < 2:
            continue
        centers = {c: figures[c].util.median for c in group}
        leader = max(centers.values())
        laggards = [
            c
            for c in group
            if centers[c] <= thresholds.imbalance_ratio * leader
            and leader - centers[c] >= thresholds.imbalance_gap_pct
        ]
        if not laggards or len(laggards) == len(group):
            continue
        others = [c for c in group if c not in laggards]
        other_med = statistics.median(centers[c] for c in others)
        return _Lag(group, laggards, others, centers, other_med, basis)
    return None


def _judge_job(
    verdicts: dict[str, Verdict],
    figures: dict[str, _CardFigures],
    tie: _ProcessTie,
    thresholds: Thresholds,
) -> tuple[Verdict, dict[str, Verdict]]:
    """The job verdict, and the card verdicts with a line added to any lagging card."""
    if not verdicts:
        return _unknown(
            ["no card in the window"],
            ["No accelerator tool answered: see the status line for what was searched"],
        ), verdicts
    if len(verdicts) == 1:
        return next(iter(verdicts.values())), verdicts

    active = [c for c, v in verdicts.items() if v.kind not in ("idle", "unknown") and c in figures]
    lag = _lagging(active, figures, tie, thresholds)
    if lag is not None:
        group, laggards, others = lag.group, lag.laggards, lag.others
        centers, other_med, basis = lag.centers, lag.other_med, lag.basis
        label = figures[group[0]].label
        lag_txt = ", ".join(f"{c} at {_p(centers[c])}" for c in laggards)
        why = [
            f"{lag_txt} while {', '.join(others)} run at {_p(other_med)} "
            f"({label} medians): the cards of one job are uneven, and every step waits for "
            "the slowest",
            f"{basis}",
        ]
        pf = {c: figures[c].pfrac.median for c in group if figures[c].pfrac is not None}
        if len(pf) == len(group):
            why.append(
                "power: " + ", ".join(f"{c} {_p(100 * pf[c])} of cap" for c in group)
            )
        advice = [
            "Look at what differs on the lagging rank: its DataLoader workers, its data "
            "shard (equal sample counts but unequal sample sizes; bucket by length)",
            "Check the lagging card for throttling (clocks, temperature, power cap) in the "
            "vendor tool",
            "Communication: a slow link or a rank across sockets stalls every all-reduce; "
            "the collective library's debug log (NCCL_DEBUG=INFO or the vendor's) shows it",
            "With pipeline or model parallelism, rebalance the layers between stages",
        ]
        conf = min(verdicts[c].confidence for c in group) or 0.5
        updated = dict(verdicts)
        for c in laggards:
            v = updated[c]
            updated[c] = v.model_copy(update={"why": [*v.why, lag.line(c)]})
        job = Verdict(
            kind="imbalanced", cause="straggler", why=why, advice=advice,
            confidence=round(max(0.3, min(0.9, conf)), 2),
        )
        return job, updated

    known = {c: v for c, v in verdicts.items() if v.kind != "unknown"}
    if not known:
        first = next(iter(verdicts.values()))
        return _unknown(
            [f"no card has enough data yet ({len(verdicts)} cards)", *first.why[:1]],
            list(first.advice),
        ), verdicts
    by_kind = Counter(v.kind for v in known.values())
    busy_kinds = [k for k in by_kind if k != "idle"]
    kind = min(busy_kinds or ["idle"], key=_SEVERITY.index)
    chosen = [v for v in known.values() if v.kind == kind]
    causes = Counter(v.cause for v in chosen)
    cause = causes.most_common(1)[0][0] if chosen else None
    why = []
    for k in sorted(by_kind, key=_SEVERITY.index):
        ids = [c for c, v in known.items() if v.kind == k]
        why.append(f"{len(ids)} of {len(verdicts)} cards {k}: {', '.join(ids)}")
    missing = len(verdicts) - len(known)
    if missing:
        why.append(f"{missing} of {len(verdicts)} cards without enough data")
    advice: list[str] = []
    for v in chosen:
        if v.cause == cause:
            for line in v.advice:
                if line not in advice:
                    advice.append(line)
    conf = min(v.confidence for v in chosen) if chosen else 0.0
    return Verdict(kind=kind, cause=cause, why=why, advice=advice, confidence=conf), verdicts


# --- entry point -----------------------------------------------------------------------------


def judge(window: Sequence[Frame], thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Assessment:
    """Verdicts for every card seen in ``window`` plus one for the job. Pure; never raises on
    missing, NaN or odd figures: too little data gives ``unknown`` with the reason."""
    frames = [f for f in (window or ()) if f is not None]
    return judge_prepared(frames, [frame_facts(f) for f in frames], thresholds)


def judge_prepared(
    frames: Sequence[Frame],
    facts: Sequence[FrameFacts],
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> Assessment:
    """`judge` with each frame's `frame_facts` already taken (``facts[i]`` of ``frames[i]``,
    no ``None`` frames): the tracker keeps them so that a frame is read once, not once per
    window it appears in. Same result as ``judge(frames, thresholds)``."""
    tie = _ProcessTie(facts)
    evidence = _EvidenceCache(facts, tie)
    verdicts: dict[str, Verdict] = {}
    figures: dict[str, _CardFigures] = {}
    for cid in _ids(facts):
        verdict, figs = _judge_card(frames, facts, cid, thresholds, evidence)
        verdicts[cid] = verdict
        if figs is not None:
            figures[cid] = figs
    job, verdicts = _judge_job(verdicts, figures, tie, thresholds)
    return Assessment(cards=verdicts, job=job)


def _ids(facts: Sequence[FrameFacts]) -> list[str]:
    """Every card id in the window, in order of first appearance (as `card_ids`)."""
    seen: dict[str, None] = {}
    for ff in facts:
        for cid in ff.cards:
            seen.setdefault(cid, None)
    return list(seen)


class PreparedWindow:
    """One window's card verdicts, judged one card at a time, on demand.

    ``window.card(card_id) == judge_prepared(frames, facts, thresholds).cards.get(card_id)``.
    The tracker re-reads each card's evidence window (every poll since its verdict was
    adopted) on every poll, and cards adopt verdicts at different polls: judging every card
    in every one of those windows cost up to a full judgement of all cards per card. Here only
    the cards asked about are judged in full; of the others only what the job's imbalance test
    reads is computed, once per window (unknown or idle, and the utilisation median), since a
    lagging card's ``why`` gains a line from it.
    """

    def __init__(
        self,
        frames: Sequence[Frame],
        facts: Sequence[FrameFacts],
        thresholds: Thresholds = DEFAULT_THRESHOLDS,
    ) -> None:
        self._frames = frames
        self._facts = facts
        self._thresholds = thresholds
        self._ids = _ids(facts)
        self._tie = _ProcessTie(facts)
        self._evidence = _EvidenceCache(facts, self._tie)
        self._lag: _Lag | None = None
        self._lag_done = False

    def card(self, card_id: str) -> Verdict | None:
        """The card's verdict in this window (None when the window never shows the card)."""
        if card_id not in self._ids:
            return None
        verdict, figs = _judge_card(
            self._frames, self._facts, card_id, self._thresholds, self._evidence
        )
        if len(self._ids) == 1 or figs is None or verdict.kind == "idle":
            return verdict  # alone, unknown or idle: never a lagging card of a job
        # Utilisation medians are at most 100, so a card above these lines lags no leader:
        # the other cards need not be read at all (the common case, a busy card).
        th = self._thresholds
        center = figs.util.median
        if center > 100.0 - th.imbalance_gap_pct or (
            th.imbalance_ratio >= 0 and center > 100.0 * th.imbalance_ratio
        ):
            return verdict
        lag = self._lagging()
        if lag is None or card_id not in lag.laggards:
            return verdict
        return verdict.model_copy(update={"why": [*verdict.why, lag.line(card_id)]})

    def _lagging(self) -> _Lag | None:
        if not self._lag_done:
            figures: dict[str, _CardFigures] = {}
            active: list[str] = []
            for cid in self._ids:
                figs, th = _light_figures(self._facts, cid, self._thresholds)
                if figs is not None:
                    figures[cid] = figs
                    if not _is_idle(figs, th):
                        active.append(cid)
            self._lag = _lagging(active, figures, self._tie, self._thresholds)
            self._lag_done = True
        return self._lag


def judge_card_prepared(
    frames: Sequence[Frame],
    facts: Sequence[FrameFacts],
    card_id: str,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> Verdict | None:
    """``judge_prepared(frames, facts, thresholds).cards.get(card_id)``, judging only that card
    in full (see `PreparedWindow`)."""
    return PreparedWindow(frames, facts, thresholds).card(card_id)
