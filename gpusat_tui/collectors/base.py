"""The shape every vendor collector shares.

A collector module is small and declarative: it says how to find its tool (executable names,
usual install folders), which command lines to run (`Query`), and how to turn each output into
figures with a *pure* ``parse(text) -> ToolReading``. The live source does all process
handling (timeouts, killing, fallback) the same way for every vendor, so a parser never does I/O
and is tested on captured text alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from gpusat_tui.collectors.dark_cards import vet_dark_cards
from gpusat_tui.collectors.records import Framer, LineRecords
from gpusat_tui.model import FIGURE_BOUNDS, CardProcess, CardReading, Vendor
from gpusat_tui.text import strip_escapes

__all__ = [
    "NA_TOKENS",
    "FigureName",
    "Query",
    "ReadingFigures",
    "Stream",
    "ToolReading",
    "ToolSpec",
    "card_args",
    "merge_cards",
    "num",
    "resolve_process_cards",
    "strip_ansi",
    "vet_reading",
]


#: The name of a figure of `CardReading` that a column of a tool's table fills.
FigureName = Literal[
    "util_pct", "mem_used_mib", "mem_total_mib", "mem_pct", "power_w", "power_cap_w", "temp_c"
]


class ReadingFigures(TypedDict, total=False):
    """`CardReading` figures gathered by name before the reading is built (``**figures``)."""

    util_pct: float | None
    mem_used_mib: float | None
    mem_total_mib: float | None
    mem_pct: float | None
    power_w: float | None
    power_cap_w: float | None
    temp_c: float | None


@dataclass
class ToolReading:
    """What one tool's output says: its cards, the processes it lists, its version."""

    cards: list[CardReading] = field(default_factory=list)
    processes: list[CardProcess] = field(default_factory=list)
    version: str | None = None
    #: Plain-language remarks about this output (a card the tool could not read, say), for
    #: the Frame's ``notes``. Additive: parsers that have nothing to say leave it empty.
    notes: list[str] = field(default_factory=list)
    #: The tool's text, set only when this output had something wrong with it (impossible
    #: figures, a card listed twice, no card at all) so the poll's Frame keeps it in ``raw``.
    raw: str = ""


@dataclass(frozen=True)
class Query:
    """One command line of a tool and the pure parser of its output.

    ``optional`` queries are enrichments (extra flags, process lists). When one is refused
    (non-zero exit, usage text, ParseError) the live source stops asking for it for the rest of
    the session and the cards from the required queries are kept: no card is ever lost because
    an older tool lacks a flag.
    """

    name: str
    args: tuple[str, ...]
    parse: Callable[[str], ToolReading]
    optional: bool = False
    #: For a required query: what to run instead when this one is refused (an older tool
    #: without ``--query-gpu``, say). Once used, the fallback stays for the session.
    fallback: Query | None = None
    #: As a fallback: tried only when the refused query's output contains this text (the
    #: refusal names what it did not know: nvidia-smi's ``Field "clocks_event_reasons.active"
    #: is not a valid field to query``). Otherwise the chain goes on past it, so a transient
    #: failure does not drop a field for the session. None: always tried.
    only_after: str | None = None
    #: Run once per card, with ``{index}`` in ``args`` replaced by each card's index from the
    #: required queries (``npu-smi info -t usages -i {index}``). Only for optional queries.
    #: Other ``{name}`` placeholders are filled from the card's ``extras`` (see `card_args`):
    #: an Atlas A3 chip is addressed as ``-i {npu_id} -c {chip_id}``, not by its card index.
    per_card: bool = False
    #: The query lists the processes on the cards (``--query-compute-apps``, ``--showpids``).
    #: They change far more slowly than the figures, so an optional process query runs on one
    #: poll in ``enrich_every`` and its last answer stands in between: half the tool calls of
    #: a poll, for a trainer that shows up at most a few seconds late.
    process_list: bool = False


@dataclass(frozen=True)
class Stream:
    """A tool's long-lived mode: one child per tool printing a record every period.

    ``tegrastats``, ``neuron-monitor`` and the loop modes of tools otherwise called every poll
    (``nvidia-smi ... -lms N``). The live source starts one child, reads it record by record
    (`framer`), keeps only the newest record and parses it (``parse``: pure, one record's text
    -> readings) when a poll wants it; it kills the child's whole process group when the
    monitor stops, restarts it with back-off when it exits, and lets the last record stand in,
    with its age as ``stale_s``, when the child goes quiet. The cost it saves: one fork+exec
    (and, for NVIDIA, one driver initialisation) per poll; what it costs: a record is up to
    one period old when read.

    ``args`` and ``config`` may hold ``{interval_ms}`` and ``{interval_s}`` (the poll interval,
    the second at least 1), filled in when the child starts; ``{config}`` in ``args`` is the path
    of a private file holding ``config`` (neuron-monitor's JSON configuration).
    """

    name: str
    args: tuple[str, ...]
    parse: Callable[[str], ToolReading]
    #: A fresh framer per child: how lines become records (`collectors.records`).
    framer: Callable[[], Framer] = LineRecords
    config: str | None = None
    #: The shortest period the tool can be asked for (neuron-monitor: 1 s).
    min_period_s: float = 0.0
    #: Read through a pseudo-terminal instead of a pipe, for tools whose C stdio buffers a
    #: pipe by 4 KiB and would deliver records in bursts (npu-smi, per its users' ``stdbuf
    #: -oL``). Costs a pty per child, and a tty makes some tools add colour (stripped anyway).
    pty: bool = False
    #: For a tool that is also called per poll (its spec has required queries): whether this
    #: stream is the default. Measured in benchmarks/bench_live.py; see the README.
    preferred: bool = True


