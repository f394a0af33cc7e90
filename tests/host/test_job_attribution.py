"""Whose job a trainer is: the environ/cgroup parsers, real processes started with Slurm-like
and Kubernetes-like environments, and fake cgroup files where the real one cannot be made."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from gpusat_tui.host.monitor.processes import ProcessMonitor
from gpusat_tui.host.scheduler.job_reader import read_job_context
from gpusat_tui.host.scheduler.jobs import (
    add_probe_cards,
    job_context,
    job_label,
    merge_jobs,
    parse_cgroup,
    parse_environ,
)
from gpusat_tui.model import Frame, JobContext, ProbeSample

POD_UID = "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"

SLURM_V1 = """\
12:memory:/slurm/uid_1000/job_4242/step_0/task_0
11:cpuset:/slurm/uid_1000/job_4242/step_0
1:name=systemd:/system.slice/slurmd.service
"""
SLURM_V2 = "0::/system.slice/slurmstepd.scope/job_777/step_batch/user/task_0\n"
K8S_V1 = f"""\
11:memory:/kubepods/burstable/pod{POD_UID}/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
"""
K8S_SYSTEMD = (
    "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
    f"{POD_UID.replace('-', '_')}.slice/cri-containerd-0123abcd.scope\n"
)


# --- the parsers ------------------------------------------------------------------------------


def test_environ_is_nul_separated_and_tolerates_junk() -> None:
    env = parse_environ(b"A=1\0B=x=y\0junk\0\0=nokey\0C=\xff\0A=2")
    assert env == {"A": "2", "B": "x=y", "C": "\ufffd"}


@pytest.mark.parametrize(("text", "job", "step", "uid"), [
    (SLURM_V1, "4242", "0", 1000),
    (SLURM_V2, "777", "batch", None),
    ("0::/user.slice/job_12/step_0\n", None, None, None),  # not Slurm's: no "slurm" in it
    ("0::/\n", None, None, None),
    ("garbage without colons\n", None, None, None),
])
def test_cgroup_names_the_slurm_job(text: str, job: str | None, step: str | None,
                                    uid: int | None) -> None:
    facts = parse_cgroup(text)
    assert (facts.slurm_job_id, facts.slurm_step, facts.slurm_uid) == (job, step, uid)
    assert facts.pod_uid is None


@pytest.mark.parametrize("text", [K8S_V1, K8S_SYSTEMD])
def test_cgroup_names_the_pod(text: str) -> None:
    assert parse_cgroup(text).pod_uid == POD_UID


def test_slurm_from_environ_wins_and_cgroup_fills_the_step() -> None:
    env = ("SLURM_JOB_ID=4242\0SLURM_JOB_NAME=train-llm\0SLURM_JOB_USER=alice\0"
           "SLURM_JOB_PARTITION=gpu\0")
    ctx = job_context(env, SLURM_V1, pid=10, owner="root")
    assert (ctx.scheduler, ctx.job_id, ctx.step, ctx.name, ctx.user, ctx.partition) == (
        "slurm", "4242", "0", "train-llm", "alice", "gpu")
    assert ctx.source == "environ" and ctx.key == "slurm:4242" and ctx.pids == [10]


def test_slurm_from_cgroup_alone_when_environ_is_unreadable() -> None:
    ctx = job_context(None, SLURM_V2, pid=10, owner="bob")
    assert (ctx.scheduler, ctx.job_id, ctx.step, ctx.user, ctx.source) == (
        "slurm", "777", "batch", "bob", "cgroup")


def test_pod_from_environ_and_cgroup() -> None:
    env = "KUBERNETES_SERVICE_HOST=10.0.0.1\0HOSTNAME=trainer-0\0POD_NAMESPACE=research\0"
    ctx = job_context(env, K8S_SYSTEMD, pid=1)
    assert (ctx.scheduler, ctx.job_id, ctx.name, ctx.namespace, ctx.pod_uid) == (
        "kubernetes", POD_UID, "trainer-0", "research", POD_UID)
    # Without the environment the pod is known by its UID alone.
    alone = job_context(None, K8S_V1, pid=1)
    assert (alone.scheduler, alone.job_id, alone.name, alone.source) == (
        "kubernetes", POD_UID, None, "cgroup")


def test_plain_jobs_share_the_rendezvous_else_are_their_pid() -> None:
    torchrun = "MASTER_ADDR=127.0.0.1\0MASTER_PORT=29500\0TORCHELASTIC_RUN_ID=none\0"
    a = job_context(torchrun, "0::/\n", pid=10, owner="carol", command="python train.py")
    b = job_context(torchrun, "0::/\n", pid=11, owner="carol", command="python train.py")
    assert a.key == b.key == "plain:127.0.0.1:29500"
    assert a.model_copy(update={"host": "n1"}).key == "n1/plain:127.0.0.1:29500"
    lone = job_context("", None, pid=12, owner="carol", command="python x.py")
    assert (lone.scheduler, lone.job_id, lone.user, lone.command) == (
        "plain", "12", "carol", "python x.py")
    assert job_label(lone) == "carol: python x.py"
    # The program's folder says nothing of the job: the label leaves it out (the command
    # itself keeps it), so the job line keeps its figures in a 160-column pane.
    conda = lone.model_copy(update={"command": "/opt/conda/bin/python -u train.py --lr 3e-4"})
    assert job_label(conda) == "carol: python -u train.py --lr 3e-4"
    assert conda.command.startswith("/opt/conda/bin/python")
    assert job_label(lone.model_copy(update={"command": "/"})) == "carol: /"


def test_merge_joins_ranks_of_one_job_and_keeps_others_apart() -> None:
    r0 = JobContext(scheduler="slurm", job_id="5", step="0", name="t", pids=[10])
    r1 = JobContext(scheduler="slurm", job_id="5", step="1", user="alice", pids=[11])
    other = JobContext(scheduler="plain", job_id="12", pids=[12])
    jobs = merge_jobs([(r0, ["nvidia:0"]), (r1, ["nvidia:1"]), (other, ["nvidia:2"])])
    assert [j.key for j in jobs] == ["slurm:5", "plain:12"]
    assert (jobs[0].pids, jobs[0].card_ids, jobs[0].step, jobs[0].user) == (
        [10, 11], ["nvidia:0", "nvidia:1"], "0,1", "alice")
    tied = add_probe_cards(jobs, [ProbeSample(pid=12, card_id="nvidia:3")])
    assert tied[1].card_ids == ["nvidia:2", "nvidia:3"] and tied[0] is jobs[0]


def test_label_cleans_what_the_process_wrote() -> None:
    env = "SLURM_JOB_ID=1\0SLURM_JOB_NAME=\x1b]0;owned\x07evil\nname\0SLURM_JOB_USER=[bold]x\0"
    label = job_label(job_context(env, None, pid=1))
    assert "\x1b" not in label and "\x07" not in label and "\n" not in label
    assert label.startswith('slurm 1 "evil name"') and "[bold]x" in label


def test_frames_without_jobs_still_load() -> None:
    old = '{"t": 1.0, "seq": 0, "cards": [], "processes": []}'
    assert Frame.model_validate_json(old).jobs == []
    frame = Frame(t=1.0, jobs=[JobContext(scheduler="slurm", job_id="9", pids=[1])])
    assert Frame.model_validate_json(frame.model_dump_json()) == frame


# --- real processes ---------------------------------------------------------------------------


def _sleeper(env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    full = {k: v for k, v in os.environ.items()
            if not k.startswith(("SLURM_", "KUBERNETES_", "MASTER_", "POD_"))}
    full.update(env)
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--rank-marker"],
                            env=full)


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for p in started:
        p.kill()
        p.wait()


def _wait_for_environ(pid: int, needle: bytes) -> None:
    """The child's own environment is in /proc once it has exec'd (Popen returns after the
    exec, but this says so rather than relying on it)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if needle in Path(f"/proc/{pid}/environ").read_bytes():
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"PID {pid} never showed {needle!r}")


