"""How a stream's lines become records: pure, stateful framers (no I/O, no clock).

A streaming tool prints one *record* per period: a line (``tegrastats``, one ``neuron-monitor``
JSON report), or a group of rows, one per card, under a header printed once (``nvidia-smi
--query-gpu ... -lms N``, ``npu-smi info watch``). The stream runner feeds every complete line
to a framer and hands each finished record to the collector's pure parser, so the parser sees
the same text as a captured file: the header, then the rows of one sample.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["Framer", "LineRecords", "RowGroups"]


class Framer(Protocol):
    """Turns lines into records. ``flush`` is called when the stream pauses (a sample's last
    row has been printed and nothing follows for a moment)."""

    def feed(self, line: str) -> list[str]: ...

    def flush(self) -> list[str]: ...

    @property
    def pending(self) -> bool: ...


class LineRecords:
    """Every non-blank line is one record."""

    pending = False

    def feed(self, line: str) -> list[str]:
        return [line] if line.strip() else []

    def flush(self) -> list[str]:
        return []


class RowGroups:
    """One record per sample: the rows since the last sample, under the last header seen.

    A sample ends when a row's key (its card index, say: ``key(row, header)``) repeats, when
    a new header comes, or when the stream pauses (`flush`). The pause is what makes a sample
    visible as soon as its last row is printed rather than one period later, when the next
    sample starts. Costs: a tool that prints the same card twice in one sample is read as two
    samples; a row with no key (None) stays in the current sample.
    """

    def __init__(
        self,
        is_header: Callable[[str], bool],
        key: Callable[[str, str | None], str | None],
    ) -> None:
        self._is_header = is_header
        self._key = key
        self._header: str | None = None
        self._rows: list[str] = []
        self._keys: set[str] = set()

    @property
    def pending(self) -> bool:
        return bool(self._rows)

    def feed(self, line: str) -> list[str]:
        if not line.strip():
            return []
        if self._is_header(line):
            out = self.flush()
            self._header = line
            return out
        key = self._key(line, self._header)
        out = self.flush() if key is not None and key in self._keys else []
        self._rows.append(line)
        if key is not None:
            self._keys.add(key)
        return out

    def flush(self) -> list[str]:
        if not self._rows:
            return []
        lines = ([self._header] if self._header is not None else []) + self._rows
        self._rows = []
        self._keys = set()
        return ["\n".join(lines) + "\n"]
