"""The status file: what a running dashboard or exporter leaves for ``gpusat-tui status``.

A tmux status bar runs ``gpusat-tui status`` every few seconds; it must cost milliseconds and
never start a vendor tool while a monitor on this host already polls. So each monitor writes
its job's verdict, once per poll, to ``status-<pid>.json`` in the probe's folder
(`gpusat_tui.probe.layout.default_dirs`: ``$GPUSAT_PROBE_DIR``, else
``$XDG_RUNTIME_DIR/gpusat-tui``, else ``<tempdir>/gpusat-tui-<uid>``, made 0700 and checked to
be ours), and ``status`` reads the freshest one.

The layout is an interface, versioned like the probe file's: keys are only ever added with the
same `LAYOUT_VERSION`; a rename, removal or change of meaning bumps it, and a reader skips a
version newer than it knows. One JSON object, at most `MAX_BYTES`, always replaced whole
(written to ``.status-<pid>.json.tmp``, then ``os.replace``-d), removed when the writer exits.
A writer that cannot write says so once and stops trying (the monitor goes on).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Mapping

from gpusat_tui.probe.layout import default_dirs, prepare_dir

# ``status`` runs on every refresh of a status bar: no pydantic (~100 ms), no typing, no
# dataclasses here (mypy reads a module-level ``TYPE_CHECKING`` by its name).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gpusat_tui.model import Assessment, Frame

__all__ = [
    "CACHE_NAME",
    "LAYOUT_1_KEYS",
    "LAYOUT_VERSION",
    "JobStatus",
    "StatusFileWriter",
    "read_fresh",
    "summarise",
]

LAYOUT_VERSION = 1
MAX_BYTES = 16 * 1024
FILE_PREFIX = "status-"
FILE_SUFFIX = ".json"
#: Where ``status`` keeps the answer of its own quick poll, so that the next calls within the
#: freshness limit read it instead of starting the tools again.
CACHE_NAME = f"{FILE_PREFIX}poll{FILE_SUFFIX}"

#: Every key of a layout-1 file (values may be null where unknown). Pinned by tests.
LAYOUT_1_KEYS = (
    "layout",         # int: LAYOUT_VERSION of the writer
    "writer",         # "dashboard" | "export" | "status" (a quick poll's cached answer)
    "pid",            # int: the writer's PID (a file whose writer is gone is not fresh)
    "t",              # float: unix time of the poll the figures come from
    "interval_s",     # float|null: the writer's poll interval
    "fresh_s",        # float: how long after t a reader may show these figures
    "kind",           # str: the job's verdict kind (saturated, starving, stalled...)
    "cause",          # str|null: its cause (input-bound, straggler...)
    "since",          # float|null: unix time since which the job has had this kind
    "util_pct",       # float|null: mean utilisation of the cards, percent
    "data_wait_pct",  # float|null: the worst rank's data wait (probe), percent
    "cards",          # int: number of cards
    "lagging",        # [str]: cards whose own verdict is the job's problem (straggler...)
    "headline",       # str|null: the first reason of the job's verdict
)

#: A file is fresh while its figures are younger than this many of its writer's intervals
#: (and at least `MIN_FRESH_S`): one slow poll does not send ``status`` to poll on its own.
FRESH_INTERVALS = 3.0
MIN_FRESH_S = 5.0


class JobStatus:
    """What the status line shows: one job's verdict and the figures that qualify it.

    A plain class, not a dataclass: importing dataclasses would double the cost of a call.
    """

    __slots__ = ("cards", "cause", "data_wait_pct", "headline", "kind", "lagging", "since",
                 "t", "util_pct", "writer")

    def __init__(
        self, kind: str, cause: str | None = None, since: float | None = None,
        util_pct: float | None = None, data_wait_pct: float | None = None, cards: int = 0,
        lagging: tuple[str, ...] = (), headline: str | None = None, t: float | None = None,
        writer: str | None = None,
    ) -> None:
        self.kind = kind
        self.cause = cause
        self.since = since
        self.util_pct = util_pct
        self.data_wait_pct = data_wait_pct
        self.cards = cards
        self.lagging = lagging
        self.headline = headline
        self.t = t
        self.writer = writer

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JobStatus) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"JobStatus({args})"


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def summarise(frame: Frame, assessment: Assessment, since: float | None = None) -> JobStatus:
    """The job's status from one poll and its verdicts (pure)."""
    job = assessment.job
    waits = [p.data_wait_pct for p in frame.probes if p.data_wait_pct is not None]
    problem = job.kind if job.kind in ("imbalanced", "fragmenting", "stalled") else None
    lagging = tuple(
        card_id for card_id, verdict in assessment.cards.items()
        if problem is not None and verdict.kind == problem
    )
    return JobStatus(
        kind=job.kind, cause=job.cause, since=since,
        util_pct=_mean(c.util_pct for c in frame.cards if c.stale_s is None),
        data_wait_pct=max(waits) if waits else None, cards=len(frame.cards),
        lagging=lagging, headline=job.why[0] if job.why else None, t=frame.t,
    )


