"""The status line: source, interval, stale figures, tool errors, and the monitor's own CPU."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text

from gpusat_tui.model import Frame
from gpusat_tui.text import clean

#: (card id, seconds since its figures were read) of each card shown with old figures.
StaleCards = tuple[tuple[str, float], ...]
#: (tool, kind, message) of each tool that failed at the last poll.
ToolErrors = tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class StatusInfo:
    """Everything the status line shows, so it is a pure function (and skippable if equal)."""

    source: str
    interval_s: float | None = None
    own_cpu_pct: float | None = None
    #: Seconds since the last frame arrived, when that is suspiciously long (else None).
    quiet_s: float | None = None
    stale: StaleCards = ()
    errors: ToolErrors = ()
    skipped: int = 0
    ended: str | None = None
    extra: tuple[str, ...] = field(default_factory=tuple)


def status_from_frame(frame: Frame | None) -> tuple[StaleCards, ToolErrors]:
    """(stale cards with age, tool errors) of a frame."""
    if frame is None:
        return (), ()
    stale = tuple((c.id, c.stale_s) for c in frame.cards if c.stale_s is not None)
    errors = tuple((e.tool, e.kind, e.message) for e in frame.errors)
    return stale, errors


def status_text(info: StatusInfo) -> Text:
    """``live · every 1 s · stale nvidia:1 12 s · hy-smi hung (timeout) · monitor 0.4% CPU``."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(clean(info.source, 80), style="bold")
    if info.interval_s:
        text.append(f" · every {info.interval_s:g} s")
    if info.ended:
        text.append(f" · {clean(info.ended, 80)}", style="reverse")
    if info.quiet_s is not None:
        text.append(f" · no frame for {info.quiet_s:.0f} s", style="reverse")
    if info.stale:
        cards = ", ".join(f"{cid} {age:.0f} s" for cid, age in info.stale)
        text.append(f" · stale {cards}", style="reverse")
    for tool, kind, message in info.errors:
        label = "hung" if kind == "timeout" else kind
        text.append(f" · {clean(tool, 20)} {label}: {clean(message, 60)}", style="reverse")
    if info.skipped:
        text.append(f" · {info.skipped} bad lines skipped")
    for extra in info.extra:
        text.append(f" · {clean(extra, 60)}")
    cpu = "…" if info.own_cpu_pct is None else f"{info.own_cpu_pct:.1f}%"
    text.append(f" · monitor {cpu} CPU")
    return text
