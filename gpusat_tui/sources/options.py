"""What the command line asks of a source, typed: `cli` builds these once from its parsed
arguments, and nothing below it sees argparse.

Frozen dataclasses rather than pydantic: they are built once per run from already-validated
flags, so validation here would only repeat argparse's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

#: What ``--record`` may do to a file that is already there (``--force``, ``--append``).
RecordMode = Literal["new", "overwrite", "append"]
RECORD_MODES: tuple[RecordMode, ...] = ("new", "overwrite", "append")

#: Polls between two process-list and per-card queries (``--enrich-every``).
DEFAULT_ENRICH_EVERY = 5


@dataclass(frozen=True)
class PollOptions:
    """Live polling: how often, which executables, which trainers (``--pid``)."""

    interval_s: float = 1.0
    #: ``--tool KEY=PATH``: a vendor or tool name to the executable to use.
    tools: Mapping[str, str] = field(default_factory=dict)
    pids: tuple[int, ...] = ()
    enrich_every: int = DEFAULT_ENRICH_EVERY


@dataclass(frozen=True)
class RecordOptions:
    """``--record FILE`` and what may happen to it: mode, rotation, files never written."""

    path: str
    mode: RecordMode = "new"
    #: ``--record-max-size``: start the next part at this many bytes.
    max_bytes: int | None = None
    #: ``--record-max-age``: start the next part after this many seconds.
    max_age_s: float | None = None
    #: Files this recording must never be (the ones being replayed).
    protect: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourceOptions:
    """Which source to build (`sources.build.build_source`): the fleet view when
    ``prometheus`` is set, else a replay when ``replay`` names files, else live polling (the
    bundled demo in its place when no tool is found and ``fallback_demo``)."""

    poll: PollOptions = field(default_factory=PollOptions)
    replay: tuple[str, ...] = ()
    follow: bool = False
    speed: float = 1.0
    prometheus: str | None = None
    match: tuple[str, ...] = ()
    fallback_demo: bool = False
    record: RecordOptions | None = None
