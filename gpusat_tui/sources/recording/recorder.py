"""Record a session as JSONL: a header line, then one raw `Frame` per line.

Record raw, judge on read: the file holds figures, never verdicts, so a better verdict engine
improves old recordings too (``report`` and ``--replay`` re-judge them).

Durability, and what it costs:

* Every line is handed to the kernel with ONE ``os.write`` call on an unbuffered file
  descriptor opened with ``O_APPEND``. There is no user-space buffer, so a Ctrl-C, a SIGTERM, a
  crashing tool or even a SIGKILL of gpusat-tui loses no line that `Recorder.write` returned
  from, and never leaves half a line behind a complete one. (A short write is finished at once.
  A SIGKILL that lands during the write itself can cut that one line: Linux ends a write to a
  regular file early when a fatal signal is pending. The reader skips that torn *last* line.)
* No ``fsync`` per line: it costs milliseconds per poll on a real disk and only protects against
  a power cut or kernel crash, not against the process dying. `Recorder.close` fsyncs once.
* Compressed recordings (a name ending in ``.zst`` or ``.gz``) keep both promises: every line is
  compressed, flushed and written in one ``os.write`` at once; blocks and their index records are
  `codec`'s business.
* Rotation (``max_bytes`` / ``max_age_s``): when the current file reaches either, it is closed
  (fsynced) and the next part ``run.0001.jsonl.zst``, ``run.0002...`` starts with the same
  header (``part`` counts up). The reader joins the parts back into one session.
* Nothing is lost by accident: an existing recording is only overwritten or appended to when
  asked (``mode``), the file being replayed is never a target (``protect``), and a failed write
  (disk full, ``EIO``) cuts the file back to its last whole line and stops the recording only:
  `recording_source.RecordingSource` says so once and keeps passing Frames on.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from gpusat_tui import __version__
from gpusat_tui.errors import RecordingError
from gpusat_tui.model import SCHEMA_VERSION, Frame, RecordingHeader
from gpusat_tui.sources.options import RECORD_MODES, RecordMode
from gpusat_tui.sources.recording.block_index import format_for_name, part_path
from gpusat_tui.sources.recording.block_writer import BlockWriter
from gpusat_tui.sources.recording.closing import ClosedOnExit

__all__ = ["Recorder", "make_header"]


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



def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


class Recorder(ClosedOnExit):
    """Append Frames to a JSONL file, one whole line per ``os.write``; a context manager.

    What happens to a file that is already there is always the caller's explicit choice
    (``mode``): ``"new"`` (the default) refuses a regular file that holds anything, so a
    recording is never truncated by a typo; ``"overwrite"`` (``--force``) replaces it;
    ``"append"`` (``--append``) adds frames to a recording of this schema (its header stays,
    the new frames' ``seq`` continue after its last frame, and a torn last line is ended with
    a newline so it stays one bad line, skipped by readers). Devices and pipes (``/dev/null``,
    ``>(gzip > f)``) hold nothing to lose and are written as new.

    ``protect`` lists files that must never be written (the recording being replayed): the
    file is opened *without* truncation, compared by device and inode with each (so a
    symlink or hard link to it is caught too), and only then truncated if asked.

    The header is written at once, so that a session killed before its first poll still
    leaves a valid (empty) recording. A failed write (``ENOSPC``, ``EIO``...) raises
    `RecordingError` after cutting the file back to its last whole line and closing it: the
    file stays valid, and nothing after the failure is written.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: RecordingHeader,
        *,
        mode: RecordMode = "new",
        protect: Sequence[str | os.PathLike[str]] = (),
        max_bytes: int | None = None,
        max_age_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if mode not in RECORD_MODES:
            raise ValueError(f"mode must be one of {RECORD_MODES}, got {mode!r}")
        #: The first part's path (the name given); `path` is the part being written.
        self.base_path = Path(path)
        self.path = self.base_path
        self.header = header
        self.mode = mode
        self.frames_written = 0
        #: Bytes on disk in the current part (compressed bytes for a compressed recording).
        self.bytes_written = 0
        #: Added to each frame's ``seq`` (appending continues the file's sequence).
        self.seq_offset = 0
        #: The file held a recording we append to: its header stands.
        self.appended = False
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        #: Part number being written, and the paths of the parts so far (current one last).
        self.part = 0
        self.parts: list[Path] = []
        self._clock = clock
        self._protect = list(protect)
        self._format = format_for_name(self.base_path)
        self._blocks: BlockWriter | None = None
        #: Size of the file up to its last whole line (regular files only; None otherwise).
        self._good_size: int | None = None
        self._fd: int | None = None
        self._check_mode()
        self._open_part()

    def _ways_past_existing(self) -> str:
        """What the user can do about a file that exists: --append only where it is accepted
        (a plain recording without rotation, see `_check_mode`)."""
        rotating = self.max_bytes is not None or self.max_age_s is not None
        if rotating or self._format != "plain":
            return ("pass --force to overwrite it, or record to a new file (--append works on "
                    "a plain .jsonl recording without rotation only)")
        return "pass --append to add to it or --force to overwrite it"

    def _check_mode(self) -> None:
        rotating = self.max_bytes is not None or self.max_age_s is not None
        if self.mode == "append" and (rotating or self._format != "plain"):
            raise RecordingError(
                f"cannot --append to {self.base_path}: appending works on a plain .jsonl "
                "recording without rotation; record to a new file instead (a session's parts "
                "are joined when read)"
            )
        if rotating and self.mode == "new" and part_path(self.base_path, 1).exists():
            raise RecordingError(
                f"{part_path(self.base_path, 1)} already exists (a part of an earlier "
                "recording): pass --force to overwrite its parts, or record to another name"
            )

    def _open_part(self) -> None:
        """Open the current part and write its header (or get ready to append)."""
        self.path = part_path(self.base_path, self.part)
        if self.part:
            self.mode = "overwrite" if self.mode == "overwrite" else "new"
            self.header = self.header.model_copy(
                update={"part": self.part, "started_at": time.time()}
            )
        self.bytes_written = 0
        self._good_size = None
        self._fd = self._open(self._protect)
        self._blocks = None if self._format == "plain" else BlockWriter(self._format)
        self.parts.append(self.path)
        self._opened_at = self._clock()
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # -- opening ---------------------------------------------------------------------------
    def _open(self, protect: Sequence[str | os.PathLike[str]]) -> int:
        """Open without truncating anything; refuse what must not be written."""
        base = os.O_WRONLY if self.mode != "append" else os.O_RDWR
        # O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of hanging here.
        flags = base | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            try:
                fd = os.open(self.path, flags | os.O_CREAT | os.O_EXCL, 0o644)
                created = True
            except FileExistsError:
                fd = os.open(self.path, flags)
                created = False
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                reason = "it is a FIFO that nobody reads"
            else:
                reason = exc.strerror or str(exc)
            raise RecordingError(f"cannot record to {self.path}: {reason}") from exc
        try:
            os.set_blocking(fd, True)
            st = os.fstat(fd)
            for other in protect:
                try:
                    if _same_file(st, os.stat(other)):
                        raise RecordingError(
                            f"refusing to record to {self.path}: it is the recording being "
                            f"replayed ({other}); recording it would destroy it"
                        )
                except OSError:
                    continue
            regular = stat.S_ISREG(st.st_mode)
            if regular and not created and st.st_size > 0 and self.mode == "new":
                raise RecordingError(f"{self.path} already exists ({st.st_size} bytes): "
                                     + self._ways_past_existing())
            if self.mode == "append" and not regular:
                self.mode = "new"  # nothing to append to in a pipe or a device
            if regular and self.mode == "overwrite":
                os.ftruncate(fd, 0)
                st = os.fstat(fd)
            if regular:
                self._good_size = st.st_size
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _start(self) -> None:
        assert self._fd is not None
        if self.mode == "append" and self._good_size:
            self._prepare_append(self._fd, self._good_size)
            return
        self._write_header()

    def _write_header(self) -> None:
        self._write_line(self.header.model_dump_json())
        if self._blocks is not None:  # the header is a block of its own
            self._write_bytes(self._blocks.end_block())

    def _prepare_append(self, fd: int, size: int) -> None:
        """Check that the file is a recording we may add to; continue its ``seq``."""
        from gpusat_tui.sources.recording.reader import MAX_HEADER_BYTES, last_frame, parse_header

        with os.fdopen(os.dup(fd), "rb") as fh:
            fh.seek(0)
            first = fh.readline(MAX_HEADER_BYTES + 1)
            too_long = len(first) > MAX_HEADER_BYTES and not first.endswith(b"\n")
            try:
                existing, _ = parse_header(self.path, first, too_long)
            except RecordingError as exc:
                raise RecordingError(f"cannot append: {exc}") from None
            if existing.schema_version != SCHEMA_VERSION:
                raise RecordingError(
                    f"cannot append to {self.path}: it is recording schema_version "
                    f"{existing.schema_version}, this gpusat-tui writes {SCHEMA_VERSION}"
                )
            data_start = len(first)
            last = last_frame(fh, data_start, size) if size > data_start else None
            fh.seek(size - 1)
            torn = fh.read(1) != b"\n"
        self.header = existing
        self.appended = True
        self.seq_offset = 0 if last is None else last.seq + 1
        if torn:  # end the torn line: it stays one bad line instead of spoiling ours
            self._write_bytes(b"\n")

    # -- writing ---------------------------------------------------------------------------
    def _write_bytes(self, data: bytes) -> None:
        if self._fd is None:
            raise RecordingError(f"recording {self.path} is already closed")
        try:
            written = os.write(self._fd, data)
            # A short write on a regular file needs a full disk or a signal at a bad moment;
            # finish the line rather than leave a torn one in the middle of the file.
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError as exc:
            self._fail()
            raise RecordingError(f"cannot write to {self.path}: {exc.strerror or exc}") from exc
        self.bytes_written += len(data)
        if self._good_size is not None:
            self._good_size += len(data)

    def _write_line(self, text: str) -> None:
        data = (text + "\n").encode("utf-8")
        self._write_bytes(data if self._blocks is None else self._blocks.add_line(data))

    def _fail(self) -> None:
        """After a failed write: cut off the partial line (if any) and close."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if self._good_size is not None:
                os.ftruncate(fd, self._good_size)  # frees space: works on a full disk too
        except OSError:
            pass  # the reader skips one torn last line anyway
        finally:
            os.close(fd)

    def update_header(self, header: RecordingHeader) -> None:
        """Rewrite the header, allowed only before the first frame (tool versions are known
        only after the first poll). A crash in between leaves an empty file, which the reader
        refuses with a clear message. Appending keeps the file's own header: a no-op."""
        if self._fd is None:
            raise RecordingError(f"recording {self.path} is already closed")
        if self.frames_written:
            raise RecordingError("the header can only change before the first frame")
        if self.appended:
            return
        try:
            os.ftruncate(self._fd, 0)
        except OSError:
            return  # a pipe or a device: the header already went out; it stays
        self.bytes_written = 0
        self._good_size = 0
        if self._blocks is not None:
            self._blocks.reset()
        self.header = header
        self._write_header()

    def _due_for_rotation(self) -> bool:
        if self.max_bytes is not None and self.bytes_written >= self.max_bytes:
            return True
        return self.max_age_s is not None and self._clock() - self._opened_at >= self.max_age_s

    def write(self, frame: Frame) -> None:
        """Append one Frame as one line; it is in the kernel's hands when this returns.

        A part that reached ``max_bytes`` or ``max_age_s`` is closed first and the frame
        starts the next one.
        """
        if self.frames_written and self._due_for_rotation():
            self.close()
            self.part += 1
            self._open_part()
        if self.seq_offset:
            frame = frame.model_copy(update={"seq": frame.seq + self.seq_offset})
        self._write_line(frame.model_dump_json())
        self.frames_written += 1

    @property
    def closed(self) -> bool:
        return self._fd is None

    def close(self) -> None:
        """End the open compressed block, fsync once and close; closing twice is harmless."""
        if self._fd is None:
            return
        if self._blocks is not None:
            # A failed block end loses nothing: the reader decodes an unfinished block.
            with contextlib.suppress(RecordingError):
                self._write_bytes(self._blocks.end_block())
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
