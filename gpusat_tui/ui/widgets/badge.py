"""The verdict badge's word. Widgets draw it with a component class per verdict (colour from the
theme), and the word itself says the verdict, so it reads with or without colour."""

from __future__ import annotations

from gpusat_tui.model import VERDICT_KINDS

VERDICT_CLASSES: tuple[str, ...] = tuple(f"-{kind}" for kind in VERDICT_KINDS)


def badge_word(kind: str, cause: str | None = None, *, short: bool = False) -> str:
    """``STARVING (input-bound)``; ``short`` drops the cause for compact rows."""
    word = kind.upper() if kind in VERDICT_KINDS else "UNKNOWN"
    if cause and not short and kind == "starving":
        word = f"{word} ({cause})"
    return word