@dataclass(frozen=True)
class ToolSpec:
    """How to find and read one vendor tool."""

    #: Display / error name, e.g. "hy-smi".
    tool: str
    vendor: Vendor
    #: Executable names to look up, in order (e.g. ("xpu_smi", "xpu-smi")).
    names: tuple[str, ...]
    #: Vendor install folders searched after PATH.
    search_dirs: tuple[str, ...] = ()
    queries: tuple[Query, ...] = ()
    #: Tools in the same group see the same cards (hy-smi / dcu-smi / rocm-smi on a DCU
    #: machine; NVML / nvidia-smi): only the first one found in a group is used.
    group: str = ""
    #: Lower runs first inside a group.
    priority: int = 0
    #: Given the required query's output, is this really our tool? (Intel's ``xpu-smi`` vs
    #: Kunlunxin's.) Returning False means "not ours": no cards, no error storm.
    identify: Callable[[str], bool] | None = None
    #: Honest label for collectors never checked against a real card.
    untested: bool = False
    #: In-process reader (NVML) used instead of running ``queries``: called in a worker
    #: thread, raises ToolMissing when its library is absent so the group falls back.
    reader: Callable[[], ToolReading] | None = None
    #: Makes a fresh in-process reader for one live source, given its ``enrich_every`` (a
    #: reader that keeps state between polls: NVML's static fields, GPM samples, the last
    #: process list). When set, the live source uses it instead of ``reader``.
    new_reader: Callable[[int], Callable[[], ToolReading]] | None = None
    #: A streaming mode (`Stream`): the only way to read tools that have no one-shot view
    #: (tegrastats, neuron-monitor); for others it replaces the required queries while the
    #: optional ones (process lists) are still called every few polls.
    stream: Stream | None = None

    @property
    def env_var(self) -> str:
        """Override variable, e.g. GPUSAT_TOOL_HY_SMI=/opt/hyhal/bin/hy-smi."""
        return "GPUSAT_TOOL_" + re.sub(r"[^A-Z0-9]", "_", self.tool.upper())


def card_args(args: Sequence[str], card: CardReading) -> tuple[str, ...]:
    """Fill a per-card query's placeholders for one card.

    ``{index}`` is the card index; any other ``{name}`` comes from ``card.extras`` (integral
    floats are written as integers: ``{npu_id}`` -> ``3``). Raises KeyError when the card lacks
    a placeholder's value, so the caller can skip that card instead of running a wrong command.
    """
    values: dict[str, object] = {}
    for key, value in card.extras.items():
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        values[key] = value
    values["index"] = card.index
    return tuple(arg.format_map(values) if "{" in arg else arg for arg in args)


def vet_reading(
    reading: ToolReading, tool: str, *, expect_cards: bool, said: set[str] | None = None
) -> bool:
    """Check what a parser made of one output, in place; True when its raw text should be kept.

    * figures outside `model.FIGURE_BOUNDS` were already made None by `CardReading`; each
      (tool, figure, card) gets one note;
    * a card index listed twice in one output: the first row is kept, the later ones dropped
      (mixing two rows' figures into one card would make statistics of neither), one note;
    * an output that should list cards (``expect_cards``: a required query) but lists none
      (a tool printing only its table header): one note;
    * a card listed with no figure at all is kept (empty figures), one note while it stays
      dark (`dark_cards`).

    ``said`` holds the keys of notes already given this session, so each is said once.
    """
    said = said if said is not None else set()
    keep = False

    def note(key: str, text: str) -> None:
        if key not in said:
            said.add(key)
            reading.notes.append(text)

    kept: list[CardReading] = []
    seen: set[int] = set()
    for card in reading.cards:
        if card.index in seen:
            keep = True
            note(f"duplicate:{tool}:{card.index}",
                 f"{tool} listed card {card.id} more than once in one output: the first row "
                 "is kept, the others dropped")
            continue
        seen.add(card.index)
        kept.append(card)
        for name, value in card.rejected.items():
            keep = True
            low, high = FIGURE_BOUNDS.get(name, (None, None))
            possible = f"{low:g} to {high:g}" if low is not None and high is not None else (
                "at most the card's total memory")
            if name == "mem_used_mib" and high is not None and 0 <= value <= high:
                possible = "at most the card's total memory"
            note(f"bounds:{tool}:{card.id}:{name}",
                 f"{tool} gave {name} = {value:g} for {card.id}, which cannot be (possible: "
                 f"{possible}): treated as missing; the tool's output is kept in the poll's raw")
    reading.cards = kept
    if vet_dark_cards(kept, reading.notes, tool, said):
        keep = True
    if expect_cards and not kept:
        keep = True
        note(f"no-cards:{tool}",
             f"{tool} answered but listed no card (only a header, or no device visible): "
             "nothing to show from it")
    return keep


