"""The status file: what a running dashboard or exporter leaves for ``gpusat-tui status``.

A tmux status bar runs ``gpusat-tui status`` every few seconds; it must cost milliseconds and
never start a vendor tool while a monitor on this host already polls. So each monitor writes
its job's verdict, once per poll, to ``status-<pid>.json`` in the probe's folder
(`gpusat_tui.probe.layout.default_dirs`: ``$GPUSAT_PROBE_DIR``, else
``$XDG_RUNTIME_DIR/gpusat-tui``, else ``<tempdir>/gpusat-tui-<uid>``, made 0700 and checked to
be ours), and ``status`` reads them under the trust model of `status_trust` (the caller's own
folder, files and live writers only), every figure bounded (`bounded`).

The layout is an interface, versioned like the probe file's: keys are only ever added with the
same `LAYOUT_VERSION`; a rename, removal or change of meaning bumps it, and a reader skips a
version newer than it knows. One JSON object, at most `MAX_BYTES`, always replaced whole
(written to ``.status-<pid>.json.tmp``, then ``os.replace``-d), removed when the writer exits.
A writer that cannot write says so once and stops trying (the monitor goes on).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Iterable, Mapping

from gpusat_tui.notify.status_trust import open_own_folder, read_own_file, writer_alive
from gpusat_tui.probe.layout import default_dirs, prepare_dir

# ``status`` runs on every refresh of a status bar: no pydantic (~100 ms), no typing, no
# dataclasses here (mypy reads a module-level ``TYPE_CHECKING`` by its name).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from gpusat_tui.model import Assessment, Frame
    from gpusat_tui.notify.status_waits import WaitWindow

__all__ = [
    "CACHE_NAME",
    "KINDS",
    "LAYOUT_1_KEYS",
    "LAYOUT_VERSION",
    "JobStatus",
    "StatusFileWriter",
    "bounded",
    "read_all",
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
    "data_wait_pct",  # float|null: the worst rank's data wait (probe), percent, over the
    #                   polls since the kind began (30 s at most), as the verdict's why quotes it
    "cards",          # int: number of cards
    "lagging",        # [str]: cards whose own verdict is the job's problem (straggler...)
    "headline",       # str|null: the first reason of the job's verdict
    # Added (same layout): whose job it is, so that ``status`` tells jobs apart.
    "job",            # str|null: the job's key (slurm:123, kubernetes:<uid>, plain:4242), null
                      #  when the monitor sees no trainer or several jobs
    "job_name",       # str|null: a short name for it (Slurm job name, pod, script), or "N jobs"
    "tmux",           # str|null: the writer's $TMUX (socket, server PID, session), when in tmux
)

#: A file is fresh while its figures are younger than this many of its writer's intervals
#: (and at least `MIN_FRESH_S`): one slow poll does not send ``status`` to poll on its own.
FRESH_INTERVALS = 3.0
MIN_FRESH_S = 5.0
#: Bounds on what a file may claim: a longer interval or freshness is taken as this long.
MAX_INTERVAL_S = 600.0
MAX_FRESH_S = FRESH_INTERVALS * MAX_INTERVAL_S
#: Verdict kinds a file may name (anything else reads as ``unknown``).
KINDS = ("saturated", "starving", "stalled", "fragmenting", "imbalanced", "idle", "unknown")
#: A ``since`` further back than this is no time (a job running for over a year).
MAX_SINCE_S = 366 * 86400.0
MAX_CARDS = 4096
MAX_LAGGING = 64
MAX_TEXT = 512
#: A quick poll's cached answer is reused at most this long, whatever the file says.
MAX_CACHE_S = 60.0


class JobStatus:
    """What the status line shows: one job's verdict and the figures that qualify it.

    A plain class, not a dataclass: importing dataclasses would double the cost of a call.
    """

    __slots__ = ("cards", "cause", "data_wait_pct", "headline", "job", "job_name", "kind",
                 "lagging", "pid", "since", "t", "tmux", "util_pct", "writer")

    def __init__(
        self, kind: str, cause: str | None = None, since: float | None = None,
        util_pct: float | None = None, data_wait_pct: float | None = None, cards: int = 0,
        lagging: tuple[str, ...] = (), headline: str | None = None, t: float | None = None,
        writer: str | None = None, job: str | None = None, job_name: str | None = None,
        tmux: str | None = None, pid: int | None = None,
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
        self.job = job
        self.job_name = job_name
        self.tmux = tmux
        self.pid = pid

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


def _job_name(name: str | None, command: str | None) -> str | None:
    """A job's short name: its scheduler's name, else the script its trainer runs."""
    if name:
        return name[:64]
    words = (command or "").split()
    script = next((w for w in words if w.endswith(".py")), words[0] if words else "")
    return os.path.basename(script)[:64] or None


def summarise(frame: Frame, assessment: Assessment, since: float | None = None,
              data_wait_pct: float | None = None) -> JobStatus:
    """The job's status from one poll and its verdicts (pure). ``data_wait_pct``: the worst
    rank's data wait over the verdict's span (`status_waits`); without it, the worst of the
    probes' own last intervals."""
    job = assessment.job
    if data_wait_pct is None:
        waits = [p.data_wait_pct for p in frame.probes if p.data_wait_pct is not None]
        data_wait_pct = max(waits) if waits else None
    problem = job.kind if job.kind in ("imbalanced", "fragmenting", "stalled") else None
    lagging = tuple(
        card_id for card_id, verdict in assessment.cards.items()
        if problem is not None and verdict.kind == problem
    )
    key = name = None
    # With no card the verdict stands on the probed trainers alone: where they are all one
    # job's (a dashboard judges the job it follows), the status is that job's.
    probed = {p.pid for p in frame.probes}
    owners = [j for j in frame.jobs if probed.intersection(j.pids)] if not frame.cards else []
    named = frame.jobs if len(frame.jobs) == 1 else owners if len(owners) == 1 else []
    if named:
        key, name = named[0].key, _job_name(named[0].name, named[0].command)
    elif frame.jobs:
        name = f"{len(frame.jobs)} jobs"
    return JobStatus(
        kind=job.kind, cause=job.cause, since=since,
        util_pct=_mean(c.util_pct for c in frame.cards if c.stale_s is None),
        data_wait_pct=data_wait_pct, cards=len(frame.cards),
        lagging=lagging, headline=job.why[0] if job.why else None, t=frame.t,
        job=key, job_name=name,
    )


