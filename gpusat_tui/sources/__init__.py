"""Frame sources: live polling and replay yield the same `Frame` objects.

The app, the recorder, `check` and `report` take any `FrameSource` and never know which one
feeds them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol, runtime_checkable

from gpusat_tui.model import Frame


@runtime_checkable
class FrameSource(Protocol):
    """An async stream of Frames. ``label`` says what it is, for the status line."""

    @property
    def label(self) -> str:
        """What the source is, for the status line (read-only: a source names itself)."""
        ...

    def frames(self) -> AsyncGenerator[Frame, None]:
        """Yield Frames until the source ends (replay) or is closed (live)."""
        ...

    async def aclose(self) -> None:
        """Stop: kill any running tool, release files."""
        ...


@runtime_checkable
class Replayable(FrameSource, Protocol):
    """A source the user can steer: a replay (`replay.ReplaySource`). The UI offers its keys
    only where `replay_controls` finds one, and never learns which class it is."""

    paused: bool
    speed: float

    @property
    def position(self) -> float:
        """Seconds from the first frame to the one shown."""
        ...

    @property
    def duration(self) -> float:
        """Seconds from the first frame to the last one known."""
        ...

    def speed_up(self) -> float: ...

    def slow_down(self) -> float: ...

    def toggle_pause(self) -> bool: ...

    def seek(self, delta_s: float) -> None: ...

    def jump_start(self) -> None: ...

    def jump_end(self) -> None: ...


def replay_controls(source: object) -> Replayable | None:
    """The replay behind ``source`` (through a recording wrapper's ``inner``), or None."""
    seen = 0
    while source is not None and seen < 8:  # wrappers nest at most a couple deep
        if isinstance(source, Replayable):
            return source
        source = vars(source).get("inner") if hasattr(source, "__dict__") else None
        seen += 1
    return None
