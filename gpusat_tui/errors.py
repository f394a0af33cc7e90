"""One small hierarchy of the failures gpusat-tui expects and reports in plain words."""

from __future__ import annotations


class GpusatError(Exception):
    """Base of every expected failure; its message is shown to the user as is."""


class ToolMissing(GpusatError):
    """No vendor tool found; the message says where we looked."""


class ToolTimeout(GpusatError):
    """A tool did not answer within its timeout and was killed."""


class ToolFailed(GpusatError):
    """A tool exited non-zero or could not be started."""


class ParseError(GpusatError):
    """A tool's output did not look like what its parser knows."""


class RecordingError(GpusatError):
    """A recording cannot be read at all (no header, newer schema, empty file, not a regular
    file), may not be written (exists without --force/--append, is the replayed file), or a
    write to it failed (disk full)."""
