"""CPU cost of reading a process's cgroup CPU quota (host.monitor.cpu_quota), run by hand.

    python benchmarks/bench_cpu_quota.py [--calls 20000]

Needs root and a cgroup v1 ``cpu`` or v2 hierarchy where a child cgroup can be made: it makes
one with a quota of half a core, puts a ``sleep`` in it, and times, with ``time.process_time``
(this process's CPU), `CgroupQuotaReader.figures` three ways: a process in a quota'd cgroup at a
new tick (its ``cpu.stat`` read once a tick, shared by every process of that cgroup), a process
in no quota'd cgroup (after its first look-up: nothing read), and the first look-up itself
(``/proc/<pid>/cgroup`` and the limits up its path, once per process). Everything it makes is
removed before it exits.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpusat_tui.host.monitor.cpu_quota import CgroupQuotaReader, cgroup_mounts


def _make() -> tuple[Path, str]:
    v2, v1 = cgroup_mounts(Path("/proc/self/mounts").read_text())
    if v1 is not None:
        folder = Path(v1) / f"gpusat-bench-{uuid.uuid4().hex[:8]}"
        folder.mkdir()
        (folder / "cpu.cfs_quota_us").write_text("50000\n")
        return folder, "v1"
    for mount in v2:
        folder = Path(mount) / f"gpusat-bench-{uuid.uuid4().hex[:8]}"
        folder.mkdir()
        (folder / "cpu.max").write_text("50000 100000\n")
        return folder, "v2"
    raise SystemExit("no cgroup hierarchy with CPU limits is mounted here")


def _per_call_us(calls: int, step: object) -> float:
    start = time.process_time()
    for i in range(calls):
        step(i)  # type: ignore[operator]
    return 1e6 * (time.process_time() - start) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    folder, version = _make()
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        (folder / "cgroup.procs").write_text(f"{sleeper.pid}\n")
        reader = CgroupQuotaReader()
        reader.figures(sleeper.pid, 1.0, 0.0)
        reader.figures(os.getpid(), 1.0, 0.0)
        quota = _per_call_us(args.calls, lambda i: reader.figures(sleeper.pid, 1.0, i + 1.0))
        plain = _per_call_us(args.calls, lambda i: reader.figures(os.getpid(), 1.0, i + 1.0))
        first = _per_call_us(
            max(args.calls // 100, 10),
            lambda i: CgroupQuotaReader().figures(sleeper.pid, 1.0, 0.0),
        )
        print(f"cgroup {version}: quota'd process, new tick {quota:.1f} µs; no quota "
              f"{plain:.2f} µs; first look-up {first:.0f} µs (CPU per call)")
    finally:
        sleeper.kill()
        sleeper.wait()
        for _ in range(50):
            with contextlib.suppress(OSError):
                folder.rmdir()
                break
            time.sleep(0.1)


if __name__ == "__main__":
    main()
