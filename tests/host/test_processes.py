"""The process side: real DataLoader jobs found and measured, and every bad case survived.

Jobs are real processes started here and killed here (by process group, in fixtures), each a
few seconds long. CPU figures are measured over ~1.5 s on a 2-core machine, so bounds are
modest (a burning worker > 50 % of a core, an idle one < 25 %).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from gpusat_tui.errors import ParseError
from gpusat_tui.host.monitor import processes as procmod
from gpusat_tui.host.monitor import trainer_census
from gpusat_tui.host.monitor.proc_readers import ProcStat, hidepid_from_mounts
from gpusat_tui.host.monitor.processes import ProcessMonitor, ProcessReport
from gpusat_tui.host.monitor.procfs import ProcfsReader, parse_proc_stat
from gpusat_tui.model import CardProcess, ProcessSample
from tests.proctree import kill_group, subreaper

JOBS = Path(__file__).resolve().parents[1] / "jobs"
PY = sys.executable
MEASURE_S = 1.5
READERS = [pytest.param(True, id="procfs"), pytest.param(False, id="psutil")]

# Found, not imported: torch runs only in the job subprocesses (importing it here would cost
# the whole test session seconds and memory).
HAVE_TORCH = importlib.util.find_spec("torch") is not None

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not importable here")


# --- helpers -------------------------------------------------------------------------------


class Job:
    """A started process tree we own: killed as a whole process group on exit.

    ``boost``: other test runs may share the 2 cores, and with autogroup scheduling each
    session gets an equal share, so a busy worker could not reach the 50 % the test asks for.
    Where allowed (root / CAP_SYS_NICE) the job's own session is given autogroup nice -10 so
    the figure measures the monitor, not the neighbours; elsewhere it runs as is.
    """

    def __init__(self, argv: list[str], boost: bool = False) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True, text=True,
        )
        self.pid = self.proc.pid
        if boost:
            with contextlib.suppress(OSError):
                Path(f"/proc/{self.pid}/autogroup").write_text("-10")

    def kill(self) -> None:
        """Kill the whole group and return once every process of it is reaped (`kill_group`)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        kill_group(self.pid)
        if self.proc.stdout:
            self.proc.stdout.close()


@pytest.fixture
def start_job() -> Iterator[Callable[..., Job]]:
    jobs: list[Job] = []

    def start(argv: list[str], **kwargs: object) -> Job:
        job = Job(argv, **kwargs)  # type: ignore[arg-type]
        jobs.append(job)
        return job

    # Adopt the jobs' orphans (a launcher's ranks, a forkserver) so that `Job.kill` reaps them
    # at once: left to init, their zombie workers would be auto-discovered by the next test.
    with subreaper():
        try:
            yield start
        finally:
            for job in jobs:
                job.kill()


def children_named(pid: int, name: str) -> list[int]:
    """Descendants of ``pid`` called ``name``, from psutil (an independent view)."""
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for kid in kids:
        with contextlib.suppress(psutil.Error):
            if kid.name() == name:
                found.append(kid.pid)
    return sorted(found)


