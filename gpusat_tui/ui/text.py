"""Turning data (card names, process names, tool messages) into text that is shown literally.

Names come from vendor tools and from ``/proc``: anyone can name a process ``[bold]x[/]`` or put
an escape sequence in it. Everything shown on screen from data goes through `literal`, which
returns a `rich.text.Text` (never parsed as markup) with control characters made visible, so a
hostile or odd name can neither restyle the screen nor move the cursor.
"""

from __future__ import annotations

import re
import unicodedata

from rich.text import Text

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(value: object, limit: int = 200) -> str:
    """Plain, single-line, printable text: escapes removed, controls shown as ``?``.

    ``limit`` bounds the length so a pathological name cannot cost a big repaint.
    """
    text = "" if value is None else str(value)
    text = _ANSI_RE.sub("", text)
    text = text.replace("\n", " ").replace("\t", " ").replace("\r", " ")
    text = _CONTROL_RE.sub("?", text)
    if not text.isascii():
        # Unicode line/paragraph separators, bidi overrides and zero-width characters could
        # still break a line or reorder what is shown: make them visible too.
        text = "".join(_visible(ch) for ch in text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def _visible(ch: str) -> str:
    if ch.isprintable():
        return ch
    category = unicodedata.category(ch)
    return " " if category == "Zs" else "?"


def literal(value: object, style: str = "", limit: int = 200) -> Text:
    """A `Text` that displays ``value`` exactly (after `clean`), never interpreting markup."""
    return Text(clean(value, limit), style=style, no_wrap=True, overflow="ellipsis")


def fmt(value: float | None, unit: str = "", digits: int = 0, none: str = "n/a") -> str:
    """Format a figure that may be missing: ``None`` reads as ``n/a``, never as 0."""
    if value is None:
        return none
    return f"{value:.{digits}f}{unit}"