def fresh_for(interval_s: float | None) -> float:
    """How long a monitor's figures stay fresh: `FRESH_INTERVALS` polls, `MIN_FRESH_S` at least,
    `MAX_FRESH_S` at most (an interval over `MAX_INTERVAL_S` counts as that, one that is no
    number of seconds as one second)."""
    interval = 1.0 if interval_s is None or not interval_s > 0 else min(interval_s,
                                                                         MAX_INTERVAL_S)
    return max(FRESH_INTERVALS * interval, MIN_FRESH_S)


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
        "job": status.job, "job_name": status.job_name, "tmux": os.environ.get("TMUX") or None,
    }


def _num(value: object) -> float | None:
    """A finite number from a file, or None (an integer of 400 digits is no float either)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _pct(value: float | None) -> float | None:
    """A percentage, or None when it is none (NaN, infinite, below 0 or above 100 by more
    than rounding)."""
    if value is None or not math.isfinite(value) or not -0.5 <= value <= 100.5:
        return None
    return min(100.0, max(0.0, value))


def _text(value: object) -> str | None:
    return value[:MAX_TEXT] if isinstance(value, str) else None


def bounded(status: JobStatus, now: float) -> JobStatus:
    """The status with every figure finite and in its range, or None where it is not: what
    any output may format without checking again (`commands.status.render` takes only this)."""
    t = status.t if status.t is not None and math.isfinite(status.t) else None
    since = status.since
    if since is not None and not (math.isfinite(since)
                                  and now - MAX_SINCE_S <= since <= now + 60.0):
        since = None
    cards = status.cards if isinstance(status.cards, int) and 0 <= status.cards <= MAX_CARDS \
        else 0
    return JobStatus(
        kind=status.kind if status.kind in KINDS else "unknown",
        cause=_text(status.cause), since=since, util_pct=_pct(status.util_pct),
        data_wait_pct=_pct(status.data_wait_pct), cards=cards,
        lagging=tuple(str(c)[:MAX_TEXT] for c in status.lagging[:MAX_LAGGING]),
        headline=_text(status.headline), t=t, writer=_text(status.writer),
        job=_text(status.job), job_name=_text(status.job_name), tmux=_text(status.tmux),
        pid=status.pid,
    )


def from_document(doc: Mapping[str, Any]) -> JobStatus | None:
    """A status from a file's object; None when it is not a layout this reader knows."""
    if doc.get("layout") != LAYOUT_VERSION or not isinstance(doc.get("kind"), str):
        return None
    lagging = doc.get("lagging")
    cards = doc.get("cards")
    pid = doc.get("pid")
    return JobStatus(
        kind=doc["kind"], cause=_text(doc.get("cause")),
        since=_num(doc.get("since")), util_pct=_num(doc.get("util_pct")),
        data_wait_pct=_num(doc.get("data_wait_pct")),
        cards=cards if isinstance(cards, int) and not isinstance(cards, bool) else 0,
        lagging=tuple(str(c) for c in lagging[:MAX_LAGGING]) if isinstance(lagging, list)
        else (),
        headline=_text(doc.get("headline")), t=_num(doc.get("t")),
        writer=_text(doc.get("writer")), job=_text(doc.get("job")),
        job_name=_text(doc.get("job_name")), tmux=_text(doc.get("tmux")),
        pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
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
        self._waits: WaitWindow | None = None

    def publish(self, frame: Frame, assessment: Assessment) -> JobStatus:
        """Fold in a poll, write the file; returns what was written."""
        if assessment.job.kind != self._kind:
            self._kind, self._since = assessment.job.kind, frame.t
        if self._waits is None:
            # Here, not at the top: the status bar's read path imports this module.
            from gpusat_tui.notify.status_waits import WaitWindow

            self._waits = WaitWindow()
        wait = self._waits.update(frame, self._since)
        status = summarise(frame, assessment, since=self._since, data_wait_pct=wait)
        self.write(status)
        return status

    def write(self, status: JobStatus) -> None:
        if self.failure is not None:
            return
        try:
            if self.path is None:
                folder = prepare_dir(self._folder or default_dirs()[0])
                folder_fd = open_own_folder(folder)
                if folder_fd is None:  # `status` would not read it: say so now
                    raise OSError(f"{folder} is writable by other users (chmod go-w it)")
                os.close(folder_fd)
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


def _limit(doc: Mapping[str, Any], name: str, max_age_s: float | None) -> float:
    """How old this file's figures may be: the caller's ``--max-age``, else what its writer
    set, bounded (`MAX_FRESH_S`; a quick poll's cache `MAX_CACHE_S`)."""
    if max_age_s is not None:
        return max_age_s
    fresh = _num(doc.get("fresh_s"))
    limit = min(fresh, MAX_FRESH_S) if fresh is not None and fresh > 0 \
        else fresh_for(_num(doc.get("interval_s")))
    return min(limit, MAX_CACHE_S) if name == CACHE_NAME else limit


def read_all(now: float | None = None, dirs: Iterable[str] | None = None,
             max_age_s: float | None = None) -> list[JobStatus]:
    """Every fresh status the caller's own live monitors left (`status_trust`), figures
    bounded; the newest first.

    Fresh: its figures, and the file, are at most ``max_age_s`` old (default: the ``fresh_s``
    its writer set, bounded) and its writer still runs (a quick poll's cache excepted).
    """
    now = time.time() if now is None else now
    found: list[JobStatus] = []
    for folder in dirs if dirs is not None else default_dirs():
        folder_fd = open_own_folder(folder)
        if folder_fd is None:
            continue
        try:
            found += _read_folder(folder_fd, now, max_age_s)
        finally:
            os.close(folder_fd)
    found.sort(key=lambda status: -(status.t or 0.0))
    return found


def _read_folder(folder_fd: int, now: float, max_age_s: float | None) -> list[JobStatus]:
    found: list[JobStatus] = []
    try:
        names = os.listdir(folder_fd)
    except OSError:
        return found
    for name in names:
        if not (name.startswith(FILE_PREFIX) and name.endswith(FILE_SUFFIX)):
            continue
        read = read_own_file(folder_fd, name, MAX_BYTES)
        if read is None or not read[0] or len(read[0]) > MAX_BYTES:
            continue
        data, mtime = read
        try:
            doc = json.loads(data)
        except ValueError:
            continue
        if not isinstance(doc, dict):
            continue
        status = from_document(doc)
        if status is None or status.t is None:
            continue
        limit = _limit(doc, name, max_age_s)
        if not (-1.0 <= now - status.t <= limit and -1.0 <= now - mtime <= limit):
            continue
        # A quick poll's cached answer outlives its writer on purpose (`CACHE_NAME`).
        if name != CACHE_NAME and not writer_alive(doc.get("pid"), mtime):
            continue
        found.append(bounded(status, now))
    return found


def read_fresh(now: float | None = None, dirs: Iterable[str] | None = None,
               max_age_s: float | None = None) -> JobStatus | None:
    """The freshest status any live monitor of the caller's left, or None (`read_all`)."""
    found = read_all(now, dirs, max_age_s)
    return found[0] if found else None
