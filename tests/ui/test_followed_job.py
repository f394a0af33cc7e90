"""The dashboard follows one job: the one given with --pid, else the first found. When it ends,
the job line says so (when, after how long, its last verdict) and another job that is still
running is not adopted."""

from __future__ import annotations

import time

from gpusat_tui.model import Frame, JobContext, ProcessSample, Verdict
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.followed_job import JobFollower
from tests.ui.conftest import T0, FixedTracker, ListSource, card, screen_text, settle

STARVING = Verdict(kind="starving", cause="input-bound", why=["data wait 61 %"])


def _job(pid: int, user: str, command: str) -> JobContext:
    return JobContext(job_id=str(pid), user=user, command=command, pids=[pid],
                      card_ids=["nvidia:0"])


MINE = _job(100, "alice", "python train.py")
OTHER = _job(200, "bob", "python other.py")


def _frame(i: int, jobs: list[JobContext]) -> Frame:
    procs = [ProcessSample(pid=j.pids[0], role="trainer", name="python", cpu_pct=50.0)
             for j in jobs]
    return Frame(t=T0 + 60.0 * i, seq=i, cards=[card(0)], processes=procs, jobs=jobs)


def _ended_at(minute: int) -> str:
    return time.strftime("%H:%M", time.localtime(T0 + 60.0 * minute))


def test_it_follows_the_first_job_and_says_when_it_ended() -> None:
    follower = JobFollower()
    for i in range(39):
        follower.update(_frame(i, [MINE, OTHER] if i > 2 else [MINE]), STARVING)
    assert follower.job is not None and follower.job.ended_t is None
    for i in range(39, 44):  # only bob's job runs now
        job = follower.update(_frame(i, [OTHER]), Verdict(kind="saturated"))
    assert job is not None and job.key == MINE.key
    assert job.ended_line() == (f"job alice: python train.py ended at {_ended_at(38)} after "
                                "38 min; last verdict starving (input-bound)")
    assert follower.jobs_shown([OTHER]) == []  # bob's job is not adopted
    follower.update(_frame(50, [OTHER, MINE]), STARVING)
    assert job.ended_t is not None  # ended stays ended


def test_a_job_missing_from_one_poll_has_not_ended() -> None:
    # A deferred process scan leaves one poll without its jobs.
    follower = JobFollower()
    frames = [Frame(t=T0 + 0.5 * i, seq=i, cards=[card(0)], jobs=[] if i == 5 else [MINE])
              for i in range(10)]
    for f in frames:
        job = follower.update(f, STARVING)
    assert job is not None and job.ended_t is None


def test_pid_chooses_the_job() -> None:
    follower = JobFollower(pids=[200])
    job = follower.update(_frame(0, [MINE, OTHER]), STARVING)
    assert job is not None and job.key == OTHER.key
    assert follower.jobs_shown([MINE, OTHER]) == [OTHER]


async def test_the_dashboard_says_the_job_ended_and_does_not_adopt_another() -> None:
    frames = [_frame(i, [MINE]) for i in range(5)] + [_frame(i, [OTHER]) for i in range(5, 10)]
    app = GpusatApp(ListSource(frames), tracker=FixedTracker(job=STARVING, default=STARVING),  # type: ignore[arg-type]
                    clock=lambda: T0, own_cpu=lambda: 0.4)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 9, timeout=30)
        await settle(pilot, lambda: "ENDED" in screen_text(app), timeout=30)
        text = screen_text(app)
    assert f"job alice: python train.py ended at {_ended_at(4)} after 4 min" in text
    assert "last verdict starving (input-bound)" in text
    assert "bob" not in text
