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
* Compressed recordings (a name ending in ``.zst`` or ``.gz``) keep both promises: every line is
  compressed, flushed and written in one ``os.write`` at once; blocks and their index records are
  `codec`'s business.
* Rotation (``max_bytes`` / ``max_age_s``): when the current file reaches either, it is closed
  (fsynced) and the next part ``run.0001.jsonl.zst``, ``run.0002...`` starts with the same
  header (``part`` counts up). The reader joins the parts back into one session.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from gpusat_tui import __version__
from gpusat_tui.errors import RecordingError
from gpusat_tui.model import SCHEMA_VERSION, Frame, RecordingHeader
from gpusat_tui.sources import FrameSource
from gpusat_tui.sources.closing import ClosedOnExit
from gpusat_tui.sources.codec import BlockWriter, format_for_name, part_path

__all__ = ["Recorder", "RecordingSource", "make_header", "rotation_limits"]


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


def rotation_limits(args: object) -> dict[str, float | int | None]:
    """``max_bytes`` / ``max_age_s`` for a `RecordingSource` from parsed CLI options."""
    return {
        "max_bytes": getattr(args, "record_max_size", None),
        "max_age_s": getattr(args, "record_max_age", None),
    }


class Recorder(ClosedOnExit):
    """Append Frames to a JSONL file, one whole line per ``os.write``; a context manager.

    Creating a Recorder truncates ``path`` and writes the header at once, so that a session
    killed before its first poll still leaves a valid (empty) recording.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: RecordingHeader,
        *,
        max_bytes: int | None = None,
        max_age_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        #: The first part's path (the name the user gave); `path` is the part being written.
        self.base_path = Path(path)
        self.path = self.base_path
        self.header = header
        self.frames_written = 0
        #: Bytes on disk in the current part (compressed bytes for a compressed recording).
        self.bytes_written = 0
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self.part = 0
        #: Paths of the parts written so far, the current one last.
        self.parts: list[Path] = []
        self._clock = clock
        self._fd: int | None = None
        self._blocks: BlockWriter | None = None
        self._open_part()

    def _open_part(self) -> None:
        """Open the current part (truncating it) and write the header as its first line."""
        self.path = part_path(self.base_path, self.part)
        try:
            self._fd = os.open(
                self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644
            )
        except OSError as exc:
            raise RecordingError(f"cannot record to {self.path}: {exc.strerror or exc}") from exc
        fmt = format_for_name(self.base_path)
        self._blocks = None if fmt == "plain" else BlockWriter(self._fd, fmt)
        self.parts.append(self.path)
        self.bytes_written = 0
        self._opened_at = self._clock()
        if self.part:
            self.header = self.header.model_copy(
                update={"part": self.part, "started_at": time.time()}
            )
        self._write_header()

    def _write_header(self) -> None:
        self._write_line(self.header.model_dump_json())
        self._end_block()  # the header is a block of its own: read without decompressing more

    def _end_block(self) -> None:
        if self._blocks is None or self._fd is None:
            return
        try:
            self.bytes_written += self._blocks.end_block()
        except OSError as exc:
            raise RecordingError(f"cannot write to {self.path}: {exc.strerror or exc}") from exc

    def _write_line(self, text: str) -> None:
        if self._fd is None:
            raise RecordingError(f"recording {self.path} is already closed")
        data = (text + "\n").encode("utf-8")
        try:
            if self._blocks is not None:
                self.bytes_written += self._blocks.write_line(data)
                return
            written = os.write(self._fd, data)
            # A short write on a regular file needs a full disk or a signal at a bad moment;
            # finish the line rather than leave a torn one in the middle of the file.
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError as exc:
            raise RecordingError(f"cannot write to {self.path}: {exc.strerror or exc}") from exc
        self.bytes_written += len(data)

    def _due_for_rotation(self) -> bool:
        if self.max_bytes is not None and self.bytes_written >= self.max_bytes:
            return True
        return self.max_age_s is not None and self._clock() - self._opened_at >= self.max_age_s

    def _rotate(self) -> None:
        self._close_part()
        self.part += 1
        self._open_part()

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
        if self._blocks is not None:
            self._blocks.reset()
        self.header = header
        self._write_header()

    def write(self, frame: Frame) -> None:
        """Append one Frame as one line; it is in the kernel's hands when this returns.

        A part that reached ``max_bytes`` or ``max_age_s`` is closed first and the frame
        starts the next one.
        """
        if self.frames_written and self._due_for_rotation():
            self._rotate()
        self._write_line(frame.model_dump_json())
        self.frames_written += 1

    @property
    def closed(self) -> bool:
        return self._fd is None

    def close(self) -> None:
        """End the open block, fsync once and close; closing twice is harmless."""
        self._close_part()

    def _close_part(self) -> None:
        if self._fd is None:
            return
        # A failed block end loses nothing: the reader decodes an unfinished block.
        with contextlib.suppress(RecordingError):
            self._end_block()
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
        self,
        inner: FrameSource,
        path: str | os.PathLike[str],
        header: RecordingHeader,
        *,
        max_bytes: int | None = None,
        max_age_s: float | None = None,
    ) -> None:
        self.inner = inner
        self.recorder = Recorder(path, header, max_bytes=max_bytes, max_age_s=max_age_s)

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
