"""CPU quotas from cgroup files: the pure parsers on captured text (cgroup v2 and v1, a Docker
container, a Slurm step, a Kubernetes pod), and the reader on a folder laid out like
``/sys/fs/cgroup`` and ``/proc``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpusat_tui.host.monitor.cpu_quota import (
    CgroupQuotaReader,
    CpuStat,
    cgroup_mounts,
    parse_cfs_quota,
    parse_cpu_max,
    parse_cpu_stat,
    parse_proc_cgroup,
    throttled_share,
)

#: /proc/<pid>/cgroup of a process in a Kubernetes pod on a cgroup v2 host.
POD_PATH = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c.slice/cri-9f.scope"
V2_POD = f"0::{POD_PATH}\n"
#: ... of a Slurm step on a cgroup v1 host (cpu and cpuacct mounted together).
V1_SLURM = """12:pids:/slurm/uid_1000/job_4242/step_0
11:cpu,cpuacct:/slurm/uid_1000/job_4242/step_0/task_0
4:memory:/slurm/uid_1000/job_4242/step_0
1:name=systemd:/user.slice
0::/
"""
#: A v2 cpu.stat of a container limited with ``docker --cpus 0.5`` under load.
V2_STAT = """usage_usec 3121958
user_usec 2891211
system_usec 230747
nr_periods 622
nr_throttled 560
throttled_usec 27012345
nr_bursts 0
burst_usec 0
"""
#: A v1 cpu.stat (throttled_time in nanoseconds).
V1_STAT = """nr_periods 1200
nr_throttled 300
throttled_time 15000000000
nr_bursts 0
burst_time 0
"""
MOUNTS_HYBRID = """cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,nodev,noexec,relatime 0 0
cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,nosuid,nodev,noexec,relatime,memory 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
"""


def test_proc_cgroup_paths() -> None:
    assert parse_proc_cgroup(V2_POD) == (POD_PATH, None)
    assert parse_proc_cgroup(V1_SLURM) == ("/", "/slurm/uid_1000/job_4242/step_0/task_0")
    assert parse_proc_cgroup("garbage\n\n3:cpuset:/x\n") == (None, None)


@pytest.mark.parametrize(("text", "cores"), [
    ("50000 100000\n", 0.5), ("150000 100000", 1.5), ("max 100000\n", None), ("", None),
    ("200000", 2.0), ("x 100000", None), ("0 100000", None),
])
def test_cpu_max(text: str, cores: float | None) -> None:
    assert parse_cpu_max(text) == cores


def test_cfs_quota() -> None:
    assert parse_cfs_quota("50000\n", "100000\n") == 0.5
    assert parse_cfs_quota("-1\n", "100000\n") is None
    assert parse_cfs_quota("", "100000") is None


def test_cpu_stat_v2_and_v1() -> None:
    assert parse_cpu_stat(V2_STAT) == CpuStat(622, 560, 27.012345)
    assert parse_cpu_stat(V1_STAT) == CpuStat(1200, 300, 15.0)
    assert parse_cpu_stat("usage_usec 5\n") is None  # no quota accounting: cpu.stat of v2 root


def test_throttled_share_between_two_readings() -> None:
    then, now = CpuStat(100, 10, 1.0), CpuStat(200, 88, 5.0)
    assert throttled_share(then, now) == pytest.approx(78.0)
    assert throttled_share(now, now) is None  # no period passed: an idle cgroup
    assert throttled_share(now, then) is None  # counters went back: not the same cgroup


def test_mounts() -> None:
    assert cgroup_mounts(MOUNTS_HYBRID) == (
        ["/sys/fs/cgroup/unified"], "/sys/fs/cgroup/cpu,cpuacct")
    assert cgroup_mounts("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n") == (["/sys/fs/cgroup"], None)


def _tree(tmp_path: Path, pid: int, cgroup: str) -> Path:
    proc = tmp_path / "proc" / str(pid)
    proc.mkdir(parents=True)
    (proc / "cgroup").write_text(cgroup)
    return tmp_path


def test_reader_takes_the_tightest_quota_on_the_path_and_its_throttling(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    job = root / "slurm" / "job_1"
    task = job / "step_0" / "task_0"
    task.mkdir(parents=True)
    (root / "cpu.max").write_text("max 100000\n")
    (job / "cpu.max").write_text("50000 100000\n")  # the job's limit: half a core
    (job / "step_0" / "cpu.max").write_text("200000 100000\n")
    (task / "cpu.max").write_text("max 100000\n")
    (job / "cpu.stat").write_text("nr_periods 100\nnr_throttled 10\nthrottled_usec 1000\n")
    _tree(tmp_path, 42, "0::/slurm/job_1/step_0/task_0\n")
    reader = CgroupQuotaReader(str(tmp_path / "proc"), f"cgroup2 {root} cgroup2 rw 0 0\n")
    first = reader.figures(42, 1.0, now=10.0)
    assert first is not None and first.cores == 0.5 and first.throttled_pct is None
    (job / "cpu.stat").write_text("nr_periods 110\nnr_throttled 18\nthrottled_usec 9000\n")
    later = reader.figures(42, 1.0, now=11.0)
    assert later is not None and later.throttled_pct == pytest.approx(80.0)
    # The same tick read again (a worker in the same cgroup): the same figures.
    assert reader.figures(42, 1.0, now=11.0) == later


def test_reader_without_a_quota_or_a_cgroup(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    (root / "a").mkdir(parents=True)
    (root / "a" / "cpu.max").write_text("max 100000\n")
    _tree(tmp_path, 7, "0::/a\n")
    reader = CgroupQuotaReader(str(tmp_path / "proc"), f"cgroup2 {root} cgroup2 rw 0 0\n")
    assert reader.figures(7, 1.0, now=1.0) is None
    assert reader.figures(8, 1.0, now=1.0) is None  # no /proc/8: gone
    assert not CgroupQuotaReader(str(tmp_path / "proc"), "").usable


def test_reader_on_cgroup_v1(tmp_path: Path) -> None:
    root = tmp_path / "cpu"
    step = root / "slurm" / "job_4242" / "step_0" / "task_0"
    step.mkdir(parents=True)
    for folder, quota in ((root, "-1"), (step, "150000")):
        (folder / "cpu.cfs_quota_us").write_text(quota + "\n")
        (folder / "cpu.cfs_period_us").write_text("100000\n")
    (step / "cpu.stat").write_text(V1_STAT)
    _tree(tmp_path, 9, "11:cpu,cpuacct:/slurm/job_4242/step_0/task_0\n0::/\n")
    mounts = f"cgroup {root} cgroup rw,cpu,cpuacct 0 0\n"
    figures = CgroupQuotaReader(str(tmp_path / "proc"), mounts).figures(9, 1.0, now=1.0)
    assert figures is not None and figures.cores == 1.5
