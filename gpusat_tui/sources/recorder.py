"""Record a session as JSONL: a header line, then one raw `Frame` per line.

Record raw, judge on read: the file holds figures, never verdicts, so a better verdict engine
improves old recordings too (``report`` and ``--replay`` re-judge them).

Durability, and what it costs:

* Every line is handed to the kernel with ONE ``os.write`` call on an unbuffered file
  descriptor opened with ``O_APPEND``. There is no user-space buffer, so a Ctrl-C, a SIGTERM, a
  crashing tool or even a SIGKILL of gpusat-tui loses no line that `Recorder.write` returned
  from, and never leaves half a line behind a complete one. (A line is a few KiB; a regular
  file write of that size is not split in practice. Should it ever be short, the rest is written
  at once, and the reader would see at worst one truncated *last* line, which it skips.)
* No ``fsync`` per line: it costs milliseconds per poll on a real disk and only protects against
  a power cut or kernel crash, not against the process dying. `Recorder.close` fsyncs once.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

from gpusat_tui import __version__
from gpusat_tui.errors import RecordingError
from gpusat_tui.model import SCHEMA_VERSION, Frame, RecordingHeader
from gpusat_tui.sources import FrameSource
from gpusat_tui.sources.closing import ClosedOnExit

__all__ = ["Recorder", "RecordingSource", "make_header"]


def make_header(tools: dict[str, str | None], interval: float) -> RecordingHeader:
    """The first line of a recording: who wrote it, on which host, with which tools, how often.

    ``tools`` maps each tool that answered to its version (None when it does not say).
    """
    return RecordingHeader(
        schema_version=SCHEMA_VERSION,
        gpusat_tui_version=__version__,
        host=socket.gethostname(),
        tools=dict(tools),
        interval_s=interval,
        started_at=time.time(),
    )


class Recorder(ClosedOnExit):
    """Append Frames to a JSONL file, one whole line per ``os.write``; a context manager.

    Creating a Recorder truncates ``path`` and writes the header at once, so that a session
    killed before its first poll still leaves a valid (empty) recording.
    """

    def __init__(self, path: str | os.PathLike[str], header: RecordingHeader) -> None:
        self.path = Path(path)
        self.header = header
        self.frames_written = 0
        self.bytes_written = 0
        try:
            self._fd: int | None = os.open(
                self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644
            )
        except OSError as exc:
            raise RecordingError(f"cannot record to {self.path}: {exc.strerror or exc}") from exc
        self._write_line(header.model_dump_json())

    def _write_line(self, text: str) -> None:
        if self._fd is None:
            raise RecordingError(f"recording {self.path} is already closed")
        data = (text + "\n").encode("utf-8")
        try:
            written = os.write(self._fd, data)
            # A short write on a regular file needs a full disk or a signal at a bad moment;
            # finish the line rather than leave a torn one in the middle of the file.
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError as exc:
            raise RecordingError(f"cannot write to {self.path}: {exc.strerror or exc}") from exc
        self.bytes_written += len(data)

    def update_header(self, header: RecordingHeader) -> None:
        """Rewrite the header, allowed only before the first frame (tool versions are known
        only after the first poll). A crash in between leaves an empty file, which the reader
        refuses with a clear message."""
        if self._fd is None:
            raise RecordingError(f"recording {self.path} is already closed")
        if self.frames_written:
            raise RecordingError("the header can only change before the first frame")
        os.ftruncate(self._fd, 0)
        self.bytes_written = 0
        self.header = header
        self._write_line(header.model_dump_json())

    def write(self, frame: Frame) -> None:
        """Append one Frame as one line; it is in the kernel's hands when this returns."""
        self._write_line(frame.model_dump_json())
        self.frames_written += 1

    @property
    def closed(self) -> bool:
        return self._fd is None

    def close(self) -> None:
        """Fsync once and close; closing twice is harmless."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.fsync(fd)
        except OSError:
            pass  # e.g. a pipe or /dev/null: nothing to make durable
        finally:
            os.close(fd)

    def __del__(self) -> None:  # a forgotten Recorder must not leak its descriptor
        if getattr(self, "_fd", None) is not None:
            self.close()


class RecordingSource:
    """A `FrameSource` that passes the inner source's Frames through and records each one.

    The frame is written *before* it is yielded, so whatever the consumer does with it (or
    however it dies) the line is already in the file.
    """

    def __init__(
        self, inner: FrameSource, path: str | os.PathLike[str], header: RecordingHeader
    ) -> None:
        self.inner = inner
        self.recorder = Recorder(path, header)

    @property
    def label(self) -> str:
        return f"{self.inner.label} · recording to {self.recorder.path.name}"

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

    async def frames(self) -> AsyncIterator[Frame]:
        try:
            async for frame in self.inner.frames():
                if self.recorder.frames_written == 0:
                    header = self._header_with_versions()
                    if header is not None:
                        self.recorder.update_header(header)
                self.recorder.write(frame)
                yield frame
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
