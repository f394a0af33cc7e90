"""A process's CPU quota and how often the kernel holds it back: its cgroup's limit and
throttling counters, cgroup v2 and v1.

The limit is the kernel's own figure. Cgroup v2: ``cpu.max`` (``"50000 100000"``: 50 ms of
CPU per 100 ms period, half a core; ``"max 100000"``: none) and ``cpu.stat`` (``nr_periods``,
``nr_throttled``, ``throttled_usec``). Cgroup v1: ``cpu.cfs_quota_us`` (-1: none),
``cpu.cfs_period_us`` and ``cpu.stat`` (``throttled_time`` in nanoseconds). Containers
(``docker --cpus``, Kubernetes ``resources.limits.cpu``) and Slurm (``--cpus-per-task`` with
cgroup constraints) set it. The tightest quota on the way from the process's cgroup up to the
hierarchy's root is the one that holds it back, and its counters say how often it did.

Parsers here are pure (text in, figures out); `CgroupQuotaReader` does the reading: a
process's cgroup once (by PID and start time), each limiting cgroup's ``cpu.stat`` once per
tick however many processes share it, and the share of periods throttled between two ticks.
What it costs: two small reads per process when first seen (its ``/proc/<pid>/cgroup`` and
the limits up its path), then one ``cpu.stat`` read per quota'd cgroup per tick; a process in
no quota'd cgroup (most) costs nothing after that.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "CgroupQuotaReader",
    "CpuStat",
    "QuotaFigures",
    "cgroup_mounts",
    "parse_cfs_quota",
    "parse_cpu_max",
    "parse_cpu_stat",
    "parse_proc_cgroup",
    "throttled_share",
]


def parse_proc_cgroup(text: str) -> tuple[str | None, str | None]:
    """(cgroup v2 path, cgroup v1 ``cpu`` controller path) from ``/proc/<pid>/cgroup``."""
    v2: str | None = None
    v1: str | None = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if hid == "0" and controllers == "":
            v2 = path
        elif "cpu" in controllers.split(","):
            v1 = path
    return v2, v1


def parse_cpu_max(text: str) -> float | None:
    """Cores a v2 ``cpu.max`` allows (``"50000 100000"`` -> 0.5); None: no limit (``max``)
    or unreadable text."""
    fields = text.split()
    if not fields or fields[0] == "max":
        return None
    try:
        quota = int(fields[0])
        period = int(fields[1]) if len(fields) > 1 else 100000
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def parse_cfs_quota(quota_text: str, period_text: str) -> float | None:
    """Cores a v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` pair allows; None: no limit
    (-1) or unreadable text."""
    try:
        quota, period = int(quota_text.strip()), int(period_text.strip())
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


class CpuStat(NamedTuple):
    """Cumulative throttling counters of one cgroup (``cpu.stat``)."""

    nr_periods: int
    nr_throttled: int
    #: Seconds the cgroup was held back (v2 ``throttled_usec``, v1 ``throttled_time`` ns).
    throttled_s: float


def parse_cpu_stat(text: str) -> CpuStat | None:
    """The throttling counters of a v2 or v1 ``cpu.stat``; None without ``nr_periods``."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 2:
            try:
                values[fields[0]] = int(fields[1])
            except ValueError:
                continue
    if "nr_periods" not in values or "nr_throttled" not in values:
        return None
    if "throttled_usec" in values:
        held = values["throttled_usec"] / 1e6
    else:
        held = values.get("throttled_time", 0) / 1e9
    return CpuStat(values["nr_periods"], values["nr_throttled"], held)


def throttled_share(then: CpuStat, now: CpuStat) -> float | None:
    """Percent of the quota periods between two readings in which the cgroup was throttled;
    None where no period passed (an idle cgroup) or a counter went back (not the same
    cgroup)."""
    periods = now.nr_periods - then.nr_periods
    held = now.nr_throttled - then.nr_throttled
    if periods <= 0 or held < 0:
        return None
    return min(100.0, 100.0 * held / periods)


def cgroup_mounts(mounts_text: str) -> tuple[list[str], str | None]:
    """(cgroup v2 mount points, the v1 ``cpu`` controller's mount point) from
    ``/proc/self/mounts``."""
    v2: list[str] = []
    v1: str | None = None
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        where, kind, options = fields[1], fields[2], fields[3].split(",")
        if kind == "cgroup2":
            v2.append(where)
        elif kind == "cgroup" and "cpu" in options and v1 is None:
            v1 = where
    return v2, v1


class QuotaFigures(NamedTuple):
    """A process's quota this tick: cores allowed and the share of periods throttled over the
    last interval (None: not measured yet)."""

    cores: float
    throttled_pct: float | None


@dataclass
class _Limit:
    """The cgroup whose quota holds a process back, and its counters at the last tick."""

    folder: str
    cores: float
    last: CpuStat | None = None
    share: float | None = None
    tick: float | None = None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read(4096)
    except OSError:
        return None


class CgroupQuotaReader:
    """The CPU quota of watched processes (see the module docstring)."""

    def __init__(self, proc_root: str = "/proc", mounts_text: str | None = None) -> None:
        self._proc = proc_root
        if mounts_text is None:
            mounts_text = _read(os.path.join(proc_root, "self", "mounts")) or ""
        self._v2, self._v1 = cgroup_mounts(mounts_text)
        #: (pid, start) -> the limit that holds it (None: no quota on its path).
        self._limits: dict[tuple[int, float], _Limit | None] = {}
        #: Limiting cgroup folder -> its limit (shared by the processes in it).
        self._by_folder: dict[str, _Limit] = {}

    @property
    def usable(self) -> bool:
        """Whether any cgroup hierarchy with CPU limits is mounted here."""
        return bool(self._v2 or self._v1)

    def figures(self, pid: int, start: float, now: float) -> QuotaFigures | None:
        """The quota that holds ``pid`` back and its throttled share since the last tick;
        None: no quota (or no cgroup readable)."""
        key = (pid, start)
        if key not in self._limits:
            if len(self._limits) > 4096:
                self._limits.clear()
            self._limits[key] = self._find(pid)
        limit = self._limits[key]
        if limit is None:
            return None
        if limit.tick != now:
            stat = parse_cpu_stat(_read(os.path.join(limit.folder, "cpu.stat")) or "")
            limit.share = (
                throttled_share(limit.last, stat)
                if limit.last is not None and stat is not None else None
            )
            limit.last, limit.tick = stat, now
        return QuotaFigures(limit.cores, limit.share)

    def forget(self, pid: int, start: float) -> None:
        """A process gone: its cgroup is looked up again if the PID comes back."""
        self._limits.pop((pid, start), None)

    def _find(self, pid: int) -> _Limit | None:
        text = _read(os.path.join(self._proc, str(pid), "cgroup"))
        if text is None:
            return None
        v2_path, v1_path = parse_proc_cgroup(text)
        found: tuple[str, float] | None = None
        if v1_path is not None and self._v1 is not None:
            found = self._tightest(self._v1, v1_path, version=1)
        if found is None and v2_path is not None:
            for mount in self._v2:
                found = self._tightest(mount, v2_path, version=2)
                if found is not None:
                    break
        if found is None:
            return None
        folder, cores = found
        limit = self._by_folder.get(folder)
        if limit is None or limit.cores != cores:
            limit = self._by_folder[folder] = _Limit(folder, cores)
        return limit

    @staticmethod
    def _tightest(mount: str, path: str, *, version: int) -> tuple[str, float] | None:
        """(folder, cores) of the smallest quota from ``path``'s folder up to ``mount``."""
        rel = path.strip("/")
        folder = os.path.join(mount, rel) if rel else mount
        if not os.path.isdir(folder):
            folder = mount  # another cgroup namespace: its root is the mount
        best: tuple[str, float] | None = None
        while True:
            if version == 2:
                cores = parse_cpu_max(_read(os.path.join(folder, "cpu.max")) or "max")
            else:
                quota = _read(os.path.join(folder, "cpu.cfs_quota_us"))
                period = _read(os.path.join(folder, "cpu.cfs_period_us"))
                cores = (parse_cfs_quota(quota, period)
                         if quota is not None and period is not None else None)
            if cores is not None and (best is None or cores < best[1]):
                best = (folder, cores)
            if os.path.normpath(folder) == os.path.normpath(mount):
                return best
            parent = os.path.dirname(folder.rstrip("/"))
            if len(parent) < len(mount):
                return best
            folder = parent