def fresh_for(interval_s: float | None) -> float:
    """How long a monitor's figures stay fresh: `FRESH_INTERVALS` polls, `MIN_FRESH_S` at least."""
    return max(FRESH_INTERVALS * (interval_s or 1.0), MIN_FRESH_S)


def to_document(status: JobStatus, writer: str, interval_s: float | None,
                fresh_s: float | None = None) -> dict[str, Any]:
    return {
        "layout": LAYOUT_VERSION, "writer": writer, "pid": os.getpid(), "t": status.t,
        "interval_s": interval_s,
        "fresh_s": fresh_s if fresh_s is not None else fresh_for(interval_s),
        "kind": status.kind, "cause": status.cause,
        "since": status.since, "util_pct": status.util_pct,
        "data_wait_pct": status.data_wait_pct, "cards": status.cards,
        "lagging": list(status.lagging), "headline": status.headline,
    }


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def from_document(doc: Mapping[str, Any]) -> JobStatus | None:
    """A status from a file's object; None when it is not a layout this reader knows."""
    if doc.get("layout") != LAYOUT_VERSION or not isinstance(doc.get("kind"), str):
        return None
    lagging = doc.get("lagging")
    cause, headline, writer = doc.get("cause"), doc.get("headline"), doc.get("writer")
    return JobStatus(
        kind=doc["kind"], cause=cause if isinstance(cause, str) else None,
        since=_num(doc.get("since")), util_pct=_num(doc.get("util_pct")),
        data_wait_pct=_num(doc.get("data_wait_pct")), cards=int(_num(doc.get("cards")) or 0),
        lagging=tuple(str(c) for c in lagging) if isinstance(lagging, list) else (),
        headline=headline if isinstance(headline, str) else None, t=_num(doc.get("t")),
        writer=writer if isinstance(writer, str) else None,
    )


class StatusFileWriter:
    """Writes one monitor's status file per poll; never raises into the monitor."""

    def __init__(self, writer: str, interval_s: float | None, folder: str | None = None,
                 name: str | None = None, fresh_s: float | None = None) -> None:
        self.writer = writer
        self.interval_s = interval_s
        self.fresh_s = fresh_s
        self._folder = folder
        self._name = name or f"{FILE_PREFIX}{os.getpid()}{FILE_SUFFIX}"
        self.path: str | None = None
        #: Why writing stopped (said once by the caller), or None while it works.
        self.failure: str | None = None
        self._kind: str | None = None
        self._since: float | None = None

    def publish(self, frame: Frame, assessment: Assessment) -> JobStatus:
        """Fold in a poll, write the file; returns what was written."""
        if assessment.job.kind != self._kind:
            self._kind, self._since = assessment.job.kind, frame.t
        status = summarise(frame, assessment, since=self._since)
        self.write(status)
        return status

    def write(self, status: JobStatus) -> None:
        if self.failure is not None:
            return
        try:
            if self.path is None:
                folder = prepare_dir(self._folder or default_dirs()[0])
                self.path = os.path.join(folder, self._name)
            doc = to_document(status, self.writer, self.interval_s, self.fresh_s)
            data = json.dumps(doc,
                              separators=(",", ":")).encode()
            folder, name = os.path.split(self.path)
            tmp = os.path.join(folder, f".{name}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
                         | getattr(os, "O_NOFOLLOW", 0), 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError as exc:
            self.failure = f"status file not written ({exc.strerror or exc}): " \
                           "`gpusat-tui status` will poll on its own"

    def close(self) -> None:
        """Remove the file (the writer is going away: its figures would only age)."""
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _read_small(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        return os.read(fd, MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_fresh(now: float | None = None, dirs: Iterable[str] | None = None,
               max_age_s: float | None = None) -> JobStatus | None:
    """The freshest status any live monitor of this user left, or None.

    Fresh: its figures are at most ``max_age_s`` old (default: the ``fresh_s`` its writer
    set) and its writer still runs (a quick poll's cache excepted).
    """
    now = time.time() if now is None else now
    best: JobStatus | None = None
    for folder in dirs if dirs is not None else default_dirs():
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if not (name.startswith(FILE_PREFIX) and name.endswith(FILE_SUFFIX)):
                continue
            data = _read_small(os.path.join(folder, name))
            if not data or len(data) > MAX_BYTES:
                continue
            try:
                doc = json.loads(data)
            except ValueError:
                continue
            if not isinstance(doc, dict):
                continue
            status = from_document(doc)
            pid = doc.get("pid")
            if status is None or status.t is None or not isinstance(pid, int):
                continue
            fresh = _num(doc.get("fresh_s"))
            limit = max_age_s if max_age_s is not None else (
                fresh if fresh is not None else fresh_for(_num(doc.get("interval_s"))))
            if not -1.0 <= now - status.t <= limit:
                continue
            # A quick poll's cached answer outlives its writer on purpose (`CACHE_NAME`).
            if name != CACHE_NAME and pid != os.getpid() and not _pid_alive(pid):
                continue
            if best is None or (best.t or 0.0) < status.t:
                best = status
    return best
