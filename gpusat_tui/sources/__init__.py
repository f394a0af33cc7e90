"""Frame sources: live polling and replay yield the same `Frame` objects.

The app, the recorder, `check` and `report` take any `FrameSource` and never know which one
feeds them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from gpusat_tui.model import Frame


@runtime_checkable
class FrameSource(Protocol):
    """An async stream of Frames. ``label`` says what it is, for the status line."""

    label: str

    def frames(self) -> AsyncIterator[Frame]:
        """Yield Frames until the source ends (replay) or is closed (live)."""
        ...

    async def aclose(self) -> None:
        """Stop: kill any running tool, release files."""
        ...
