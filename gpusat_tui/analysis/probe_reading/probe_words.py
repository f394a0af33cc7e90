"""How the probe's figures read, wherever they are shown: one module, so the job line, the
process panel, a card's title, ``why``, ``check`` and ``report`` write a data wait, a step
time, a throughput, an allocator figure, a framework and a "not measured" note the same way.

Two registers, one vocabulary: *tight* for the dashboard's rows (``wait 34%``, ``12.3k
samples/s``: cells are scarce), *prose* for sentences and reports (``data wait 34 %``,
``12,345 samples/s``, as every other figure in ``why`` is written). A figure measured over a
window says so (``over the last 11 s``) everywhere it is quoted. Pure; nothing from a probe
file reaches these strings unsanitised (`clean`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from gpusat_tui.text import clean

if TYPE_CHECKING:
    from gpusat_tui.analysis.thresholds import Thresholds
    from gpusat_tui.model import ProbeAlloc

__all__ = [
    "NOT_MEASURED",
    "NO_BATCH",
    "PROBE_STALE_S",
    "RankFigures",
    "StackFigures",
    "allocator_detail",
    "allocator_words",
    "figures",
    "framework_words",
    "frozen_lines",
    "lines_words",
    "note_line",
    "percent",
    "phases_words",
    "place_words",
    "ranks_words",
    "rate",
    "silent_words",
    "span_words",
    "step_words",
    "throughput_words",
    "wait_meaning",
    "wait_sentence",
    "wait_words",
]

#: A probe publication older than this many seconds is marked as such (the trainer may be
#: stuck, or gone).
PROBE_STALE_S = 5.0

#: Where a row has no room for the probe's own note (``data sink mode: ...``).
NOT_MEASURED = "wait not measured"

#: A probe that has published, but counted no batch yet.
NO_BATCH = "no batch yet"

_GIB = 1024.0**3


def percent(value: float, *, tight: bool = False) -> str:
    """``34%`` (tight) or ``34 %`` (prose)."""
    return f"{value:.0f}%" if tight else f"{value:.0f} %"


def _spread(values: Sequence[float], fmt: str, unit: str) -> str:
    """``12–34%``: one figure when they round alike."""
    low, high = format(min(values), fmt), format(max(values), fmt)
    return f"{high}{unit}" if low == high else f"{low}–{high}{unit}"


def _one_or_spread(value: float | Sequence[float], fmt: str, unit: str) -> str:
    return (format(value, fmt) + unit if isinstance(value, int | float)
            else _spread(value, fmt, unit))


def span_words(span_s: float | None) -> str:
    """`` over the last 11 s`` for a figure measured over a window; "" for the probe's own
    latest interval (then no span is claimed)."""
    return f" over the last {span_s:.0f} s" if span_s else ""


def wait_words(
    wait: float | Sequence[float] | None,
    *,
    span_s: float | None = None,
    note: str | None = None,
    tight: bool = False,
    label: str = "data wait",
) -> str | None:
    """``data wait 34 % over the last 11 s`` (``wait``: one rank's, or several ranks' as
    ``12–34%``). Without a figure, the probe's ``note`` (why it cannot measure it): in full in
    prose, as `NOT_MEASURED` in a tight row. None where there is neither."""
    if wait is not None and (isinstance(wait, int | float) or len(wait) > 0):
        return f"{label} {_one_or_spread(wait, '.0f', '%' if tight else ' %')}" + \
            span_words(span_s)
    if note:
        return NOT_MEASURED if tight else clean(note, 200)
    return None


def step_words(step_ms: float | Sequence[float] | None) -> str | None:
    """``step 1,234 ms`` (or ``step 205–230 ms`` across ranks); None without a figure."""
    if step_ms is None or (not isinstance(step_ms, int | float) and not step_ms):
        return None
    return f"step {_one_or_spread(step_ms, ',.0f', ' ms')}"


def rate(value: float, *, tight: bool = False) -> str:
    """A samples/s figure: ``1,240``; ``12.3k`` in a tight row from 10,000 up."""
    if tight and value >= 10_000:
        return f"{value / 1000:.1f}k"
    return f"{value:,.0f}"


def throughput_words(
    samples_per_s: float | None, batches_per_s: float | None, *, tight: bool = False
) -> str | None:
    """``1,240 samples/s``, else ``1.5 batches/s`` (no batch size known); None for neither."""
    if samples_per_s is not None:
        return f"{rate(samples_per_s, tight=tight)} samples/s"
    if batches_per_s is not None:
        return f"{batches_per_s:,.1f} batches/s"
    return None


def framework_words(framework: str | None) -> str:
    """`` (torch)``: whose hooks measured; "" when the probe did not say."""
    return f" ({clean(framework, 16)})" if framework else ""


def silent_words(age_s: float | None, *, label: str = "silent") -> str | None:
    """``silent 12 s`` for a publication older than `PROBE_STALE_S`; None while fresh."""
    if age_s is None or age_s <= PROBE_STALE_S:
        return None
    return f"{label} {age_s:.0f} s"


def allocator_words(
    allocated_bytes: float | None, reserved_bytes: float | None, retries: int | None = None
) -> str | None:
    """``allocator 61.2/70.0 GiB · 4 alloc retries`` (allocated/reserved); None without a
    reserved figure."""
    if reserved_bytes is None:
        return None
    text = (f"allocator {allocated_bytes / _GIB:.1f}/{reserved_bytes / _GIB:.1f} GiB"
            if allocated_bytes is not None else f"reserved {reserved_bytes / _GIB:.1f} GiB")
    if retries:
        text += f" · {retries} alloc retries"
    return text


def allocator_detail(alloc: ProbeAlloc | None) -> str:
    """Every allocator figure, for a card suspected of fragmenting: ``alloc 61.2 GiB ·
    reserved 70.0 GiB · split 3.1 GiB · 4 retries · 0 OOMs``."""
    if alloc is None:
        return "allocator: no figures"
    parts = []
    for label, value in (("alloc", alloc.allocated_bytes), ("reserved", alloc.reserved_bytes),
                         ("split", alloc.inactive_split_bytes)):
        if value is not None:
            parts.append(f"{label} {value / _GIB:.1f} GiB")
    if alloc.alloc_retries is not None:
        parts.append(f"{alloc.alloc_retries} retries")
    if alloc.ooms is not None:
        parts.append(f"{alloc.ooms} OOMs")
    return " · ".join(parts) or "allocator: no figures"


def figures(parts: Iterable[str | None]) -> str:
    """The parts present, joined the one way every probe line joins them (`` · ``)."""
    return " · ".join(p for p in parts if p)


def note_line(note: str, who: str) -> str:
    """A probe's "not measured" note as a ``why`` line, saying whose it is."""
    return f"{clean(note, 200)}, said by the probe in the trainer ({who})"


