"""The dashboard follows one job: the one given with --pid, else the first found. When it ends,
the job line says so (when, after how long, its last verdict) and another job that is still
running is not adopted: the process panel says the job ended instead of listing the others'
trainers, and ``j`` opens a picker of the jobs running now (Enter follows one, Escape keeps
the followed)."""

from __future__ import annotations

import time

from gpusat_tui.model import Assessment, Frame, JobContext, ProbeSample, ProcessSample, Verdict
from gpusat_tui.notify.status_file import summarise
from gpusat_tui.ui.app import GpusatApp
from gpusat_tui.ui.followed_job import JobFollower
from gpusat_tui.ui.widgets.job_picker import JobPicker
from gpusat_tui.ui.widgets.screens import HELP
from tests.ui.conftest import T0, FixedTracker, ListSource, StepSource, card, screen_text, settle

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


def test_a_probed_job_comes_before_one_found_earlier_in_the_list() -> None:
    # Bob's unprobed job is listed first; alice's was started under `gpusat-tui run`.
    frame = _frame(0, [OTHER, MINE]).model_copy(
        update={"probes": [ProbeSample(pid=100, batches=10)]})
    job = JobFollower().update(frame, STARVING)
    assert job is not None and job.key == MINE.key


def test_the_caller_s_own_job_comes_before_another_user_s() -> None:
    job = JobFollower(user="alice").update(_frame(0, [OTHER, MINE]), STARVING)
    assert job is not None and job.key == MINE.key
    job = JobFollower(user="carol").update(_frame(0, [OTHER, MINE]), STARVING)
    assert job is not None and job.key == OTHER.key  # none is hers: the first found


def test_with_no_card_only_a_probed_job_is_chosen_by_itself() -> None:
    # No vendor tool: the screen waits for a probed job; another unprobed trainer on the
    # machine (a test suite's, a colleague's) is not followed and then called ended.
    follower = JobFollower()
    unprobed = _frame(0, [OTHER]).model_copy(update={"cards": []})
    assert follower.update(unprobed, STARVING) is None
    probed = _frame(1, [OTHER, MINE]).model_copy(
        update={"cards": [], "probes": [ProbeSample(pid=100, batches=10)]})
    job = follower.update(probed, STARVING)
    assert job is not None and job.key == MINE.key
    assert JobFollower(pids=[200]).update(unprobed, STARVING) is not None  # --pid: followed


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


def _app(frames: list[Frame]) -> GpusatApp:
    return GpusatApp(ListSource(frames), tracker=FixedTracker(job=STARVING, default=STARVING),  # type: ignore[arg-type]
                     clock=lambda: T0, own_cpu=lambda: 0.4)


def _job_line(app: GpusatApp) -> str:
    return app.job_bar.full_text()


async def test_j_lists_the_jobs_and_enter_follows_the_chosen_one() -> None:
    app = _app([_frame(i, [MINE, OTHER]) for i in range(5)])
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 4, timeout=30)
        assert app.follower.job is not None and app.follower.job.key == MINE.key
        assert "j Jobs" in screen_text(app)  # in the footer
        await pilot.press("j")
        await settle(pilot, lambda: isinstance(app.screen, JobPicker))
        listed = screen_text(app)
        assert "▸ plain:100  alice: python train.py  cards nvidia:0" in listed
        assert "  plain:200  bob: python other.py  cards nvidia:0" in listed
        await pilot.press("down", "enter")
        await settle(pilot, lambda: not isinstance(app.screen, JobPicker))
        await settle(pilot, lambda: "bob" in _job_line(app))
        assert app.follower.job is not None and app.follower.job.key == OTHER.key
        assert "alice" not in _job_line(app)


async def test_escape_leaves_the_followed_job() -> None:
    app = _app([_frame(i, [MINE, OTHER]) for i in range(5)])
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 4, timeout=30)
        await pilot.press("j")
        await settle(pilot, lambda: isinstance(app.screen, JobPicker))
        await pilot.press("down", "escape")
        await settle(pilot, lambda: not isinstance(app.screen, JobPicker))
        assert app.follower.job is not None and app.follower.job.key == MINE.key
        assert "alice" in _job_line(app) and "bob" not in _job_line(app)


