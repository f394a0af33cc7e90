"""The one sanitiser: text from a tool, a process or a recording, made safe to print.

Names and messages come from vendor tools, from ``/proc`` and from recordings: anyone can name a
process ``\\x1b]0;owned\\x07`` or ``[bold]x[/]``, or put a newline in it. Every plain-text output
(``check``, ``report``, messages on stderr) and the dashboard (`gpusat_tui.ui.text.literal`)
pass such strings through `clean` (one line) or `clean_block` (several lines), so nothing can
set the terminal's title, clear it, move the cursor, recolour it or split a table row. Markup is
not touched here: plain text is never parsed as markup, and the dashboard renders through
``rich.text.Text``, which never parses it either. JSON output is never cleaned: JSON escapes
control characters itself, and scripts must get the exact strings.

No dependency beyond the standard library, so ``check`` and ``report`` stay light.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["ESCAPE_RE", "clean", "clean_block", "strip_escapes"]

#: Terminal escape sequences: CSI (``ESC [ ... final``), OSC (``ESC ] ... BEL`` or ``ESC \\``,
#: or unterminated), DCS/PM/APC strings, and two-byte ``ESC x`` sequences.
ESCAPE_RE = re.compile(
    r"\x1b\[[0-9;:<=>?]*[ -/]*[@-~]"
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[ -/]*[0-~]"
    r"|\x9b[0-9;:<=>?]*[ -/]*[@-~]"
)
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_KEEP_NL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def strip_escapes(text: str) -> str:
    """Remove escape sequences, keep everything else (parsers use it on tool output)."""
    return ESCAPE_RE.sub("", text) if ("\x1b" in text or "\x9b" in text) else text


def clean(value: object, limit: int = 200) -> str:
    """Plain, single-line, printable text: escapes removed, controls shown as ``?``.

    Newlines, tabs and carriage returns become spaces (a name cannot split a row); Unicode
    line separators, bidi overrides and zero-width characters become ``?`` too. ``limit``
    bounds the length (with ``…``) so a pathological name cannot cost a big repaint or bury a
    report.
    """
    text = "" if value is None else str(value)
    text = strip_escapes(text)
    text = text.replace("\n", " ").replace("\t", " ").replace("\r", " ")
    text = _CONTROL_RE.sub("?", text)
    if not text.isascii():
        text = "".join(_visible(ch) for ch in text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def clean_block(text: str) -> str:
    """Like `clean` for a block of lines: newlines stay, all else is cleaned, no length cap.

    A last line of defence on whole outputs; fields that go into one row still need `clean`,
    or a newline inside them would split the row.
    """
    text = strip_escapes(text).replace("\r\n", "\n").replace("\r", " ").replace("\t", " ")
    text = _CONTROL_KEEP_NL_RE.sub("?", text)
    if not text.isascii():
        text = "".join(ch if ch == "\n" else _visible(ch) for ch in text)
    return text


def _visible(ch: str) -> str:
    if ch.isprintable():
        return ch
    return " " if unicodedata.category(ch) == "Zs" else "?"
