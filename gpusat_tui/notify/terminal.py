"""The terminal's own notifications: the bell, and a desktop notification through OSC 9
(iTerm2, WezTerm, Windows Terminal, kitty, foot, Ghostty) and OSC 777 (urxvt, foot, WezTerm,
Ghostty, VTE terminals with the patch). Pure: these build the bytes; the dashboard writes them.

Inside tmux, OSC sequences reach the outer terminal only wrapped in tmux's passthrough (DCS
``tmux;`` with every ESC doubled) and with ``set -g allow-passthrough on`` (tmux 3.3+); the bell
needs no wrapping (tmux relays it as its ``bell-action`` says). The text is cleaned first: no
escape or control character from a verdict's wording or a host name reaches the terminal, and
OSC 777's ``;`` separators cannot be forged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from gpusat_tui.text import clean

__all__ = ["TERMINAL_MODES", "in_tmux", "sequences"]

#: ``--terminal-notify``: all (bell, OSC 9, OSC 777), bell only, or nothing.
TERMINAL_MODES = ("all", "bell", "off")
BEL = "\a"


def in_tmux(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return bool(env.get("TMUX"))


def _tmux_wrap(sequence: str) -> str:
    return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"


def sequences(title: str, text: str, mode: str = "all", tmux: bool = False) -> str:
    """What to write to the terminal for one notice in ``mode`` (see `TERMINAL_MODES`)."""
    if mode == "off":
        return ""
    if mode == "bell":
        return BEL
    title = clean(title, 80).replace(";", ",")
    text = clean(text, 400)
    osc9 = f"\x1b]9;{title}: {text}{BEL}"
    osc777 = f"\x1b]777;notify;{title};{text.replace(';', ',')}{BEL}"
    if tmux:
        osc9, osc777 = _tmux_wrap(osc9), _tmux_wrap(osc777)
    return BEL + osc9 + osc777