def wait_for_workers(pid: int, count: int, timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = children_named(pid, "pt_data_worker")
        if len(found) >= count:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{count} pt_data_worker processes under {pid} did not appear")


def fake_tree(start_job: Callable[..., Job], *args: str) -> tuple[Job, list[int]]:
    job = start_job([PY, str(JOBS / "fake_tree.py"), *args], boost=True)
    assert job.proc.stdout is not None
    workers = sorted(int(p) for p in job.proc.stdout.readline().split())
    n = int(args[args.index("--workers") + 1]) if "--workers" in args else 2
    assert wait_for_workers(job.pid, n) == workers
    return job, workers


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far (psutil, apart from the monitor's reader)."""
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def of_trainer(report: ProcessReport, trainer: int) -> tuple[ProcessSample, list[ProcessSample]]:
    """The trainer's sample and its workers' samples (others on the machine are ignored)."""
    trainers = [p for p in report.processes if p.role == "trainer" and p.pid == trainer]
    assert len(trainers) == 1, report.processes
    workers = [
        p for p in report.processes if p.role == "dataloader_worker" and p.trainer_pid == trainer
    ]
    return trainers[0], sorted(workers, key=lambda p: p.pid)


def named_child(name: str, code: str = "import time; time.sleep(30)") -> subprocess.Popen[bytes]:
    """A direct child of this test process that renames itself like a torch worker."""
    script = (
        "import ctypes, sys\n"
        f"ctypes.CDLL(None).prctl(15, ctypes.c_char_p({name.encode()!r}), 0, 0, 0)\n"
        "sys.stdout.write('go\\n'); sys.stdout.flush()\n"
        f"{code}\n"
    )
    child = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert child.stdout is not None
    assert child.stdout.readline() == b"go\n"
    return child


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    kids: list[subprocess.Popen[bytes]] = []
    try:
        yield kids
    finally:
        for kid in kids:
            with contextlib.suppress(ProcessLookupError):
                kid.kill()
            kid.wait(timeout=10)
            for pipe in (kid.stdin, kid.stdout):
                if pipe:
                    pipe.close()


# --- real PyTorch jobs -----------------------------------------------------------------------


def torch_job(start_job: Callable[..., Job], method: str, work: str) -> tuple[Job, list[int]]:
    job = start_job([
        PY, str(JOBS / "dataloader_job.py"), "--start-method", method, "--work", work,
        "--workers", "2", "--max-s", "40",
    ], boost=True)
    assert job.proc.stdout is not None
    assert job.proc.stdout.readline().strip() == "ready", "the job died before its first batch"
    return job, wait_for_workers(job.pid, 2)


@pytest.mark.torch
@needs_torch
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_real_dataloader_job_is_found_and_its_busy_workers_measured(
    start_job: Callable[..., Job], method: str
) -> None:
    job, workers = torch_job(start_job, method, "burn")
    # Three monitors over the same window: --pid, a tool's process table, and pure auto.
    by_pid = ProcessMonitor(pids=[job.pid])
    by_tool = ProcessMonitor()
    auto = ProcessMonitor()
    listed = [CardProcess(pid=job.pid, card_id="nvidia:1")]
    samples = [by_pid.sample, lambda: by_tool.sample(listed), auto.sample]

    def now() -> dict[int, tuple[float, float]]:
        return {pid: (time.monotonic(), cpu_seconds(pid)) for pid in workers}

    # Each monitor's window bracketed by the kernel's own count of what each worker burnt:
    # on a busy machine a burning worker gets less than a core, and a monitor must read
    # what it got (the three monitors sample one after another: each its own window).
    before, first = zip(*[(now(), sample()) for sample in samples], strict=True)
    time.sleep(MEASURE_S)
    last, after = zip(*[(sample(), now()) for sample in samples], strict=True)
    owns = [
        {pid: 100.0 * (end[pid][1] - start[pid][1]) / (end[pid][0] - start[pid][0])
         for pid in workers}
        for start, end in zip(before, after, strict=True)
    ]

    for report in first:  # a process's first tick has no CPU figure, not a fake 0
        trainer, found = of_trainer(report, job.pid)
        assert trainer.cpu_pct is None
        assert [w.cpu_pct for w in found] == [None, None]
    for report, cards, own in zip(last, ([], ["nvidia:1"], []), owns, strict=True):
        trainer, found = of_trainer(report, job.pid)
        assert trainer.name == psutil.Process(job.pid).name()  # the interpreter's name
        assert trainer.card_ids == cards
        assert [w.pid for w in found] == workers
        assert {w.name for w in found} == {"pt_data_worker"}
        assert all(w.card_ids == cards for w in found)
        for w in found:
            assert own[w.pid] > 5.0, (method, own)  # the worker does burn
            # The monitor's window and the kernel's bracket it, not the same instants: on a
            # loaded machine the two read 65 % and 92 % of one burning worker.
            assert w.cpu_pct is not None and (
                0.5 * own[w.pid] <= w.cpu_pct <= own[w.pid] + 20.0), (
                method, w.cpu_pct, own[w.pid])
            assert w.state in {"running", "sleeping", "disk-sleep"}
        assert trainer.cpu_pct is not None and trainer.num_threads is not None
    # --pid watches exactly that trainer and its two workers, nothing else.
    assert sorted(p.pid for p in last[0].processes) == sorted([job.pid, *workers])


@pytest.mark.torch
@needs_torch
def test_real_dataloader_job_with_free_items_has_idle_workers(
    start_job: Callable[..., Job],
) -> None:
    job, workers = torch_job(start_job, "fork", "none")
    monitor = ProcessMonitor(pids=[job.pid])
    monitor.sample()
    time.sleep(MEASURE_S)
    trainer, found = of_trainer(monitor.sample(), job.pid)
    assert trainer.cpu_pct is not None
    assert [w.pid for w in found] == workers
    for w in found:
        assert w.cpu_pct is not None and w.cpu_pct < 25.0, w


# --- several trainers, pin thread, discovery order ------------------------------------------


@pytest.mark.parametrize("procfs", READERS)
def test_two_trainers_each_get_their_own_workers_and_cards(
    start_job: Callable[..., Job], procfs: bool
) -> None:
    a, a_workers = fake_tree(start_job, "--workers", "2")
    b, b_workers = fake_tree(start_job, "--workers", "3")
    listed = [
        CardProcess(pid=a.pid, card_id="amd:0"),
        CardProcess(pid=b.pid, card_id="amd:1"),
        CardProcess(pid=b.pid, card_id="amd:2"),
    ]
    monitor = ProcessMonitor(use_procfs=procfs)
    report = monitor.sample(listed)
    assert [(p.pid, p.role, p.trainer_pid, p.card_ids) for p in report.processes] == [
        (a.pid, "trainer", None, ["amd:0"]),
        *[(w, "dataloader_worker", a.pid, ["amd:0"]) for w in a_workers],
        (b.pid, "trainer", None, ["amd:1", "amd:2"]),
        *[(w, "dataloader_worker", b.pid, ["amd:1", "amd:2"]) for w in b_workers],
    ]
    # Auto-discovery (no tool PIDs) finds the same two trees, without cards.
    auto = ProcessMonitor(use_procfs=procfs).sample()
    for trainer, workers in ((a.pid, a_workers), (b.pid, b_workers)):
        t, found = of_trainer(auto, trainer)
        assert t.card_ids == []
        assert [w.pid for w in found] == workers


def test_explicit_pid_wins_over_tool_listing(start_job: Callable[..., Job]) -> None:
    a, a_workers = fake_tree(start_job, "--workers", "1")
    b, _ = fake_tree(start_job, "--workers", "1")
    report = ProcessMonitor(pids=[a.pid]).sample([CardProcess(pid=b.pid, card_id="nvidia:0")])
    assert [(p.pid, p.role) for p in report.processes] == [
        (a.pid, "trainer"), (a_workers[0], "dataloader_worker")
    ]


def test_pin_memory_thread_cpu_is_measured(start_job: Callable[..., Job]) -> None:
    busy, _ = fake_tree(start_job, "--workers", "1", "--pin", "burn")
    idle, _ = fake_tree(start_job, "--workers", "1", "--pin", "idle")
    none, _ = fake_tree(start_job, "--workers", "1")
    monitor = ProcessMonitor(pids=[busy.pid, idle.pid, none.pid])
    monitor.sample()
    time.sleep(MEASURE_S)
    report = monitor.sample()
    pins = {p.pid: p.pin_cpu_pct for p in report.processes if p.role == "trainer"}
    assert pins[busy.pid] is not None and pins[busy.pid] > 50.0
    assert pins[idle.pid] is not None and pins[idle.pid] < 10.0
    assert pins[none.pid] is None


def test_new_workers_wait_for_the_rescan_and_start_without_cpu(
    children: list[subprocess.Popen[bytes]],
) -> None:
    now = [100.0]
    monitor = ProcessMonitor(pids=[os.getpid()], rescan_s=3.0, clock=lambda: now[0])
    assert [p.pid for p in monitor.sample().processes] == [os.getpid()]
    children.append(named_child("pt_data_worker"))
    now[0] += 1.0
    assert [p.pid for p in monitor.sample().processes] == [os.getpid()]  # no rescan yet
    now[0] += 2.0
    report = monitor.sample()
    assert [(p.pid, p.role, p.cpu_pct) for p in report.processes[1:]] == [
        (children[0].pid, "dataloader_worker", None)
    ]
    now[0] += 1.0
    worker = monitor.sample().processes[1]
    assert worker.pid == children[0].pid and worker.cpu_pct is not None


# --- bad cases, made to happen for real -----------------------------------------------------


@pytest.mark.parametrize("procfs", READERS)
def test_worker_killed_between_ticks_is_dropped(
    start_job: Callable[..., Job], procfs: bool
) -> None:
    job, workers = fake_tree(start_job, "--workers", "2")
    monitor = ProcessMonitor(pids=[job.pid], use_procfs=procfs)
    assert [p.pid for p in monitor.sample().processes] == [job.pid, *workers]
    os.kill(workers[0], signal.SIGKILL)
    deadline = time.monotonic() + 5
    while psutil.pid_exists(workers[0]) and time.monotonic() < deadline:
        time.sleep(0.02)  # the fake trainer reaps it
    report = monitor.sample()
    assert [p.pid for p in report.processes] == [job.pid, workers[1]]
    assert report.notes == [] and report.errors == []  # a worker leaving is not news
    assert [p.pid for p in monitor.sample().processes] == [job.pid, workers[1]]


def test_worker_killed_mid_read_is_dropped(
    children: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    children.extend([named_child("pt_data_worker"), named_child("pt_data_worker")])
    victim, survivor = children
    monitor = ProcessMonitor(pids=[os.getpid()])
    monitor.sample()
    real_stat = ProcfsReader.stat

    def kill_then_read(self: ProcfsReader, pid: int, handle: object = None):
        if pid == victim.pid:  # dies after being listed, just before being read
            victim.kill()
            victim.wait()
        return real_stat(self, pid, handle)

    monkeypatch.setattr(ProcfsReader, "stat", kill_then_read)
    report = monitor.sample()
    assert [p.pid for p in report.processes] == [os.getpid(), survivor.pid]
    assert report.errors == []


def test_trainer_exit_is_noted_once(start_job: Callable[..., Job]) -> None:
    job, workers = fake_tree(start_job, "--workers", "1")
    monitor = ProcessMonitor(pids=[job.pid])
    monitor.sample()
    os.kill(workers[0], signal.SIGKILL)  # the trainer reaps it: no orphan left to init
    deadline = time.monotonic() + 5
    while psutil.pid_exists(workers[0]) and time.monotonic() < deadline:
        time.sleep(0.02)
    job.kill()
    report = monitor.sample()
    assert report.processes == []
    assert report.notes == [f"Training process PID {job.pid} exited."]
    later = monitor.sample()
    assert later.notes == [] and later.processes == []
    assert [e.kind for e in later.errors] == ["process"]  # --pid names nothing now: said once
    assert monitor.sample().errors == []


@pytest.mark.parametrize("procfs", READERS)
def test_zombie_worker_is_shown_as_zombie_without_cpu(
    children: list[subprocess.Popen[bytes]], procfs: bool
) -> None:
    zombie = named_child("pt_data_worker", code="pass")
    children.append(zombie)  # never waited for until the fixture: it stays a zombie
    deadline = time.monotonic() + 5
    while psutil.Process(zombie.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    monitor = ProcessMonitor(pids=[os.getpid()], use_procfs=procfs)
    for _ in range(2):
        report = monitor.sample()
        workers = [p for p in report.processes if p.role == "dataloader_worker"]
        assert [(w.pid, w.state, w.cpu_pct) for w in workers] == [(zombie.pid, "zombie", None)]
        time.sleep(0.1)


def test_pid_listed_by_a_tool_but_not_visible_is_noted_once(
    start_job: Callable[..., Job],
) -> None:
    job, workers = fake_tree(start_job, "--workers", "1")
    ghost = int(Path("/proc/sys/kernel/pid_max").read_text()) + 7  # can never exist
    listed = [CardProcess(pid=ghost, card_id="ascend:3")]
    monitor = ProcessMonitor()
    report = monitor.sample(listed)
    assert report.notes == [
        f"PID {ghost} listed by the accelerator tool on ascend:3 is not visible here "
        "(other PID namespace?)"
    ]
    assert report.errors == []
    # Nothing visible from the tool: auto-discovery still finds the job.
    _, found = of_trainer(report, job.pid)
    assert [w.pid for w in found] == workers
    for _ in range(3):
        assert monitor.sample(listed).notes == []


def test_hidepid_is_named_in_the_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw,nosuid,nodev,noexec,relatime,hidepid=invisible 0 0\n")
    monkeypatch.setattr(trainer_census, "MOUNTS_PATH", str(mounts))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    ghost = int(Path("/proc/sys/kernel/pid_max").read_text()) + 7
    monitor = ProcessMonitor()
    note = monitor.sample([CardProcess(pid=ghost, card_id="cambricon:0")]).notes
    assert note == [
        f"PID {ghost} listed by the accelerator tool on cambricon:0 is not visible here "
        "(other PID namespace?; /proc is mounted with hidepid=invisible, which hides other "
        "users' processes)"
    ]
    err = ProcessMonitor(pids=[ghost]).sample().errors
    assert [(e.tool, e.kind, e.message) for e in err] == [(
        "psutil", "process",
        f"PID {ghost} given with --pid is not running or not visible here (/proc is mounted "
        "with hidepid=invisible, which hides other users' processes)",
    )]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("proc /proc proc rw,relatime 0 0\n", None),
        ("proc /proc proc rw,relatime,hidepid=2 0 0\n", "2"),
        ("proc /proc proc rw,hidepid=0 0 0\n", None),
        ("proc /proc proc rw,hidepid=off 0 0\n", None),
        ("proc /other proc rw,hidepid=2 0 0\nproc /proc proc rw 0 0\n", None),
        ("proc /proc proc rw,hidepid=1 0 0\nproc /proc proc rw 0 0\n", None),  # last mount wins
        ("garbage\n\n  \nproc /proc\n", None),
    ],
)
def test_hidepid_from_mounts(text: str, expected: str | None) -> None:
    assert hidepid_from_mounts(text) == expected


@pytest.mark.parametrize("procfs", READERS)
def test_access_denied_is_marked_and_said_once(
    children: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch, procfs: bool
) -> None:
    children.append(named_child("pt_data_worker"))
    locked = children[0].pid
    monitor = ProcessMonitor(pids=[os.getpid()], use_procfs=procfs)
    monitor.sample()
    if procfs:
        real_open = os.open

        def guarded_open(path: str, *args: object, **kwargs: object) -> int:
            if path.startswith(f"/proc/{locked}/"):
                raise PermissionError(13, "Permission denied", path)
            return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

        real_pread = os.pread

        def guarded_pread(fd: int, size: int, offset: int) -> bytes:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(f"/proc/{locked}/"):
                raise PermissionError(13, "Permission denied")
            return real_pread(fd, size, offset)

        monkeypatch.setattr(procmod.os, "open", guarded_open)
        monkeypatch.setattr(procmod.os, "pread", guarded_pread)
    else:
        # The platform layer under psutil.Process (the public method is memoised by oneshot).
        platform_process = psutil._psplatform.Process  # type: ignore[attr-defined]
        real_times = platform_process.cpu_times

        def guarded_times(self: object) -> object:
            if self.pid == locked:  # type: ignore[attr-defined]
                raise psutil.AccessDenied(locked)
            return real_times(self)

        monkeypatch.setattr(platform_process, "cpu_times", guarded_times)
    report = monitor.sample()
    worker = report.processes[1]
    assert (worker.pid, worker.state, worker.cpu_pct, worker.trainer_pid) == (
        locked, "denied", None, os.getpid()
    )
    assert [(e.tool, e.kind) for e in report.errors] == [("psutil", "denied")]
    assert len(report.notes) == 1 and f"PID {locked}" in report.notes[0]
    again = monitor.sample()
    assert again.processes[1].state == "denied"
    assert again.notes == [] and again.errors == []


def test_reused_pid_is_a_new_process(
    children: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same PID, other start time: the old baseline must not produce a CPU figure."""
    children.append(named_child("pt_data_worker"))
    pid = children[0].pid
    monitor = ProcessMonitor(pids=[os.getpid()])
    monitor.sample()
    time.sleep(0.05)
    assert monitor.sample().processes[1].cpu_pct is not None
    real_stat = ProcfsReader.stat

    def reborn(self: ProcfsReader, p: int, handle: object = None) -> ProcStat:
        st = real_stat(self, p, handle)
        return st._replace(start=st.start + 1, cpu_s=st.cpu_s + 50) if p == pid else st

    monkeypatch.setattr(ProcfsReader, "stat", reborn)
    assert [p.pid for p in monitor.sample().processes] == [os.getpid()]  # old one is gone
    again = monitor.sample()  # found again by the rescan: a new process, first tick
    assert [(p.pid, p.cpu_pct) for p in again.processes[1:]] == [(pid, None)]


def _set_last_pid(value: int) -> bool:
    try:
        Path("/proc/sys/kernel/ns_last_pid").write_text(str(value))
        return True
    except OSError:
        return False


def test_reused_pid_for_real(children: list[subprocess.Popen[bytes]]) -> None:
    """Kill a worker, make the kernel hand its PID to a new one (needs CAP_SYS_ADMIN)."""
    old = named_child("pt_data_worker", code="import time\nwhile True: pass")
    monitor = ProcessMonitor(pids=[os.getpid()])
    monitor.sample()
    time.sleep(0.5)
    busy = monitor.sample().processes[1]
    assert busy.pid == old.pid and busy.cpu_pct is not None and busy.cpu_pct > 10
    old.kill()
    old.wait()
    if old.stdout:
        old.stdout.close()
    for _ in range(5):  # another process may grab the PID first; retry a few times
        if not _set_last_pid(old.pid - 1):
            pytest.skip("cannot set /proc/sys/kernel/ns_last_pid here (needs CAP_SYS_ADMIN)")
        new = named_child("pt_data_worker")
        children.append(new)
        if new.pid == old.pid:
            break
    else:
        pytest.skip("the PID was taken by another process each time")
    report = monitor.sample()
    # The new process must not inherit the old one's baseline (which would read ~0 % or junk).
    assert [p.cpu_pct for p in report.processes if p.pid == old.pid] in ([], [None])
    report = monitor.sample()
    assert [(p.pid, p.cpu_pct) for p in report.processes[1:]] == [(old.pid, None)]


def test_a_broken_scan_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: object) -> object:
        raise RuntimeError("procfs on fire")

    monkeypatch.setattr(ProcfsReader, "scan", boom)
    monitor = ProcessMonitor()
    report = monitor.sample()
    assert report.processes == []
    assert [(e.tool, e.kind) for e in report.errors] == [("psutil", "process")]
    assert "procfs on fire" in report.errors[0].message
    assert report.host.cpu_count == psutil.cpu_count()


def test_host_cpu_rises_with_a_busy_child(children: list[subprocess.Popen[bytes]]) -> None:
    monitor = ProcessMonitor()
    first = monitor.sample().host
    assert (first.cpu_pct, first.iowait_pct, first.cpu_count) == (None, None, psutil.cpu_count())
    children.append(named_child("burner", code="while True: pass"))
    time.sleep(1.0)
    host = monitor.sample().host
    # One busy core of psutil.cpu_count(): at least most of that share, whatever else runs.
    floor = 0.8 * 100.0 / (psutil.cpu_count() or 1)
    assert host.cpu_pct is not None and floor < host.cpu_pct <= 100.0
    assert host.iowait_pct is not None and 0.0 <= host.iowait_pct <= 100.0


# --- the /proc stat parser ------------------------------------------------------------------


def _stat_line(name: bytes, state: bytes = b"S", ppid: int = 1) -> bytes:
    rest = [state, str(ppid).encode(), *[b"0"] * 9, b"250", b"150", b"0", b"0", b"20", b"0",
            b"7", b"0", b"12345", b"0", b"0"]
    return b"4242 (" + name + b") " + b" ".join(rest) + b"\n"


def test_parse_proc_stat_reads_the_fields_we_use() -> None:
    st = parse_proc_stat(_stat_line(b"pt_data_worker", b"D", 77), clock_ticks=100)
    assert st == ProcStat("pt_data_worker", "disk-sleep", 77, 4.0, 12345.0, 7)


def test_parse_proc_stat_name_with_spaces_and_parens() -> None:
    st = parse_proc_stat(_stat_line(b"we) ird (na me"), clock_ticks=100)
    assert (st.name, st.state, st.ppid) == ("we) ird (na me", "sleeping", 1)


@pytest.mark.parametrize(
    "data",
    [b"", b"4242 (x", b"4242 (x) S 1 2 3", b"garbage without parens", _stat_line(b"x")[:40],
     _stat_line(b"x").replace(b" 250 ", b" N/A ")],
)
def test_parse_proc_stat_refuses_garbage(data: bytes) -> None:
    with pytest.raises(ParseError):
        parse_proc_stat(data)


# --- cheap rescans and kept files -----------------------------------------------------------

RENAME_LATER = (
    "import ctypes, sys, time\n"
    "sys.stdin.readline()\n"  # rename when the test says so, like a spawn worker after imports
    "ctypes.CDLL(None).prctl(15, ctypes.c_char_p(b'pt_data_worker'), 0, 0, 0)\n"
    "sys.stdout.write('renamed\\n'); sys.stdout.flush()\n"
    "time.sleep(30)\n"
)


def late_worker() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PY, "-c", RENAME_LATER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )


def rename_now(child: subprocess.Popen[bytes]) -> None:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(b"go\n")
    child.stdin.flush()
    assert child.stdout.readline() == b"renamed\n"


def worker_pids(report: ProcessReport) -> list[int]:
    return [p.pid for p in report.processes if p.role == "dataloader_worker"]


def test_a_young_process_renamed_after_discovery_is_found_by_the_next_rescan(
    children: list[subprocess.Popen[bytes]],
) -> None:
    children.append(late_worker())
    monitor = ProcessMonitor(pids=[os.getpid()], rescan_s=0.0)
    assert worker_pids(monitor.sample()) == []  # still called "python"
    rename_now(children[0])
    assert worker_pids(monitor.sample()) == [children[0].pid]


def test_an_old_process_renamed_late_is_found_by_the_periodic_full_scan(
    children: list[subprocess.Popen[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ProcfsReader, "YOUNG_S", -1e9)  # nobody counts as young
    children.append(late_worker())
    monitor = ProcessMonitor(pids=[os.getpid()], rescan_s=0.0)
    assert worker_pids(monitor.sample()) == []  # scan 0: full
    rename_now(children[0])
    every = ProcfsReader.FULL_EVERY
    seen = [worker_pids(monitor.sample()) for _ in range(1, every + 1)]
    assert seen == [[]] * (every - 1) + [[children[0].pid]]  # cached until scan FULL_EVERY


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_kept_stat_files_are_closed_when_processes_go_and_on_close(
    start_job: Callable[..., Job],
) -> None:
    job, workers = fake_tree(start_job, "--workers", "2")
    before = _open_fds()
    monitor = ProcessMonitor(pids=[job.pid])
    monitor.sample()
    # stat, schedstat and io of the trainer + 2 workers, the trainer's main thread's stat, and
    # the host's /proc/stat
    assert _open_fds() == before + 11
    os.kill(workers[0], signal.SIGKILL)
    deadline = time.monotonic() + 5
    while psutil.pid_exists(workers[0]) and time.monotonic() < deadline:
        time.sleep(0.02)
    monitor.sample()
    assert _open_fds() == before + 8
    monitor.close()
    assert _open_fds() == before
    assert [p.pid for p in monitor.sample().processes] == [job.pid, workers[1]]  # reopened
    monitor.close()


def test_a_change_in_the_tools_listing_rescans_at_once_but_its_order_does_not(
    start_job: Callable[..., Job], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, a_workers = fake_tree(start_job, "--workers", "1")
    b, b_workers = fake_tree(start_job, "--workers", "1")
    scans: list[float] = []
    real_rescan = ProcessMonitor._rescan

    def counting(self: ProcessMonitor, *args: object) -> None:
        scans.append(1)
        real_rescan(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ProcessMonitor, "_rescan", counting)
    monitor = ProcessMonitor(rescan_s=1e9, clock=lambda: 5.0)
    on_a = CardProcess(pid=a.pid, card_id="xpu:0")
    on_b = CardProcess(pid=b.pid, card_id="xpu:1")
    assert [p.pid for p in monitor.sample([on_a]).processes] == [a.pid, *a_workers]
    assert [p.pid for p in monitor.sample([on_a, on_b]).processes] == [
        a.pid, *a_workers, b.pid, *b_workers
    ]
    assert len(scans) == 2
    assert len(monitor.sample([on_b, on_a]).processes) == 4
    assert len(scans) == 2


def test_ranks_under_a_launcher_are_the_trainers_unless_the_launcher_is_named(
    start_job: Callable[..., Job],
) -> None:
    tree = f"{PY} {JOBS / 'fake_tree.py'} --max-s 30"
    launcher = start_job(["sh", "-c", f"{tree} --workers 1 & {tree} --workers 2 & wait"])
    assert launcher.proc.stdout is not None
    lines = [launcher.proc.stdout.readline(), launcher.proc.stdout.readline()]
    all_workers = sorted(int(p) for line in lines for p in line.split())
    deadline = time.monotonic() + 10
    while len(children_named(launcher.pid, "pt_data_worker")) < 3:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    ranks = sorted(p.pid for p in psutil.Process(launcher.pid).children())
    assert len(ranks) == 2

    auto = ProcessMonitor().sample()
    found = {}
    for rank in ranks:
        _, workers = of_trainer(auto, rank)
        found[rank] = [w.pid for w in workers]
    assert sorted(len(w) for w in found.values()) == [1, 2]
    assert sorted(p for w in found.values() for p in w) == all_workers
    assert not [p for p in auto.processes if p.pid == launcher.pid]

    # Named with --pid, the launcher is the trainer and every rank's workers are its own.
    named = ProcessMonitor(pids=[launcher.pid]).sample()
    _, workers = of_trainer(named, launcher.pid)
    assert [w.pid for w in workers] == all_workers


def test_a_listed_pid_that_is_a_worker_stays_a_worker(start_job: Callable[..., Job]) -> None:
    job, workers = fake_tree(start_job, "--workers", "2")
    listed = [CardProcess(pid=job.pid, card_id="nvidia:0"),
              CardProcess(pid=workers[0], card_id="nvidia:0")]
    report = ProcessMonitor().sample(listed)
    assert [(p.pid, p.role) for p in report.processes] == [
        (job.pid, "trainer"), (workers[0], "dataloader_worker"), (workers[1], "dataloader_worker")
    ]


def test_an_auto_found_trainer_stays_watched_when_its_workers_end(
    start_job: Callable[..., Job],
) -> None:
    job, workers = fake_tree(start_job, "--workers", "2")
    monitor = ProcessMonitor(rescan_s=0.0)
    _, found = of_trainer(monitor.sample(), job.pid)
    assert [w.pid for w in found] == workers
    for pid in workers:  # an epoch ends: the workers exit, the trainer lives on
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while any(psutil.pid_exists(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.02)
    for _ in range(2):
        trainer, found = of_trainer(monitor.sample(), job.pid)
        assert found == [] and trainer.cpu_pct is not None  # same record, same baseline
    assert not [p for p in ProcessMonitor().sample().processes if p.pid == job.pid]
