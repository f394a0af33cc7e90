"""The monitor's side of the probe: find probe files, read them safely, tie each to its card
(`probe_card_tie`).

A probe file (`gpusat_tui.probe.layout`) is written by a process the monitor does not control,
so everything in it is data to check, never trust: a file that is truncated, random bytes, of a
newer layout, of a dead or impossible PID, owned by another user, a symlink, a FIFO or huge, or
that names a process which cannot have written it (`host.probe_writer`: not a Python
interpreter, another user's, started after the file), gives one note (said once per file and
reason) and is skipped; a figure that cannot be (`host.probe_figures`) is dropped with a note.
One bad file costs that file only: whatever it raises, the other files are read. Nothing
blocks (files are opened non-blocking, never followed, and read up to `MAX_BYTES`), nothing
raises. The file of a process that is gone is removed. A folder full of bad files gives one
summary note per poll (`host.probe_notes`), and a bad file that has not changed since is not
read again. Nothing read here is executed; strings are cut short and sanitised before they
reach a note.

Reading one file costs one ``open``/``fstat``/``read``/``close`` and a small ``json.loads``
(`benchmarks/bench_probe.py`).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpusat_tui.host.probes.probe_card_tie import tie_card
from gpusat_tui.host.probes.probe_figures import bound_probe_figures
from gpusat_tui.host.probes.probe_notes import ProbeNotes
from gpusat_tui.host.probes.probe_stacks import stack_fields
from gpusat_tui.host.probes.probe_writer import writer_refusal
from gpusat_tui.model import CardProcess, CardReading, ProbeAlloc, ProbeSample
from gpusat_tui.probe.layout import (
    ALLOC_KEYS,
    FILE_PREFIX,
    FILE_SUFFIX,
    LAYOUT_VERSION,
    MAX_BYTES,
    default_dirs,
    tmp_name,
)

__all__ = ["ProbeFileError", "ProbePoller", "ProbeReader", "parse_probe"]

#: A file not rewritten for this long, whose PID is gone, is a leftover: removed.
STALE_S = 5.0
#: No PID is above Linux's PID_MAX_LIMIT (2**22; other systems stay lower): a file naming one
#: is not a probe's.
PID_LIMIT = 2**22
#: A publication time this far ahead of the monitor's clock is no time (it would stay fresh
#: forever); a little ahead is a clock that differs.
FUTURE_SLACK_S = 300.0

class ProbeFileError(ValueError):
    """A probe file that cannot be used; the message says why in plain words, ``kind`` how the
    notes count it ("corrupt", "refused", "unreadable")."""

    def __init__(self, message: str, kind: str = "corrupt") -> None:
        super().__init__(message)
        self.kind = kind


def _clean(text: object, limit: int = 64) -> str:
    """Printable, short: names from a file never carry escape codes into a terminal."""
    s = "".join(ch if ch.isprintable() else "?" for ch in str(text)[:limit])
    return s


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:  # an int of 400 digits
        return None
    return value if value == value and abs(value) != float("inf") else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def parse_probe(data: bytes) -> dict[str, Any]:
    """Bytes of one probe file -> its document; raises `ProbeFileError` saying why not."""
    if len(data) > MAX_BYTES:
        raise ProbeFileError(f"larger than {MAX_BYTES // 1024} KiB")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ProbeFileError("not a probe file (truncated or corrupt)") from None
    if not isinstance(doc, dict):
        raise ProbeFileError("not a probe file (not a JSON object)")
    layout = _int(doc.get("layout"))
    if layout is None:
        raise ProbeFileError("not a probe file (no layout version)")
    if layout > LAYOUT_VERSION:
        raise ProbeFileError(
            f"written by a newer probe (layout {layout}, this monitor reads {LAYOUT_VERSION}): "
            "update gpusat-tui", "refused",
        )
    if layout < 1:
        raise ProbeFileError(f"unknown layout {layout}")
    pid = _int(doc.get("pid"))
    if pid is None or pid <= 0:
        raise ProbeFileError("not a probe file (no PID)")
    if doc["pid"] > PID_LIMIT:
        raise ProbeFileError(f"not a probe file (PID {str(doc['pid'])[:24]} cannot be)")
    return doc


def _alloc(raw: Any) -> ProbeAlloc | None:
    if not isinstance(raw, dict):
        return None
    figures = {k: _int(raw.get(k)) for k in ALLOC_KEYS}
    if all(v is None for v in figures.values()):
        return None
    return ProbeAlloc(**figures)


def sample_of(
    doc: Mapping[str, Any], now: float, card_id: str | None, tie: str | None
) -> ProbeSample:
    """A checked document -> the Frame's `ProbeSample` (a figure of the wrong type is None)."""
    t = _num(doc.get("t"))
    index = _int(doc.get("device_index"))
    device_type = doc.get("device_type")
    return ProbeSample(
        pid=doc["pid"],
        rank=_int(doc.get("rank")),
        local_rank=_int(doc.get("local_rank")),
        world_size=_int(doc.get("world_size")),
        device_index=index,
        card_id=card_id,
        tie=tie,
        data_wait_pct=_num(doc.get("data_wait_pct")),
        step_ms=_num(doc.get("step_ms")),
        batches_per_s=_num(doc.get("batches_per_s")),
        samples_per_s=_num(doc.get("samples_per_s")),
        batches=max(0, _int(doc.get("batches")) or 0),
        steps=max(0, _int(doc.get("steps")) or 0),
        data_wait_s=_num(doc.get("data_wait_s")),
        elapsed_s=_num(doc.get("elapsed_s")),
        alloc=_alloc(doc.get("alloc")),
        age_s=max(0.0, now - t) if t is not None else None,
        device_type=_clean(device_type, 16) if isinstance(device_type, str) else None,
        last_batch_s=_num(doc.get("last_batch_s")),
        last_step_s=_num(doc.get("last_step_s")),
        batch_size=_positive(doc.get("batch_size")),
        num_workers=_int(doc.get("num_workers")),
        framework=_clean(doc["framework"], 16) if isinstance(doc.get("framework"), str) else None,
        data_wait_note=(_clean(doc["data_wait_note"], 200)
                        if isinstance(doc.get("data_wait_note"), str) else None),
        stack_hz=_num(doc.get("stack_hz")),
        stack_still_s=_num(doc.get("stack_still_s")),
        **stack_fields(doc),
    )