class RankFigures(Protocol):
    """What `wait_sentence` reads of one trainer's window (`probe_ranks.Rank` has it)."""

    @property
    def wait_pct(self) -> float | None: ...

    @property
    def span_s(self) -> float: ...

    @property
    def step_ms(self) -> float | None: ...

    @property
    def samples_per_s(self) -> float | None: ...

    @property
    def batches_per_s(self) -> float | None: ...

    @property
    def who(self) -> str: ...


def wait_meaning(wait: float, th: Thresholds) -> str:
    """What a measured data wait means for the verdict, against the thresholds."""
    if wait >= th.data_wait_starving_pct:
        return "the loop spends that much of its time blocked on next(dataloader)"
    if wait >= th.data_wait_low_pct:
        # Not "input-bound": a few percent is often the batch handover itself, with the
        # workers idle and nothing upstream slow.
        return (f"some waiting for batches (≥ {th.data_wait_low_pct:.0f} %, "
                f"< {th.data_wait_starving_pct:.0f} %), too little to hold the card back alone")
    return "the wait is low: not waiting on data"


def wait_sentence(rank: RankFigures, th: Thresholds, *, phase: str | None = None,
                  guess: bool = False) -> str:
    """``why``'s measured line: ``data wait 43 % over the last 11 s, measured in the trainer
    (PID 100): <meaning>; step 210 ms · 512 samples/s``. ``phase``: the phase's words, said
    when it is not training; ``guess``: the card tie is only a local-rank guess."""
    wait = rank.wait_pct or 0.0
    line = (f"{wait_words(wait, span_s=rank.span_s)}, measured in the trainer ({rank.who}): "
            f"{wait_meaning(wait, th)}")
    extra = figures((step_words(rank.step_ms),
                     throughput_words(rank.samples_per_s, rank.batches_per_s)))
    if extra:
        line += "; " + extra
    if phase:
        line += f"; phase: {phase}"
    if guess:
        line += " (which card this trainer drives is a guess: local rank order)"
    return line


# --- the sampled stack: where a trainer is, where it waits ---------------------------------


class StackFigures(Protocol):
    """What the stack sentences read of one trainer's probe (`probe_facts.ProbeFacts`)."""

    @property
    def pid(self) -> int: ...
    @property
    def rank(self) -> int | None: ...
    @property
    def stack_still_s(self) -> float | None: ...
    @property
    def stack_phase(self) -> str | None: ...
    @property
    def stack_where(self) -> str | None: ...
    @property
    def stack_line(self) -> str | None: ...
    @property
    def stack_sig(self) -> str | None: ...


