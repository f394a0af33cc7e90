"""What a value on the command line may be: bounded numbers, sizes, durations, URLs.

Each is an argparse ``type``: text in, a typed value out, or an ``ArgumentTypeError`` whose
message quotes the text cleaned (a value is typed by a person, or pasted from anywhere). The
bounds are this program's: plain digits reach 1e308 or ``inf``, which no option means.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable

from gpusat_tui.text import clean

__all__ = [
    "MAX_DURATION_S",
    "MAX_NOTIFY_S",
    "byte_size",
    "duration",
    "notify_duration",
    "parse_tool_override",
    "positive_float",
    "positive_int",
    "seconds_within",
    "webhook_url",
]


def parse_tool_override(text: str) -> tuple[str, str]:
    """``--tool hygon=/opt/hyhal/bin/hy-smi`` -> ("hygon", path). Key: a vendor or a tool name."""
    key, sep, path = text.partition("=")
    if not sep or not key or not path:
        from gpusat_tui.model import VENDORS

        raise argparse.ArgumentTypeError(
            f"--tool expects VENDOR=PATH or TOOL=PATH (vendors: {', '.join(VENDORS)}), got {text!r}"
        )
    return key.strip(), path.strip()


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def seconds_within(low: float, high: float) -> Callable[[str], float]:
    """An option's seconds, finite and in [low, high] (``1e400`` is no number of seconds)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {clean(text, 40)!r}") from None
        if not low <= value <= high:  # NaN fails too
            raise argparse.ArgumentTypeError(
                f"must be between {low:g} and {high:g} s, got {clean(text, 40)!r}")
        return value

    return parse


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_AGE_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
#: The longest duration any option takes (numbers in plain digits can reach 1e308 or inf).
MAX_DURATION_S = 365 * 86400.0


def byte_size(text: str) -> int:
    """``--record-max-size``: ``500M``, ``2G``, ``1048576`` (binary units; a trailing B is fine)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(
            f"expected a size like 500M or 2G, got {clean(text, 40)!r}")
    size = float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]
    if not size <= 1 << 60:
        raise argparse.ArgumentTypeError(f"must be at most 1024P, got {clean(text, 40)!r}")
    value = int(size)
    if value < 4096:
        raise argparse.ArgumentTypeError(f"a part must be at least 4K, got {text!r}")
    return value


def duration(text: str, max_s: float = MAX_DURATION_S, max_shown: str = "365d") -> float:
    """``--record-max-age``: ``90s``, ``30m``, ``6h``, ``1d`` (a bare number is seconds), at
    most ``max_s`` (plain digits reach 1e308 or inf)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(
            f"expected a duration like 30m, 6h or 1d, got {clean(text, 40)!r}")
    value = float(match.group(1)) * _AGE_UNITS[match.group(2).lower()]
    if not math.isfinite(value) or value > max_s:
        raise argparse.ArgumentTypeError(f"must be at most {max_shown}, got {clean(text, 40)!r}")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 s, got {text!r}")
    return value


#: The longest ``--notify-hold`` and ``--notify-every``: beyond a week nothing is ever told.
MAX_NOTIFY_S = 7 * 86400.0


def notify_duration(text: str) -> float:
    """``--notify-hold`` / ``--notify-every``: a `duration` of at most a week."""
    return duration(text, MAX_NOTIFY_S, "7d")


def webhook_url(text: str) -> str:
    """``--webhook``: an http(s) URL with a host, printable ASCII (no escape sequence, CR or LF
    can reach a request line or a terminal); its credentials never appear in a message."""
    from gpusat_tui.notify.webhook import check_url

    try:
        return check_url(text.strip(" "))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