SLURM_ENV = {"SLURM_JOB_ID": "4242", "SLURM_JOB_NAME": "train-llm", "SLURM_JOB_USER": "alice",
             "SLURM_JOB_PARTITION": "gpu"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_real_slurm_ranks_are_one_job_on_their_cards(
    procs: list[subprocess.Popen[bytes]],
) -> None:
    procs += [_sleeper({**SLURM_ENV, "SLURM_STEP_ID": "0", "SLURM_PROCID": str(rank)})
              for rank in (0, 1)]
    procs.append(_sleeper({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29511"}))
    for p, needle in zip(procs, (b"SLURM_PROCID=0", b"SLURM_PROCID=1", b"MASTER_PORT"),
                         strict=True):
        _wait_for_environ(p.pid, needle)
    pids = [p.pid for p in procs]
    monitor = ProcessMonitor(pids=pids)
    try:
        report = monitor.sample()
    finally:
        monitor.close()
    slurm, plain = report.jobs
    assert (slurm.scheduler, slurm.job_id, slurm.name, slurm.user, slurm.partition,
            slurm.step, slurm.source) == ("slurm", "4242", "train-llm", "alice", "gpu", "0",
                                          "environ")
    assert slurm.pids == pids[:2]
    assert (plain.scheduler, plain.job_id, plain.pids) == ("plain", "127.0.0.1:29511", pids[2:])
    assert plain.command is not None and "--rank-marker" in plain.command


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_context_is_read_once_per_trainer(procs: list[subprocess.Popen[bytes]]) -> None:
    procs.append(_sleeper(SLURM_ENV))
    _wait_for_environ(procs[0].pid, b"SLURM_JOB_ID=4242")
    calls: list[int] = []

    def reader(pid: int) -> JobContext:
        calls.append(pid)
        return read_job_context(pid)

    now = [0.0]
    monitor = ProcessMonitor(pids=[procs[0].pid], job_reader=reader, rescan_s=1.0,
                             clock=lambda: now[0])
    try:
        for tick in range(5):
            now[0] = tick * 2.0  # a rescan every tick
            report = monitor.sample()
    finally:
        monitor.close()
    assert calls == [procs[0].pid]
    assert [j.job_id for j in report.jobs] == ["4242"]


def _fake_proc(root: Path, pid: int, cgroup: str, environ: bytes | None = None) -> None:
    d = root / str(pid)
    d.mkdir(parents=True)
    (d / "cgroup").write_text(cgroup)
    (d / "cmdline").write_bytes(b"python\0train.py\0")
    if environ is not None:
        (d / "environ").write_bytes(environ)


def test_reader_falls_back_to_the_cgroup_when_environ_cannot_be_read(tmp_path: Path) -> None:
    # Another user's environ cannot be read (and root reads them all): a fake /proc entry
    # with no environ stands for it.
    _fake_proc(tmp_path, 31337, SLURM_V1)
    ctx = read_job_context(31337, root=str(tmp_path))
    assert (ctx.scheduler, ctx.job_id, ctx.step, ctx.source) == ("slurm", "4242", "0", "cgroup")
    _fake_proc(tmp_path, 31338, K8S_SYSTEMD,
               b"KUBERNETES_SERVICE_HOST=10.0.0.1\0HOSTNAME=worker-3\0POD_NAMESPACE=ml\0")
    pod = read_job_context(31338, root=str(tmp_path))
    assert (pod.scheduler, pod.pod_uid, pod.name, pod.namespace) == (
        "kubernetes", POD_UID, "worker-3", "ml")
    gone = read_job_context(999_999_999, root=str(tmp_path))
    assert (gone.scheduler, gone.job_id, gone.user, gone.command) == (
        "plain", "999999999", None, None)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_monitor_uses_the_cgroup_of_a_real_trainer(
    procs: list[subprocess.Popen[bytes]], tmp_path: Path,
) -> None:
    """A real trainer whose environment this account may not read: its (fake) cgroup says."""
    procs.append(_sleeper({}))
    pid = procs[0].pid
    _fake_proc(tmp_path, pid, SLURM_V2)
    monitor = ProcessMonitor(pids=[pid],
                             job_reader=lambda p: read_job_context(p, root=str(tmp_path)))
    try:
        report = monitor.sample()
    finally:
        monitor.close()
    [job] = report.jobs
    assert (job.scheduler, job.job_id, job.step, job.pids) == ("slurm", "777", "batch", [pid])


def test_a_reader_that_raises_costs_no_figures(procs: list[subprocess.Popen[bytes]]) -> None:
    procs.append(_sleeper({}))

    def broken(pid: int) -> JobContext:
        raise RuntimeError("bug")

    monitor = ProcessMonitor(pids=[procs[0].pid], job_reader=broken)
    try:
        report = monitor.sample()
    finally:
        monitor.close()
    assert report.jobs == [] and [p.pid for p in report.processes] == [procs[0].pid]
    assert report.errors == []
