"""A source that records: the inner source's Frames passed through, each written first.

The `Recorder` writes the file; this is where a failed write becomes one message and the
stream goes on unrecorded, so the dashboard and ``check`` never stop for a full disk.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Callable, Sequence

from gpusat_tui.errors import RecordingError
from gpusat_tui.model import Frame, RecordingHeader
from gpusat_tui.sources import FrameSource
from gpusat_tui.sources.options import RecordMode
from gpusat_tui.sources.recording.recorder import Recorder

__all__ = ["RecordingSource", "print_failure"]


class RecordingSource:
    """A `FrameSource` that passes the inner source's Frames through and records each one.

    The frame is written *before* it is yielded, so whatever the consumer does with it (or
    however it dies) the line is already in the file.

    A failed write stops the *recording*, never the stream: ``failure`` gets one message
    (also passed to ``on_failure`` once, and added to that frame's ``notes``), the label says
    so, and the Frames keep flowing unrecorded, so the dashboard and ``check`` go on.
    """

    def __init__(
        self,
        inner: FrameSource,
        path: str | os.PathLike[str],
        header: RecordingHeader,
        *,
        mode: RecordMode = "new",
        protect: Sequence[str | os.PathLike[str]] = (),
        on_failure: Callable[[str], None] | None = None,
        max_bytes: int | None = None,
        max_age_s: float | None = None,
    ) -> None:
        self.inner = inner
        self.recorder = Recorder(
            path, header, mode=mode, protect=protect, max_bytes=max_bytes, max_age_s=max_age_s
        )
        self.on_failure = on_failure
        #: Why the recording stopped, or None while it runs.
        self.failure: str | None = None
        self._reason: str | None = None

    @property
    def label(self) -> str:
        if self.failure is not None:
            return f"{self.inner.label} · RECORDING STOPPED ({self._short_reason})"
        return f"{self.inner.label} · recording to {self.recorder.path.name}"

    @property
    def _short_reason(self) -> str:
        return (self._reason or "write failed")[:40]

    @property
    def header(self) -> RecordingHeader:
        return self.recorder.header

    def _header_with_versions(self) -> RecordingHeader | None:
        """The header with the versions the inner source learnt on its first poll, if new."""
        versions = getattr(self.inner, "versions", None)
        if not isinstance(versions, dict):
            return None
        tools = dict(self.recorder.header.tools)
        for tool, version in versions.items():
            if version is not None or tool not in tools:
                tools[str(tool)] = None if version is None else str(version)
        if tools == self.recorder.header.tools:
            return None
        return self.recorder.header.model_copy(update={"tools": tools})

    def _record(self, frame: Frame) -> Frame:
        """Write ``frame``; on a failed write stop recording and say so on this frame."""
        if self.failure is not None:
            return frame
        try:
            if self.recorder.frames_written == 0:
                header = self._header_with_versions()
                if header is not None:
                    self.recorder.update_header(header)
            self.recorder.write(frame)
            return frame
        except RecordingError as exc:
            cause = exc.__cause__
            self._reason = (
                cause.strerror if isinstance(cause, OSError) and cause.strerror else str(exc)
            )
            self.recorder.close()
            self.failure = (
                f"recording stopped: {exc}; {self.recorder.path} keeps the "
                f"{self.recorder.frames_written} frame"
                f"{'s' if self.recorder.frames_written != 1 else ''} written before, up to "
                "its last whole line; monitoring goes on"
            )
            if self.on_failure is not None:
                self.on_failure(self.failure)
            return frame.model_copy(update={"notes": [*frame.notes, self.failure]})

    async def frames(self) -> AsyncGenerator[Frame, None]:
        try:
            async for frame in self.inner.frames():
                yield self._record(frame)
        finally:
            self.recorder.close()

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            self.recorder.close()

    def __getattr__(self, name: str) -> object:
        # Anything else (tools, versions, replay controls...) is the inner source's business.
        if name in {"inner", "recorder"}:
            raise AttributeError(name)
        return getattr(self.inner, name)


def print_failure(message: str) -> None:
    """`RecordingSource.on_failure` for the headless front ends: one line on stderr."""
    from gpusat_tui.output import say

    say("gpusat-tui", message)
