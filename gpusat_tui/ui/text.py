"""Turning data (card names, process names, tool messages) into text that is shown literally.

Names come from vendor tools and from ``/proc``: anyone can name a process ``[bold]x[/]`` or put
an escape sequence in it. Everything shown on screen from data goes through `literal`, which
returns a `rich.text.Text` (never parsed as markup) of `gpusat_tui.text.clean` (the one
sanitiser, shared with ``check`` and ``report``), so a hostile or odd name can neither restyle the
screen nor move the cursor.
"""

from __future__ import annotations

from rich.text import Text

from gpusat_tui.text import clean

__all__ = ["fmt", "literal"]


def literal(value: object, style: str = "", limit: int = 200) -> Text:
    """A `Text` that displays ``value`` exactly (after `clean`), never interpreting markup."""
    return Text(clean(value, limit), style=style, no_wrap=True, overflow="ellipsis")


def fmt(value: float | None, unit: str = "", digits: int = 0, none: str = "n/a") -> str:
    """Format a figure that may be missing: ``None`` reads as ``n/a``, never as 0."""
    if value is None:
        return none
    return f"{value:.{digits}f}{unit}"
