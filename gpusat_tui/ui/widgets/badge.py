"""The verdict badge: a word plus a CSS class per verdict, so it reads with or without colour."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from gpusat_tui.model import VERDICT_KINDS

VERDICT_CLASSES: tuple[str, ...] = tuple(f"-{kind}" for kind in VERDICT_KINDS)


def badge_word(kind: str, cause: str | None = None, *, short: bool = False) -> str:
    """``STARVING (input-bound)``; ``short`` drops the cause for compact rows."""
    word = kind.upper() if kind in VERDICT_KINDS else "UNKNOWN"
    if cause and not short and kind == "starving":
        word = f"{word} ({cause})"
    return word


class VerdictBadge(Static):
    """Coloured by its ``-<verdict>`` class from the theme (gpusat.tcss), never by inline hex."""

    kind: reactive[str] = reactive("unknown")
    cause: reactive[str | None] = reactive(None)

    def __init__(self, *, short: bool = False, id: str | None = None) -> None:
        super().__init__("", id=id, classes="badge -unknown")
        self.short = short

    def _apply(self) -> None:
        # Only swap classes when the verdict really changed: a class change restyles the node.
        wanted = f"-{self.kind}" if self.kind in VERDICT_KINDS else "-unknown"
        if not self.has_class(wanted):
            self.remove_class(*VERDICT_CLASSES)
            self.add_class(wanted)
        self.update(Text(f" {badge_word(self.kind, self.cause, short=self.short)} "))

    def on_mount(self) -> None:
        self._apply()

    def watch_kind(self) -> None:
        if self.is_mounted:
            self._apply()

    def watch_cause(self) -> None:
        if self.is_mounted:
            self._apply()