# --- small parsing helpers every parser uses -------------------------------------------------

#: Tokens tools print for "no figure". Compared case-insensitively after stripping brackets.
NA_TOKENS = frozenset(
    {
        "n/a", "na", "[n/a]", "not supported", "[not supported]", "err!", "unknown error",
        "[unknown error]", "-", "--", "", "unsupported", "none", "not found", "[not found]",
        "nan", "unknown",
    }
)

_NUM_RE = re.compile(r"[-+]?\d+(?:\.\d+)?")


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences some tools print even into a pipe (the one pattern,
    `gpusat_tui.text.ESCAPE_RE`, that also cleans what is shown)."""
    return strip_escapes(text)


def num(token: str | None) -> float | None:
    """First number in a cell (``"49.0C"`` -> 49.0, ``"300.0W"`` -> 300.0), or None for N/A.

    Units are the caller's business; this only refuses the many spellings of "no figure".
    """
    if token is None:
        return None
    cleaned = token.strip()
    # Most cells are a plain decimal ("75", "404.00"), which the search below would match
    # whole: float() of it is the same figure for a fifth of the work (8 cards' csv is ~60
    # cells a poll). ASCII only: float() also reads other scripts' digits, \d as well, but
    # keep one reading of them (the regex path) rather than two.
    whole, dot, frac = cleaned.partition(".")
    if whole.isdigit() and whole.isascii() and (not dot or (frac.isdigit() and frac.isascii())):
        return float(cleaned)
    cleaned = cleaned.lower()
    if cleaned in NA_TOKENS or cleaned.strip("[]") in NA_TOKENS:
        return None
    match = _NUM_RE.search(cleaned)
    return float(match.group()) if match else None


def resolve_process_cards(
    cards: Iterable[CardReading], processes: Iterable[CardProcess]
) -> list[CardProcess]:
    """Map processes whose ``card_id`` is ``"uuid:<UUID>"`` or ``"bus:<BUS-ID>"`` to real ids.

    Some process queries name the card by UUID or PCI bus id, not by index (nvidia-smi
    ``--query-compute-apps``); the parser cannot know indices, so it says what it saw and this
    maps it. Processes whose card is unknown are kept with the id they had. A process listed
    twice for the same card (by two queries of one tool: a table and a process query) is kept
    once: the first listing wins and the later one only fills its missing name or memory.
    """
    cards = list(cards)
    by_uuid = {c.uuid: c.id for c in cards if c.uuid}
    by_bus = {c.bus_id.lower(): c.id for c in cards if c.bus_id}
    resolved: list[CardProcess] = []
    seen: dict[tuple[int, str], int] = {}
    for proc in processes:
        kind, _, key = proc.card_id.partition(":")
        card_id = proc.card_id
        if kind == "uuid" and key in by_uuid:
            card_id = by_uuid[key]
        elif kind == "bus" and key.lower() in by_bus:
            card_id = by_bus[key.lower()]
        if card_id != proc.card_id:
            proc = proc.model_copy(update={"card_id": card_id})
        at = seen.get((proc.pid, card_id))
        if at is not None:
            first = resolved[at]
            fill = {
                name: getattr(proc, name)
                for name in ("name", "mem_used_mib")
                if getattr(first, name) is None and getattr(proc, name) is not None
            }
            if fill:
                resolved[at] = first.model_copy(update=fill)
            continue
        seen[(proc.pid, card_id)] = len(resolved)
        resolved.append(proc)
    return resolved


def merge_cards(base: Iterable[CardReading], extra: Iterable[CardReading]) -> list[CardReading]:
    """Fill gaps in ``base`` cards with figures from an enrichment query, matched by card id.

    The default view wins where both have a figure; extras are merged. Cards only the
    enrichment knows are not added: the default view is the source of truth for which cards
    exist.
    """
    # By id, not index: the parts of one card (MIG instances) share its index.
    by_id = {c.id: c for c in extra}
    merged: list[CardReading] = []
    for card in base:
        other = by_id.get(card.id)
        if other is None:
            merged.append(card)
            continue
        updates = {
            name: getattr(other, name)
            for name in CardReading.model_fields
            if getattr(card, name) is None and getattr(other, name) is not None
        }
        extras = {**other.extras, **card.extras}
        merged.append(card.model_copy(update={**updates, "extras": extras}))
    return merged
