"""Helpers for the box tables several vendor tools print (cnmon, mthreads-gmi, npu-smi, brsmi...).

These tools draw nvidia-smi-like tables whose spacing shifts between versions, so the parsers
read cells by content, never by column offsets. What is the same for all of them lives here;
each parser keeps its own patterns for what differs (bus-id forms, header words, units).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from gpusat_tui.collectors.base import ReadingFigures, num

__all__ = [
    "box_blocks",
    "box_cells",
    "celsius_token",
    "first_group",
    "header_index",
    "is_rule",
    "mem_pair",
    "power_pair",
    "sentinel_to_none",
]

#: What a card in a broken state reports instead of a reading (0xFFFF W: an Iluvatar BI-V100
#: prints ``65535W / 250``). Never a real figure on any accelerator.
SENTINELS = frozenset({65535.0, 65534.0, 4294967295.0})


def sentinel_to_none(value: float | None) -> float | None:
    """``value``, or None when it is one of `SENTINELS`."""
    return None if value in SENTINELS else value

_CELSIUS_RE = re.compile(r"^(-?\d+(?:\.\d+)?)C$")
_FIG = r"(\d+(?:\.\d+)?|N/A|NA)"
# "88W /  600W", "N/A / N/A", "97W / NA", "65535W / 250" (cap without its unit): a figure that is
# a whole token on each side of the slash, so "N/A   22C   N/A  96W / 600W" reads 96 / 600.
# The usage carries a W or is N/A, so a memory cell ("60982/65536 MiB") is never a power pair.
_POWER_PAIR_RE = re.compile(
    rf"(?:^|\s)(\d+(?:\.\d+)?\s*W|N/A|NA)\s*/\s*{_FIG}\s*W?(?=\s|$)"
)
# "768MiB /  98304MiB", "512Mib / 32768Mib", "858/65536 MiB" (used without its unit).
_MEM_PAIR_RE = re.compile(rf"(?:^|\s){_FIG}\s*(?:Mi[Bb])?\s*/\s*{_FIG}\s*Mi[Bb]")


def box_cells(line: str) -> list[str]:
    """``| a | b | c |`` -> ``["a", "b", "c"]``, each cell stripped.

    Every leading and trailing ``|`` goes, so a row drawn with a doubled border still has its
    first cell first.
    """
    return [c.strip() for c in line.strip().strip("|").split("|")]


def first_group(pattern: re.Pattern[str], lines: Iterable[str]) -> str | None:
    """Group 1 of ``pattern`` in the first line where it matches (a version banner), else None.

    Searched line by line, not on the whole text, so a ``\\s*`` in the pattern never reaches
    into the next line.
    """
    for line in lines:
        match = pattern.search(line)
        if match:
            return match.group(1)
    return None


def header_index(lines: Sequence[str], *words: str) -> int | None:
    """Index of the first line that contains every one of ``words`` (the table's header)."""
    return next((i for i, line in enumerate(lines) if all(w in line for w in words)), None)


def celsius_token(tokens: Iterable[str]) -> str | None:
    """The first token that is a bare Celsius figure (``"48C"``, ``"-5.5C"``), else None."""
    return next((t for t in tokens if _CELSIUS_RE.match(t)), None)


def is_rule(line: str) -> bool:
    """A border or separator row (``+---+``, ``|===+===|``, ``|------|``), not a content row."""
    stripped = line.strip()
    return bool(stripped) and set(stripped) <= set("|=+-: ")


def box_blocks(
    lines: Sequence[str], start: int, stop_words: Iterable[str] = ("Process",)
) -> list[list[list[str]]]:
    """The card blocks of an nvidia-smi-like table, from ``start`` (the line after its header).

    A block is the run of content rows between two rules (two rows on most tools, three on a
    Kunlunxin P800), each row split into cells. Reading ends at a blank line, at a line that
    does not start with ``|`` or ``+``, or at one containing a ``stop_words`` entry (the process
    box). Blocks whose first cell does not start with a digit (a header that repeats) are
    dropped, so callers see card blocks only.
    """
    stops = tuple(stop_words)
    blocks: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in lines[start:]:
        stripped = line.strip()
        if not stripped or not stripped.startswith(("|", "+")) or any(w in stripped for w in stops):
            break
        if is_rule(stripped):
            if current:
                blocks.append(current)
            current = []
            continue
        current.append(box_cells(stripped))
    if current:
        blocks.append(current)
    return [b for b in blocks if b[0] and b[0][0][:1].isdigit()]


def power_pair(cell: str) -> tuple[str, str] | None:
    """``(usage, cap)`` tokens of a ``Pwr:Usage/Cap`` cell, or None when it has no pair."""
    match = _POWER_PAIR_RE.search(cell)
    return (match.group(1).rstrip("W ").strip(), match.group(2)) if match else None


def mem_pair(cell: str) -> tuple[str, str] | None:
    """``(used, total)`` tokens of a ``Memory-Usage`` cell in MiB, or None when it has none."""
    match = _MEM_PAIR_RE.search(cell)
    return (match.group(1), match.group(2)) if match else None


def box_process_rows(
    lines: Sequence[str], header: str, min_tokens: int = 3
) -> Iterator[list[str]]:
    """The rows of a boxed process table after ``header``, as tokens, each starting with the
    card index and the PID (nvidia-smi's layout, copied by hl-smi, ixsmi, mx-smi and xpu-smi).

    Rows that do not start with two numbers (the table's own header, an idle card's ``N/A``
    row) are left out; what follows the PID is each tool's own business.
    """
    at = header_index(lines, header)
    if at is None:
        return
    for line in lines[at + 1:]:
        stripped = line.strip()
        if not stripped.startswith("|"):
            continue
        tokens = " ".join(box_cells(stripped)).split()
        if len(tokens) >= min_tokens and tokens[0].isdigit() and tokens[1].isdigit():
            yield tokens


#: A PCI bus id as the boxed tables print it: ``0000:18:00.0``.
BUS_ID_RE = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")


@dataclass(frozen=True)
class BoxCard:
    """The cells of one card in an nvidia-smi-style box table, as most copies lay them out.

    First row: ``index name [flags] | bus id | ...``; second row: ``... temp ... power/cap |
    used / total memory | util [compute mode]``. Each tool reads its own extras from the rows.
    """

    index: int
    name: str | None
    bus_id: str | None
    first: list[str]
    second: list[str]
    #: The second row's first cell (temperature, power, perf state) and the tokens of its third
    #: (utilisation, compute mode).
    left: str
    right: list[str]
    power: tuple[str, str] | None
    mem: tuple[str, str] | None

    def figures(self) -> ReadingFigures:
        """The CardReading figures every such table gives in the same cells."""
        mem, power = self.mem, self.power
        return {
            "util_pct": num(self.right[0]) if self.right else None,
            "mem_used_mib": num(mem[0]) if mem else None,
            "mem_total_mib": (num(mem[1]) or None) if mem else None,
            "power_w": num(power[0]) if power else None,
            "power_cap_w": num(power[1]) if power else None,
            "temp_c": num(celsius_token(self.left.split())),
        }


def box_card(
    block: list[list[str]], flags: Iterable[str], *, rows: int = 2
) -> BoxCard | None:
    """`BoxCard` of one block of `box_blocks`, or None for a block that is not a card.

    ``flags`` are trailing words of the name cell that are not the name (``On``, ``N/A``);
    ``rows`` is how many rows a card block needs.
    """
    first = block[0]
    head = first[0].split()
    if len(block) < rows or not head or not head[0].isdigit():
        return None
    names = head[1:]
    flags = {f.lower() for f in flags}
    while names and names[-1].lower() in flags:
        names.pop()
    second = block[1] if len(block) > 1 else []
    left = second[0] if second else ""
    return BoxCard(
        index=int(head[0]),
        name=" ".join(names) or None,
        bus_id=next((t for t in (first[1].split() if len(first) > 1 else [])
                     if BUS_ID_RE.match(t)), None),
        first=first,
        second=second,
        left=left,
        right=second[2].split() if len(second) > 2 else [],
        power=power_pair(left),
        mem=mem_pair(second[1]) if len(second) > 1 else None,
    )