def _positive(value: Any) -> int | None:
    number = _int(value)
    return number if number is not None and number > 0 else None


def _pid_state(pid: int, start_ticks: int | None) -> str:
    """"alive", "gone" (no such process, or its PID now belongs to another) or "unknown"."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        pass  # exists, another user's
    except (OSError, OverflowError, ValueError):  # OverflowError: a PID beyond a C int
        return "unknown"
    if start_ticks is None:
        return "alive"
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode(errors="replace")
        now_ticks = int(text[text.rindex(")") + 2:].split()[19])
    except FileNotFoundError:
        return "gone"
    except (OSError, ValueError, IndexError):
        return "unknown"
    return "alive" if now_ticks == start_ticks else "gone"


#: What `ProbeReader` remembers of a file found bad: (inode, mtime in ns, size).
_Fingerprint = tuple[int, int, int]


class ProbeReader:
    """One `sample()` per poll: every live probe as a `ProbeSample`, and notes for the rest."""

    def __init__(
        self,
        dirs: Sequence[str] | None = None,
        clock: Callable[[], float] = time.time,
        pid_state: Callable[[int, int | None], str] = _pid_state,
        writer_check: Callable[[int, int | None, float], str | None] = writer_refusal,
    ) -> None:
        self._dirs = list(dirs) if dirs is not None else None
        self._clock = clock
        self._pid_state = pid_state
        self._writer_check = writer_check
        self._uid = os.getuid() if hasattr(os, "getuid") else None
        self._notes = ProbeNotes()
        #: Files refused for what they hold, as they were then: not read again until changed.
        self._bad: dict[str, _Fingerprint] = {}

    def dirs(self) -> list[str]:
        return list(self._dirs) if self._dirs is not None else default_dirs()

    def sample(
        self, cards: Sequence[CardReading] = (), card_processes: Sequence[CardProcess] = ()
    ) -> tuple[list[ProbeSample], list[str]]:
        samples: list[ProbeSample] = []
        now = self._clock()
        self._notes.begin()
        present: set[str] = set()
        for folder in self.dirs():
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue  # no probe ever ran from here: nothing to say
            for entry in sorted(entries, key=lambda e: e.name):
                name = entry.name
                if not (name.startswith(FILE_PREFIX) and name.endswith(FILE_SUFFIX)):
                    continue
                path = entry.path
                present.add(path)
                self._notes.present(path)
                shown = _clean(path, 200)
                try:
                    sample = self._one(entry, now, cards, card_processes)
                except ProbeFileError as exc:
                    self._notes.add(path, exc.kind, f"probe file {shown} ignored: {exc}")
                    continue
                except Exception as exc:  # whatever one file does costs that file only
                    self._notes.add(path, "unreadable",
                                    f"probe file {shown} unreadable: {type(exc).__name__}")
                    continue
                if sample is not None:
                    samples.append(sample)
        for path in [p for p in self._bad if p not in present]:
            del self._bad[path]
        samples.sort(key=lambda s: (s.rank if s.rank is not None else 1 << 30, s.pid))
        return samples, self._notes.finish()

    def _one(
        self,
        entry: os.DirEntry[str],
        now: float,
        cards: Sequence[CardReading],
        card_processes: Sequence[CardProcess],
    ) -> ProbeSample | None:
        """The sample of one file; None when there is none to give (said, or removed)."""
        path = entry.path
        fingerprint = _fingerprint(entry)
        if fingerprint is not None and self._bad.get(path) == fingerprint:
            return None  # refused before and unchanged: its note was said
        try:
            doc, info = self._read(path)
            if f"{FILE_PREFIX}{doc['pid']}{FILE_SUFFIX}" != entry.name:
                raise ProbeFileError(f"says PID {doc['pid']}", "refused")
        except ProbeFileError:
            if fingerprint is not None:
                self._bad[path] = fingerprint
            raise
        self._bad.pop(path, None)
        pid = doc["pid"]
        state = self._pid_state(pid, _int(doc.get("start_ticks")))
        doc, rejected = bound_probe_figures(doc)
        t = _num(doc.get("t"))
        if t is not None and t > now + FUTURE_SLACK_S:
            rejected["t"], doc["t"], t = t, None, None
        age = now - t if t is not None else None
        if state == "gone" and (age is None or age > STALE_S):
            self._remove(path, pid)
            return None
        if state == "gone":
            # Fresh, but no such PID here: a trainer in another PID namespace sharing this
            # folder (a container), or one killed a moment ago (its figures then age out of
            # the verdict, and the file is removed once stale).
            self._notes.add(path, "namespace",
                            f"probe of PID {pid}: no such process here (another PID namespace?); "
                            "its figures are used while they are fresh", key="namespace")
        else:
            refusal = self._writer_check(pid, info.st_uid, info.st_mtime)
            if refusal is not None:
                raise ProbeFileError(refusal, "refused")
        if rejected:
            figures = ", ".join(f"{k}={_clean(v, 24)}" for k, v in sorted(rejected.items()))
            self._notes.add(
                path, "figures",
                f"probe of PID {pid}: impossible figures dropped ({figures})",
                key="figures " + " ".join(sorted(rejected)),
            )
        card_id, tie = tie_card(doc, cards, card_processes)
        sample = sample_of(doc, now, card_id, tie)
        self._notes.usable(path)
        return sample

    def _read(self, path: str) -> tuple[dict[str, Any], os.stat_result]:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        flags |= getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            raise ProbeFileError("gone while reading", "unreadable") from None
        except OSError as exc:
            if os.path.islink(path):
                raise ProbeFileError("a symlink (never followed)", "refused") from None
            raise ProbeFileError(f"cannot open ({exc.strerror or exc})", "unreadable") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ProbeFileError("not a regular file", "refused")
            if self._uid is not None and info.st_uid != self._uid:
                raise ProbeFileError(f"owned by another user (uid {info.st_uid})", "refused")
            if info.st_size > MAX_BYTES:
                raise ProbeFileError(f"larger than {MAX_BYTES // 1024} KiB", "refused")
            data = os.read(fd, MAX_BYTES + 1)
        finally:
            os.close(fd)
        return parse_probe(data), info

    def _remove(self, path: str, pid: int) -> None:
        # A trainer killed mid-publication also left its temporary file (hidden, never read).
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(os.path.dirname(path), tmp_name(pid)))
        try:
            os.unlink(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            self._notes.add(path, "exited", f"probe file of exited PID {pid} left in place: "
                                            f"{exc.strerror or exc}")
            return
        self._notes.add(path, "exited", f"PID {pid} exited: its probe file was removed")


def _fingerprint(entry: os.DirEntry[str]) -> _Fingerprint | None:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


class ProbePoller:
    """What the live source calls once per poll; never raises.

    Returns the samples and, for each probe tied to a card, a `CardProcess` for the process
    monitor, so a probed trainer and its workers are watched without ``--pid``.
    """

    def __init__(self, reader: ProbeReader | None = None) -> None:
        self.reader = reader or ProbeReader()

    def poll(
        self,
        cards: Sequence[CardReading],
        card_processes: Sequence[CardProcess],
        notes: list[str],
    ) -> tuple[list[ProbeSample], list[CardProcess]]:
        try:
            samples, said = self.reader.sample(cards, card_processes)
        except Exception as exc:  # a probe file must never take a poll down
            samples, said = [], [f"probe files not read: {type(exc).__name__}: {exc}"]
        notes.extend(n for n in said if n not in notes)
        listed = {(p.pid, p.card_id) for p in card_processes}
        extra = [
            CardProcess(pid=s.pid, card_id=s.card_id)
            for s in samples
            if s.card_id is not None and (s.pid, s.card_id) not in listed
        ]
        return samples, extra
