"""Whose job a trainer is, from the text of its environment and its cgroup path: pure parsers.

The scheduler leaves its mark in two places. The environment (``/proc/<pid>/environ``) names
everything (Slurm's ``SLURM_JOB_ID``, job name, user, step, partition; a pod's name and
namespace where the Downward API put them, and its host name) but only this account's own
processes (or root) may read it. The cgroup path (``/proc/<pid>/cgroup``, readable by anyone)
names the Slurm job, step and uid (``/slurm/uid_1000/job_123/step_0``,
``/system.slice/slurmstepd.scope/job_123/step_0/user/task_0``) or the Kubernetes pod's UID
(``/kubepods/burstable/pod<uid>/...``, ``kubepods-burstable-pod<uid_with_underscores>.slice``).
The environment is preferred field by field, the cgroup fills what it lacks. No scheduler seen:
a *plain* job, its owner and command line; ranks started together by torchrun share a job
through ``MASTER_ADDR:MASTER_PORT`` (or ``TORCHELASTIC_RUN_ID``), a lone trainer is its PID.

Strings are kept as the process wrote them (capped in length); display cleans them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from gpusat_tui.model import JobContext, ProbeSample
from gpusat_tui.text import clean

__all__ = [
    "CgroupFacts",
    "add_probe_cards",
    "job_context",
    "job_label",
    "merge_jobs",
    "parse_cgroup",
    "parse_environ",
]

#: Longest string kept from a process's environment or command line.
MAX_FIELD_CHARS = 256

_SLURM_JOB_RE = re.compile(r"/job_(\d+)(?:/step_([A-Za-z0-9_]+))?")
_SLURM_UID_RE = re.compile(r"/uid_(\d+)")
_POD_RE = re.compile(
    r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})"
)

#: Environment variables that name the pod and its namespace (Downward API conventions).
_POD_NAME_VARS = ("POD_NAME", "MY_POD_NAME", "K8S_POD_NAME", "KUBERNETES_POD_NAME")
_NAMESPACE_VARS = (
    "POD_NAMESPACE", "MY_POD_NAMESPACE", "K8S_NAMESPACE", "KUBERNETES_NAMESPACE", "NAMESPACE",
)
_POD_UID_VARS = ("POD_UID", "MY_POD_UID", "K8S_POD_UID")


class CgroupFacts:
    """What a cgroup file says about the scheduler (all None: nothing)."""

    __slots__ = ("pod_uid", "slurm_job_id", "slurm_step", "slurm_uid")

    def __init__(
        self, slurm_job_id: str | None = None, slurm_step: str | None = None,
        slurm_uid: int | None = None, pod_uid: str | None = None,
    ) -> None:
        self.slurm_job_id = slurm_job_id
        self.slurm_step = slurm_step
        self.slurm_uid = slurm_uid
        self.pod_uid = pod_uid

    def __repr__(self) -> str:
        return (f"CgroupFacts(slurm_job_id={self.slurm_job_id!r}, slurm_step="
                f"{self.slurm_step!r}, slurm_uid={self.slurm_uid!r}, pod_uid={self.pod_uid!r})")


def _cap(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    return value if len(value) <= MAX_FIELD_CHARS else value[: MAX_FIELD_CHARS - 1] + "…"


def parse_environ(data: bytes | str) -> dict[str, str]:
    """``/proc/<pid>/environ`` (``KEY=value`` entries separated by NUL) -> a dict.

    Bytes that are not UTF-8 are replaced, entries without ``=`` skipped; a later duplicate
    wins, as in ``getenv``'s usual order.
    """
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    env: dict[str, str] = {}
    for entry in text.split("\0"):
        key, sep, value = entry.partition("=")
        if sep and key:
            env[key] = value
    return env


def parse_cgroup(text: str) -> CgroupFacts:
    """``/proc/<pid>/cgroup`` (``id:controllers:path`` lines, v1 or v2) -> `CgroupFacts`.

    Slurm is recognised only on paths that name it (``slurm``, ``slurmstepd``), so another
    program's ``job_1`` directory is not mistaken for a Slurm job; a pod only under
    ``kubepods``.
    """
    facts = CgroupFacts()
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        path = parts[2]
        if "slurm" in path and facts.slurm_job_id is None:
            job = _SLURM_JOB_RE.search(path)
            if job:
                facts.slurm_job_id = job.group(1)
                facts.slurm_step = job.group(2)
                uid = _SLURM_UID_RE.search(path)
                if uid:
                    facts.slurm_uid = int(uid.group(1))
        if "kubepods" in path and facts.pod_uid is None:
            pod = _POD_RE.search(path)
            if pod:
                facts.pod_uid = pod.group(1).replace("_", "-")
    return facts


def _first(env: Mapping[str, str], names: Sequence[str]) -> str | None:
    for name in names:
        value = _cap(env.get(name))
        if value:
            return value
    return None


def _plain_job_id(env: Mapping[str, str], pid: int) -> str:
    """Ranks torchrun (or ``mp.spawn`` with a master port) started together share a key."""
    run_id = env.get("TORCHELASTIC_RUN_ID")
    port = env.get("MASTER_PORT")
    if run_id and run_id != "none" and port:
        return _cap(run_id) or str(pid)
    if port:
        return _cap(f"{env.get('MASTER_ADDR') or 'localhost'}:{port}") or str(pid)
    return str(pid)


def job_context(
    environ: bytes | str | None,
    cgroup: str | None,
    *,
    pid: int,
    owner: str | None = None,
    command: str | None = None,
) -> JobContext:
    """One trainer's `JobContext` from its environment (None: unreadable) and cgroup text.

    ``owner`` is the process's user name (the user of a plain job, and of a Slurm job whose
    environment is unreadable: its tasks run as the job's user); ``command`` its command line.
    """
    env = parse_environ(environ) if environ is not None else {}
    facts = parse_cgroup(cgroup) if cgroup else CgroupFacts()
    slurm_id = _first(env, ("SLURM_JOB_ID", "SLURM_JOBID"))
    if slurm_id or facts.slurm_job_id:
        return JobContext(
            scheduler="slurm",
            job_id=slurm_id or facts.slurm_job_id,
            step=_first(env, ("SLURM_STEP_ID", "SLURM_STEPID")) or facts.slurm_step,
            name=_first(env, ("SLURM_JOB_NAME",)),
            user=_first(env, ("SLURM_JOB_USER",)) or owner,
            partition=_first(env, ("SLURM_JOB_PARTITION",)),
            source="environ" if slurm_id else "cgroup",
            pids=[pid],
        )
    pod_uid = _first(env, _POD_UID_VARS) or facts.pod_uid
    in_pod = "KUBERNETES_SERVICE_HOST" in env
    if pod_uid or in_pod:
        name = _first(env, _POD_NAME_VARS) or (_first(env, ("HOSTNAME",)) if in_pod else None)
        return JobContext(
            scheduler="kubernetes",
            job_id=pod_uid or name,
            name=name,
            namespace=_first(env, _NAMESPACE_VARS),
            pod_uid=pod_uid,
            user=owner,
            source="environ" if in_pod else "cgroup",
            pids=[pid],
        )
    return JobContext(
        scheduler="plain",
        job_id=_plain_job_id(env, pid),
        user=owner,
        command=_cap(command),
        source="process",
        pids=[pid],
    )


def merge_jobs(contexts: Iterable[tuple[JobContext, Sequence[str]]]) -> list[JobContext]:
    """Trainers' contexts (each with the cards it drives) -> one `JobContext` per job.

    Contexts with one `JobContext.key` are one job: PIDs and cards are joined (in order, no
    repeats), steps listed comma-joined, and each other field is the first trainer's that
    has it.
    """
    jobs: dict[str, JobContext] = {}
    for ctx, cards in contexts:
        old = jobs.get(ctx.key)
        if old is None:
            jobs[ctx.key] = ctx.model_copy(update={
                "pids": list(dict.fromkeys(ctx.pids)),
                "card_ids": list(dict.fromkeys([*ctx.card_ids, *cards])),
            })
            continue
        update: dict[str, object] = {
            "pids": list(dict.fromkeys([*old.pids, *ctx.pids])),
            "card_ids": list(dict.fromkeys([*old.card_ids, *ctx.card_ids, *cards])),
        }
        steps = [s for s in (old.step or "").split(",") if s]
        if ctx.step and ctx.step not in steps:
            update["step"] = ",".join([*steps, ctx.step])
        for name in ("name", "user", "partition", "namespace", "pod_uid", "command", "source"):
            if getattr(old, name) is None and getattr(ctx, name) is not None:
                update[name] = getattr(ctx, name)
        jobs[ctx.key] = old.model_copy(update=update)
    return list(jobs.values())


def add_probe_cards(jobs: list[JobContext], probes: Sequence[ProbeSample]) -> list[JobContext]:
    """Cards the probes tie to a job's trainers (where the vendor tool lists no PID: inside
    containers) join that job's cards."""
    by_pid = {p.pid: p.card_id for p in probes if p.card_id}
    if not by_pid:
        return jobs
    out: list[JobContext] = []
    for job in jobs:
        extra = [by_pid[pid] for pid in job.pids if pid in by_pid]
        cards = list(dict.fromkeys([*job.card_ids, *extra]))
        out.append(job if cards == job.card_ids else job.model_copy(update={"card_ids": cards}))
    return out


