"""Cards a tool lists but gives no figure for: kept, with a note naming what the tool said.

A card in trouble (fallen off the bus, needing a reset, a driver that lost it) is often still
listed, every figure ``[N/A]``, ``[Unknown Error]``, ``[Not Supported]`` or ``ERR!``. Such a card
stays in the reading with null figures, so the user sees that it went dark rather than that it
is gone; the note says what the tool printed instead of figures.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from gpusat_tui.model import CardReading

__all__ = ["FIGURES", "block_cards", "dark_card_notes", "said_instead", "vet_dark_cards"]

#: The figures a card reading carries; a card with none of them is dark.
FIGURES = ("util_pct", "mem_used_mib", "mem_total_mib", "power_w", "power_cap_w", "temp_c")
#: What tools print where a figure should be: a bracketed word (nvidia-smi's csv), or a bare
#: marker (the tables).
_SAID_RE = re.compile(
    r"\[[A-Za-z][^\]\[]{0,40}\]|\bUnknown Error\b|\bNot Supported\b|\bERR!|\bN/A\b", re.IGNORECASE
)
_MAX_WORDS = 4


def said_instead(cells: Iterable[str]) -> list[str]:
    """The distinct no-figure markers in ``cells``, in order (at most a few)."""
    words: dict[str, None] = {}
    for cell in cells:
        for match in _SAID_RE.finditer(cell):
            words.setdefault(match.group(), None)
            if len(words) >= _MAX_WORDS:
                return list(words)
    return list(words)


def dark_card_notes(tool: str, cards: Iterable[tuple[CardReading, Iterable[str]]]) -> list[str]:
    """One note per card with no figure at all, from (card, the cells the tool printed for it)."""
    notes: list[str] = []
    for card, cells in cards:
        if card.rejected or any(getattr(card, name) is not None for name in FIGURES):
            continue
        words = said_instead(cells)
        said = f"it printed {' / '.join(words)}" if words else "its row has no figure"
        notes.append(
            f"{tool}: {card.id} reports no figure ({said}): kept with empty figures; "
            "the card is listed but not answering"
        )
    return notes


def block_cards(
    tool: str,
    blocks: Iterable[list[list[str]]],
    make: Callable[[list[list[str]]], CardReading | None],
) -> tuple[list[CardReading], list[str]]:
    """The cards ``make`` reads from the blocks of a box table, and the notes of dark ones.

    What the tool said for a card is every cell of its block but the first (index and name).
    """
    cards: list[CardReading] = []
    said: list[list[str]] = []
    for block in blocks:
        card = make(block)
        if card is not None:
            cards.append(card)
            said.append([cell for row in block for cell in row][1:])
    return cards, dark_card_notes(tool, zip(cards, said, strict=True))


def vet_dark_cards(
    cards: Iterable[CardReading], notes: list[str], tool: str, said: set[str]
) -> bool:
    """Each dark card told once while it stays dark (again if it comes back and goes dark).

    A parser's note (which names what the tool printed) is kept the first time and dropped
    after; a card no parser spoke for gets a plain note. True when a card went dark now (the
    tool's output is then worth keeping).
    """
    told = False
    for card in cards:
        key = f"dark:{tool}:{card.id}"
        if card.rejected or any(getattr(card, name) is not None for name in FIGURES):
            # A figure that cannot be is a figure given (and said by its own note).
            said.discard(key)
            continue
        mine = [n for n in notes if n.startswith(f"{tool}: {card.id} reports no figure")]
        if key in said:
            for note in mine:
                notes.remove(note)
            continue
        said.add(key)
        told = True
        if not mine:
            notes.extend(dark_card_notes(tool, [(card, [])]))
    return told