async def test_after_the_job_ended_its_panel_lists_no_other_jobs_trainer() -> None:
    frames = [_frame(i, [MINE]) for i in range(5)] + [_frame(i, [OTHER]) for i in range(5, 10)]
    app = _app(frames)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 9, timeout=30)
        await settle(pilot, lambda: "ENDED" in screen_text(app), timeout=30)
        text = screen_text(app)
        assert "1 other job runs on this host: j picks one to follow" in text
        assert not any(" 200 " in line for line in text.splitlines()), text  # bob's trainer
        # One key away: the picker lists bob's job; Enter follows it.
        await pilot.press("j")
        await settle(pilot, lambda: isinstance(app.screen, JobPicker))
        await pilot.press("enter")
        await settle(pilot, lambda: "ENDED" not in screen_text(app))
        assert app.follower.job is not None and app.follower.job.key == OTHER.key
        assert "bob" in _job_line(app)


def test_the_help_names_the_job_picker() -> None:
    assert "\n  j            the jobs on this host: pick the one to follow\n" in HELP


def _no_tool_frame(i: int) -> Frame:
    """No card; alice's and bob's jobs both probed, each with a DataLoader worker."""
    procs = [ProcessSample(pid=pid, role="trainer", name="python", cpu_pct=50.0)
             for pid in (100, 200)] + [
        ProcessSample(pid=pid + 1, role="dataloader_worker", name="pt_data_worker",
                      trainer_pid=pid) for pid in (100, 200)]
    probes = [ProbeSample(pid=pid, batches=10 + i) for pid in (100, 200)]
    return Frame(t=T0 + i, seq=i, processes=procs, probes=probes, jobs=[MINE, OTHER])


def test_with_no_card_the_pane_judges_the_followed_job_s_own_trainers() -> None:
    follower = JobFollower()
    first = _no_tool_frame(0)
    assert follower.own_frame(first) is first  # nothing followed yet: the frame whole
    follower.update(first, STARVING)
    own = follower.own_frame(_no_tool_frame(1))
    assert [p.pid for p in own.probes] == [100]
    assert sorted(p.pid for p in own.processes) == [100, 101]
    assert own.jobs == [MINE, OTHER]  # the picker still lists bob's job
    # With a card the frame is judged whole (its cards' verdicts name each job's own).
    carded = _no_tool_frame(2).model_copy(update={"cards": [card(0)]})
    assert follower.own_frame(carded) is carded


def test_the_status_of_the_followed_job_s_own_frame_names_it() -> None:
    follower = JobFollower()
    follower.update(_no_tool_frame(0), STARVING)
    status = summarise(follower.own_frame(_no_tool_frame(1)), Assessment(job=STARVING))
    assert (status.job, status.job_name) == (MINE.key, "train.py")
    whole = summarise(_no_tool_frame(1), Assessment(job=STARVING))
    assert (whole.job, whole.job_name) == (None, "2 jobs")


def _probed_frame(i: int) -> Frame:
    """No card; alice's job (PID 100) waits 2 % of its time on data, bob's (PID 200) 60 %."""
    elapsed = 10.0 + i
    probes = [ProbeSample(pid=pid, data_wait_pct=w, data_wait_s=elapsed * w / 100,
                          elapsed_s=elapsed, step_ms=120.0, batches=50 + i, age_s=0.2)
              for pid, w in ((100, 2.0), (200, 60.0))]
    procs = [ProcessSample(pid=pid, role="trainer", name="python", cpu_pct=20.0)
             for pid in (100, 200)]
    return Frame(t=T0 + i, seq=i, processes=procs, probes=probes, jobs=[MINE, OTHER])


async def test_with_no_card_the_job_picked_is_judged_from_its_own_probes_alone() -> None:
    source = StepSource([_probed_frame(i) for i in range(40)])
    app = GpusatApp(source, clock=lambda: T0, own_cpu=lambda: 0.4)  # the real verdict tracker
    async with app.run_test(size=(200, 40)) as pilot:
        source.release(8)
        await settle(pilot, lambda: app.frame is not None and app.frame.seq == 7, timeout=30)
        line = _job_line(app)
        assert "alice" in line and "UNKNOWN" in line and "data wait 2 %" in line, line
        assert "60 %" not in line, line  # bob's wait is not alice's job's
        await pilot.press("j")
        await settle(pilot, lambda: isinstance(app.screen, JobPicker))
        await pilot.press("down", "enter")
        await settle(pilot, lambda: not isinstance(app.screen, JobPicker))
        source.release(32)
        await settle(pilot, lambda: "STARVING" in _job_line(app), timeout=30)
        line = _job_line(app)
        assert "bob" in line and "data wait 60 %" in line and "alice" not in line, line