class JobFields(Protocol):
    """What `job_label` reads: a `JobContext` or ``check --json``'s job."""

    scheduler: str
    job_id: str | None
    step: str | None
    name: str | None
    user: str | None
    partition: str | None
    namespace: str | None
    command: str | None
    pids: list[int]


def _short_program(command: str) -> str:
    """The command with its program's folder left out (``/opt/conda/bin/python -u train.py``
    -> ``python -u train.py``): the folder says nothing of the job and cost the job line its
    figures in a 160-column pane."""
    program, sep, rest = command.partition(" ")
    if "/" in program.rstrip("/"):
        program = program.rstrip("/").rsplit("/", 1)[1]
    return program + sep + rest


def job_label(job: JobFields, limit: int = 160) -> str:
    """Whose job, cleaned for the terminal: ``slurm 4242 "train-llm" step 0 · alice · gpu``,
    ``pod ns/name · alice``, ``alice: python train.py --lr 3e-4``."""
    if job.scheduler == "slurm":
        text = f"slurm {clean(job.job_id, 40)}"
        if job.name:
            text += f' "{clean(job.name, 60)}"'
        if job.step:
            text += f" step {clean(job.step, 40)}"
        extra = [clean(v, 40) for v in (job.user, job.partition) if v]
    elif job.scheduler == "kubernetes":
        where = "/".join(clean(v, 60) for v in (job.namespace, job.name) if v)
        text = f"pod {where or clean(job.job_id, 40)}"
        extra = [clean(job.user, 40)] if job.user else []
    else:
        who = clean(job.user, 40) if job.user else "?"
        command = clean(_short_program(job.command), limit) if job.command else (
            f"PID {job.job_id or '?'}")
        text = f"{who}: {command}"
        extra = []
    return clean(" · ".join([text, *extra]), limit)
