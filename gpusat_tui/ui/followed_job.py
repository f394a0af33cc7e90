"""The job the dashboard follows: the one given with ``--pid``, else the first one it found,
where a job with a probed trainer (started under ``gpusat-tui run``: the user's own act) comes
before one of the caller's own account, which comes before any other. With no card (no vendor
tool) only a probed job is chosen by itself: that is what the no-tool screen waits for, and an
unprobed trainer is followed there only when given with ``--pid``.

While it runs, the job line names it alone; once it is gone, the line says so ("job alice:
python train.py ended at 14:02 after 38 min; last verdict starving (input-bound)") and stays
so: another job on the machine is never adopted by itself; the user picks one (`follow`, the
``j`` key's job picker). A job counts as gone once it has
been missing from every poll for `GONE_POLLS` polls and `GONE_S` seconds (a deferred process
scan leaves one poll without its jobs). Pure: frames and verdicts in, a line out.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpusat_tui.analysis.wording import duration
from gpusat_tui.host.scheduler.jobs import job_label
from gpusat_tui.model import Frame, JobContext, Verdict

__all__ = ["GONE_POLLS", "GONE_S", "FollowedJob", "JobFollower", "ended_panel_text"]

#: Polls and seconds a followed job must be missing before it is called ended.
GONE_POLLS = 3
GONE_S = 2.0


@dataclass
class FollowedJob:
    """The followed job: its key, its label (cleaned), when it was seen first and last, its
    last verdict with a kind, and when it ended (None: it runs)."""

    key: str
    label: str
    first_t: float
    last_t: float
    kind: str = "unknown"
    cause: str | None = None
    ended_t: float | None = None
    missing: int = 0

    def ended_line(self) -> str | None:
        """``job … ended at 14:02 after 38 min; last verdict starving (input-bound)``."""
        if self.ended_t is None:
            return None
        at = time.strftime("%H:%M", time.localtime(self.ended_t))
        after = duration(max(0.0, self.ended_t - self.first_t))
        verdict = self.kind + (f" ({self.cause})" if self.cause else "")
        return f"job {self.label} ended at {at} after {after}; last verdict {verdict}"


class JobFollower:
    """Chooses the job to follow and tells when it ended (see the module docstring)."""

    def __init__(self, pids: Iterable[int] = (), picked: str | None = None,
                 user: str | None = None) -> None:
        """``picked``: the key of the job the user chose last (`follow`); it is chosen again
        after a replay seek while it runs, before ``pids`` and the first job found. ``user``:
        the caller's account name, whose jobs come before others' among unprobed ones."""
        self.pids = frozenset(pids)
        self.picked = picked
        self.user = user
        self.job: FollowedJob | None = None
        self._last_t: float | None = None

    def restart(self) -> None:
        """Choose again from the next frame on (a replay seek: another moment), keeping the
        ``pids`` given and the user's last pick."""
        self.job = None
        self._last_t = None

    def follow(self, job: JobContext, t: float) -> FollowedJob:
        """Follow ``job`` from the frame at ``t`` on (the user's choice), its history anew."""
        self.picked = job.key
        self.job = FollowedJob(job.key, job_label(job, 80), t, t)
        return self.job

    def _choose(self, frame: Frame) -> JobContext | None:
        jobs = frame.jobs
        picked = next((j for j in jobs if j.key == self.picked), None)
        if picked is not None:
            return picked
        if self.pids:
            return next((j for j in jobs if self.pids & set(j.pids)), None)
        probed = {p.pid for p in frame.probes}
        first_probed = next((j for j in jobs if probed.intersection(j.pids)), None)
        if first_probed is not None or not frame.cards:
            return first_probed
        own = next((j for j in jobs if self.user is not None and j.user == self.user), None)
        return own or (jobs[0] if jobs else None)

    def update(self, frame: Frame, verdict: Verdict) -> FollowedJob | None:
        """The followed job after ``frame`` (whose job verdict is ``verdict``); a frame seen
        before is not counted twice."""
        if self._last_t is not None and frame.t < self._last_t:
            self.job = None  # a replay seek back: another moment, chosen again
        elif self._last_t is not None and frame.t == self._last_t:
            return self.job
        self._last_t = frame.t
        job = self.job
        if job is None:
            chosen = self._choose(frame)
            if chosen is not None:
                job = self.job = FollowedJob(chosen.key, job_label(chosen, 80), frame.t,
                                             frame.t)
                self._note(job, verdict)
            return job
        if job.ended_t is not None:
            return job
        if any(j.key == job.key for j in frame.jobs):
            job.last_t, job.missing = frame.t, 0
            self._note(job, verdict)
        else:
            job.missing += 1
            if job.missing >= GONE_POLLS and frame.t - job.last_t >= GONE_S:
                job.ended_t = job.last_t
        return job

    @staticmethod
    def _note(job: FollowedJob, verdict: Verdict) -> None:
        if verdict.kind != "unknown":
            job.kind, job.cause = verdict.kind, verdict.cause

    def own_frame(self, frame: Frame) -> Frame:
        """What the pane judges and shows of ``frame``: with no card (no vendor tool) and
        probes of other jobs beside the followed one's, only the followed job's trainers, their
        workers and their probes, so that the verdict, its figures and the status file are its
        own (judged whole, the verdict is the most severe job's, `probe_only_jobs`). ``jobs``
        stays whole: the picker lists the others. With cards, or no job followed or running,
        the frame whole."""
        job = self.job
        if frame.cards or job is None or job.ended_t is not None:
            return frame
        context = next((j for j in frame.jobs if j.key == job.key), None)
        if context is None:
            return frame
        pids = set(context.pids)
        if all(p.pid in pids for p in frame.probes):
            return frame
        return frame.model_copy(update={
            "probes": [p for p in frame.probes if p.pid in pids],
            "processes": [p for p in frame.processes
                          if p.pid in pids or p.trainer_pid in pids],
        })

    def jobs_shown(self, jobs: Sequence[JobContext]) -> list[JobContext]:
        """The jobs the job line names: the followed one alone once one is followed."""
        if self.job is None:
            return list(jobs)
        return [j for j in jobs if j.key == self.job.key]


def ended_panel_text(job: FollowedJob, jobs: Sequence[JobContext]) -> str:
    """The process panel once the followed job ended: that, and how many other jobs run (the
    job picker lists them). Their trainers are not listed: under the ended job's line they
    would read as its own."""
    others = sum(1 for j in jobs if j.key != job.key)
    line = job.ended_line() or f"job {job.label} ended"
    if not others:
        return f"{line}\nno other job on this host"
    noun = "job runs" if others == 1 else "jobs run"
    return f"{line}\n{others} other {noun} on this host: j picks one to follow"