def _seconds(value: float) -> str:
    """``42 s``, ``3 min 20 s`` (as `wording.duration`, which this module cannot import)."""
    if value < 90:
        return f"{value:.0f} s"
    minutes, rest = divmod(round(value), 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def ranks_words(ranks: Sequence[int]) -> str:
    """``rank 3``, ``ranks 0–6`` (a run), ``ranks 0, 2, 5``."""
    ordered = sorted(set(ranks))
    if len(ordered) == 1:
        return f"rank {ordered[0]}"
    if ordered == list(range(ordered[0], ordered[-1] + 1)) and len(ordered) > 2:
        return f"ranks {ordered[0]}–{ordered[-1]}"
    return "ranks " + ", ".join(str(r) for r in ordered)


def _who(p: StackFigures) -> str:
    return f"rank {p.rank}" if p.rank is not None else f"the trainer (PID {p.pid})"


def place_words(stack_where: str | None, stack_line: str | None) -> str:
    """``in torch.distributed.all_reduce (train.py:88)``, ``at train.py:60`` (no framework
    function decided the phase), ``in an unknown place`` (no stack)."""
    where = clean(stack_where, 120) if stack_where else None
    line = clean(stack_line, 120) if stack_line else None
    if where and line:
        return f"in {where} ({line})"
    if where:
        return f"in {where}"
    if line:
        return f"at {line}"
    return "in an unknown place"


def frozen_lines(probes: Sequence[StackFigures]) -> list[str]:
    """Where each stopped trainer waits, and in a job of several ranks which one is elsewhere
    (the likely culprit): the ranks not in a collective while others wait in one, else a rank
    whose stack differs from all the others'."""
    lines = [f"{_who(p)} has waited {_seconds(p.stack_still_s or 0.0)} "
             f"{place_words(p.stack_where, p.stack_line)}" for p in probes]
    if len(probes) < 2:
        return lines
    ranked = [p for p in probes if p.rank is not None]
    waiting = [p for p in ranked if p.stack_phase == "collective"]
    elsewhere = [p for p in ranked if p.stack_phase != "collective"]
    if waiting and elsewhere:
        waiting_ranks = ranks_words([p.rank for p in waiting if p.rank is not None])
        other_ranks = ranks_words([p.rank for p in elsewhere if p.rank is not None])
        verb, be = ("waits" if len(waiting) == 1 else "wait",
                    "is" if len(elsewhere) == 1 else "are")
        places = ", ".join(place_words(p.stack_where, p.stack_line) for p in elsewhere[:3])
        lines.append(f"{waiting_ranks} {verb} in a collective; {other_ranks} {be} elsewhere "
                     f"({places}): the likely culprit")
        return lines
    sigs: dict[str | None, list[StackFigures]] = {}
    for p in ranked:
        sigs.setdefault(p.stack_sig, []).append(p)
    odd = [group[0] for group in sigs.values() if len(group) == 1]
    if len(ranked) >= 3 and len(sigs) == 2 and len(odd) == 1:
        culprit = odd[0]
        place = place_words(culprit.stack_where, culprit.stack_line)
        lines.append(f"{_who(culprit)}'s stack differs from the other ranks' ({place}): "
                     "the likely culprit")
    return lines


def phases_words(
    step_ms: float | None, phases: dict[str, float], *, tight: bool = False
) -> str | None:
    """``step 458 ms: data 72 % · forward 10 % · backward 12 % · optimizer 3 % · other 3 %``
    (``phases``: phase -> percent, `stack_shares`); None without a share. A share that
    rounds to 0 is left out."""
    from gpusat_tui.probe.phases import PHASE_WORDS

    parts = [f"{PHASE_WORDS.get(k, clean(k, 16))} {percent(v, tight=tight)}"
             for k, v in phases.items() if round(v) > 0]
    if not parts:
        return None
    head = f"step {step_ms:,.0f} ms: " if step_ms is not None else "step: "
    return head + " · ".join(parts)


def lines_words(lines: Iterable[tuple[str, int, str, float]], *, tight: bool = False) -> str | None:
    """``train.py:88 main 42 % · train.py:40 collate 12 %``: the user's hottest lines
    (file, line, function, percent), None without one."""
    parts = []
    for file, line, function, pct in lines:
        name = clean(file.rsplit("/", 1)[-1], 60)
        parts.append(f"{name}:{line} {clean(function, 40)} {percent(pct, tight=tight)}")
    return " · ".join(parts) or None
