"""Each sub-command's options, typed: what `cli.parse` returns and the commands take.

Light on purpose (dataclasses only): the command line builds one of these before it knows
whether the command will load Textual, pydantic's models or a vendor library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpusat_tui.commands.status_options import StatusOptions
from gpusat_tui.notify.options import NotifyOptions
from gpusat_tui.sources.options import SourceOptions

View = Literal["auto", "overview", "card"]


@dataclass(frozen=True)
class DashboardOptions:
    """``gpusat-tui`` with no sub-command: the live dashboard, a replay or the fleet view."""

    source: SourceOptions = field(default_factory=SourceOptions)
    #: Start in the overview or the card view; ``auto`` chooses by the pane's size.
    view: View = "auto"
    notify: NotifyOptions = field(default_factory=NotifyOptions)


@dataclass(frozen=True)
class CheckOptions:
    """``gpusat-tui check``: poll headless for ``duration_s``, then print the verdicts."""

    source: SourceOptions = field(default_factory=SourceOptions)
    duration_s: float = 10.0
    json: bool = False
    #: Poll until stopped and print a notice each time the verdict turns (``--watch``).
    watch: bool = False
    notify: NotifyOptions = field(default_factory=NotifyOptions)


@dataclass(frozen=True)
class ExportOptions:
    """``gpusat-tui export``: serve figures and verdicts on ``listen`` for Prometheus."""

    listen: tuple[str, int]
    source: SourceOptions = field(default_factory=SourceOptions)
    #: Value of every series' ``host`` label; None: this machine's host name.
    host_label: str | None = None
    notify: NotifyOptions = field(default_factory=NotifyOptions)


@dataclass(frozen=True)
class ReportOptions:
    """``gpusat-tui report``: summarise a recording (its parts, by name or glob)."""

    files: tuple[str, ...]
    json: bool = False
    #: Chart width in columns; None: the terminal's.
    width: int | None = None


@dataclass(frozen=True)
class RunOptions:
    """``gpusat-tui run -- CMD``: exec CMD with the in-process probe on."""

    cmd: tuple[str, ...]
    verbose: bool = False


CommandOptions = (
    DashboardOptions | CheckOptions | ExportOptions | ReportOptions | RunOptions | StatusOptions
)
