"""``gpusat-tui status``'s options: a plain class, apart from the other commands' options.

A status bar runs ``status`` every few seconds, so its path imports no dataclasses, no typing
and nothing of `sources` (whose package loads the pydantic model: ~100 ms a call). The cost is a
class without generated ``__eq__``; the tests compare its fields.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["STATUS_FORMATS", "StatusOptions"]

STATUS_FORMATS = ("tmux", "plain", "polybar", "waybar")


class StatusOptions:
    """``gpusat-tui status``: one short line for a status bar."""

    __slots__ = ("exporter", "format", "job", "max_age_s", "pids", "poll_s", "timeout_s",
                 "tools")

    def __init__(
        self, format: str = "tmux", max_age_s: float | None = None,
        exporter: str | None = "http://127.0.0.1:9478/metrics", poll_s: float = 2.0,
        timeout_s: float = 5.0, tools: Mapping[str, str] | None = None,
        pids: tuple[int, ...] = (), job: str | None = None,
    ) -> None:
        #: One of `STATUS_FORMATS`.
        self.format = format
        #: A running monitor's figures count up to this old; None: 3 of its polls, 5 s at least.
        self.max_age_s = max_age_s
        #: An exporter's /metrics to ask when no monitor runs here; None: never.
        self.exporter = exporter
        #: With neither, poll the tools this long (0: never).
        self.poll_s = poll_s
        #: Hard limit on a poll of its own, discovery included.
        self.timeout_s = timeout_s
        #: ``--tool KEY=PATH`` and ``--pid`` for that poll.
        self.tools: Mapping[str, str] = dict(tools or {})
        self.pids = pids
        #: ``--job``: show this job only (its key, its name, or its monitor's PID).
        self.job = job

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"StatusOptions({args})"
