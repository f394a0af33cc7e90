"""Verdicts on the phases every long run goes through, on hand-built windows: evaluation,
checkpoints, a rank waiting for a peer on another node, and the time before a stall.

Each rule meets the figure it turns on (progress counters, the probe's batches and steps, the
trainer's own writes, the launcher's world size), with the card figures held fixed so that only
that figure changes the verdict. The same cases run as real processes in
`tests/test_check_phases.py`, and as labelled scenarios (`tests/scenarios.py`).
"""

from __future__ import annotations

import pytest

from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.host.monitor.procfs import parse_proc_io, parse_schedstat_counts
from gpusat_tui.host.scheduler.launch_env import parse_environ, world_of
from gpusat_tui.model import CardReading, Frame, HostSample, ProbeSample, ProcessSample
from gpusat_tui.ui.widgets.processes import probe_summary

T0 = 1_767_225_600.0
STALL_S = DEFAULT_THRESHOLDS.stall_min_s


def card(util: float, power_frac: float = 0.18, mem_pct: float = 91.0,
         sm: float | None = None) -> CardReading:
    total = 81920.0
    return CardReading(
        vendor="nvidia", index=0, util_pct=util, mem_used_mib=total * mem_pct / 100,
        mem_total_mib=total, power_w=400.0 * power_frac, power_cap_w=400.0,
        extras={"sm_active_pct": sm} if sm is not None else {},
    )


def proc(pid: int, role: str = "dataloader_worker", cpu: float = 1.0, state: str = "sleeping",
         **figures: object) -> ProcessSample:
    return ProcessSample(
        pid=pid, role=role, name="python" if role == "trainer" else "pt_data_worker",  # type: ignore[arg-type]
        cpu_pct=cpu, state=state, trainer_pid=None if role == "trainer" else 100, **figures,
    )


def flat(**figures: object) -> dict[str, object]:
    """Progress counters that do not move (a hung job), with any figure replaced."""
    return {"rchar_per_s": 0.0, "wchar_per_s": 0.0, "syscalls_per_s": 0.0,
            "ctx_switches_per_s": 0.2, **figures}


def frames(n: int, cards: CardReading, procs: list[ProcessSample],
           probes: list[list[ProbeSample]] | None = None,
           host: HostSample | None = None) -> list[Frame]:
    return [
        Frame(t=T0 + i, seq=i, cards=[cards], processes=procs,
              probes=probes[i] if probes else [], host=host)
        for i in range(n)
    ]


def hung_job() -> list[ProcessSample]:
    return [proc(100, "trainer", 0.5, **flat()), *(proc(101 + k, **flat()) for k in range(2))]


# --- the time before a stall, and the stall ---------------------------------------------------


def test_a_hang_is_paused_until_the_stall_time_then_stalled_and_never_starving() -> None:
    window = frames(40, card(0.0, mem_pct=70.0), hung_job())
    for k in range(3, 41):
        verdict = judge(window[:k]).cards["nvidia:0"]
        span = k - 1  # seconds from the first poll to the latest
        if span < STALL_S:
            assert (verdict.kind, verdict.cause) == ("unknown", "paused"), (k, verdict)
            assert verdict.why[0] == (
                f"nothing has run for {span} s; a stall is called at 20 s (in {20 - span} s if "
                "nothing moves)")
            assert any("progress counters are flat" in w for w in verdict.why)
        else:
            assert verdict.kind == "stalled", (k, verdict)
    tracker = VerdictTracker()
    shown = [tracker.push(f) for f in window]
    kinds = [a.cards["nvidia:0"].kind for a in shown]
    assert "starving" not in kinds
    first = kinds.index("stalled")
    assert window[first].t - window[0].t >= STALL_S
    assert set(kinds[first:]) == {"stalled"}


def test_the_paused_job_line_says_so_for_every_card() -> None:
    two = [
        Frame(t=T0 + i, seq=i, cards=[card(0.0), card(0.0).model_copy(update={"index": 1})],
              processes=hung_job())
        for i in range(8)
    ]
    job = judge(two).job
    assert (job.kind, job.cause) == ("unknown", "paused")
    assert job.why[0] == "2 of 2 cards paused: nvidia:0, nvidia:1"


@pytest.mark.parametrize("moving", [
    {"rchar_per_s": 300e3},  # reads through read(2): files, or a socket read as a file
    {"syscalls_per_s": 60.0},  # many small reads and writes
    {"ctx_switches_per_s": 40.0},  # recv(2) on a socket counts no bytes, only the wake-ups
])
def test_workers_whose_counters_move_are_never_stalled(moving: dict[str, float]) -> None:
    procs = [proc(100, "trainer", 3.0, **flat()),
             *(proc(101 + k, cpu=6.0, **flat(**moving)) for k in range(4))]
    window = frames(40, card(3.0), procs)
    verdict = judge(window).cards["nvidia:0"]
    assert verdict.kind == "starving", verdict
    if "syscalls_per_s" not in moving:  # calls alone show progress, not what they wait on
        assert verdict.cause == "io-bound", verdict
        assert any("sleep on reads" in w for w in verdict.why), verdict.why
    # The same window with the counters flat is a stall: the counters decided.
    assert judge(frames(40, card(3.0), hung_job())).cards["nvidia:0"].kind == "stalled"


def test_without_counters_a_disk_wait_may_be_a_slow_write_and_is_no_stall() -> None:
    procs = [proc(100, "trainer", 1.0, state="disk-sleep"), proc(101), proc(102)]
    verdict = judge(frames(40, card(0.0, mem_pct=70.0), procs)).cards["nvidia:0"]
    assert verdict.kind == "starving"


# --- evaluation with a probe -------------------------------------------------------------------


def eval_probe(i: int, batches_per_s: float = 14.0, steps: int = 500) -> ProbeSample:
    """Publication ``i`` of a probe in a loop that counts batches but no optimizer steps."""
    return ProbeSample(
        pid=100, card_id="nvidia:0", tie="device", data_wait_pct=92.0, step_ms=None,
        batches_per_s=batches_per_s, batches=1000 + int(batches_per_s * i), steps=steps,
        data_wait_s=0.92 * i, elapsed_s=float(i), age_s=0.4,
    )


def test_an_evaluation_with_batches_flowing_is_not_stalled_and_says_eval() -> None:
    # No counters at all (an old recording, or another system): the probe's batches decide.
    procs = [proc(100, "trainer", 3.0), proc(101, cpu=6.0), proc(102, cpu=6.0)]
    probes = [[eval_probe(i)] for i in range(40)]
    window = frames(40, card(3.0), procs, probes)
    verdict = judge(window).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "input-bound")
    assert "phase: evaluation (batches without optimizer steps)" in verdict.why[0]
    # The job line names the phase.
    assert probe_summary(window[-1].probes).endswith("· eval")
    tracker = VerdictTracker()
    assert all(tracker.push(f).cards["nvidia:0"].kind != "stalled" for f in window)


def test_a_probe_counting_no_batch_is_a_stall_and_says_so() -> None:
    procs = [proc(100, "trainer", 0.5), proc(101, cpu=0.5)]
    probes = [[eval_probe(0, batches_per_s=0.0)] for _ in range(40)]
    verdict = judge(frames(40, card(0.0), procs, probes)).cards["nvidia:0"]
    assert verdict.kind == "stalled"
    assert any("the probe in the trainer counted no batch" in w for w in verdict.why)


def test_training_steps_are_not_called_eval() -> None:
    train = [ProbeSample(pid=100, card_id="nvidia:0", data_wait_pct=1.0, step_ms=180.0,
                         batches_per_s=5.0, batches=5 * i, steps=5 * i, age_s=0.3)
             for i in range(1, 4)]
    assert "eval" not in probe_summary(train)


# --- checkpoints: the trainer's own writes -----------------------------------------------------


def saving_job(**trainer_figures: object) -> list[ProcessSample]:
    return [proc(100, "trainer", 4.0, state="disk-sleep", **trainer_figures),
            *(proc(101 + k, cpu=0.5, **flat()) for k in range(2))]


def test_a_trainer_writing_while_the_card_idles_is_a_checkpoint_not_io_bound() -> None:
    procs = saving_job(**flat(wchar_per_s=8 * 2**20, syscalls_per_s=8.0))
    host = HostSample(cpu_pct=8.0, iowait_pct=30.0, cpu_count=16)
    window = frames(40, card(0.0, mem_pct=70.0), procs, host=host)
    verdict = judge(window).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "checkpoint")
    assert any(w.startswith("the trainer writes 8.0 MiB/s") for w in verdict.why), verdict.why
    advice = " ".join(verdict.advice)
    assert "async_save" in advice and "Shard" in advice
    assert "dataset" not in advice and "NVMe or /dev/shm, or cache it" not in advice


def test_a_trainer_in_disk_wait_beside_its_workers_is_a_checkpoint_without_counters() -> None:
    # An older recording: no counters, the trainer in D while its 2 workers are not. The
    # trainer is 1 of 3 processes (33 %, over the 30 % line that once said io-bound).
    window = [
        Frame(t=T0 + i, seq=i, cards=[card(0.0, mem_pct=70.0)], processes=[
            # A save blocks in most polls, not all.
            proc(100, "trainer", 4.0, state="sleeping" if i % 3 == 0 else "disk-sleep"),
            proc(101), proc(102),
        ])
        for i in range(10)
    ]
    verdict = judge(window).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "checkpoint")


def test_workers_in_disk_wait_are_still_io_bound() -> None:
    procs = [proc(100, "trainer", 10.0, state="running"),
             *(proc(101 + k, cpu=5.0, state="disk-sleep") for k in range(3))]
    verdict = judge(frames(10, card(0.0, mem_pct=70.0), procs)).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "io-bound")


def test_a_checkpoint_stuck_on_storage_is_a_stall() -> None:
    window = frames(30, card(0.0, mem_pct=70.0), saving_job(**flat(ctx_switches_per_s=0.0)))
    verdict = judge(window).cards["nvidia:0"]
    assert verdict.kind == "stalled"
    assert any("waiting on storage (D state) without writing a byte" in w for w in verdict.why)
    assert verdict.advice[0].startswith("A process waits on storage and writes nothing")


# --- a busy card is not waiting on the host ----------------------------------------------------


def spinning(**trainer_figures: object) -> list[ProcessSample]:
    return [proc(100, "trainer", 98.0, state="running", **trainer_figures),
            *(proc(101 + k, cpu=3.0) for k in range(2))]


@pytest.mark.parametrize("shown", [{"world_size": 2}, {"world_size": 2, "rank": 1},
                                   {"rank": 3}])
def test_a_pegged_trainer_of_a_distributed_job_beside_a_busy_card_waits_for_a_peer(
    shown: dict[str, int],
) -> None:
    window = frames(10, card(95.0, power_frac=0.41, mem_pct=70.0), spinning(**shown))
    verdict = judge(window).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "collective-wait")
    assert any("a rank on another node" in w for w in verdict.why)


def test_the_probe_shows_the_job_distributed_too() -> None:
    probes = [[ProbeSample(pid=100, card_id="nvidia:0", world_size=2, rank=0, step_ms=300.0,
                           batches_per_s=3.0, batches=3 * i, steps=3 * i, age_s=0.2,
                           data_wait_pct=1.0, data_wait_s=0.01 * i, elapsed_s=float(i))]
              for i in range(10)]
    window = frames(10, card(95.0, power_frac=0.41, mem_pct=70.0), spinning(), probes)
    verdict = judge(window).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "collective-wait")
    assert any("read by the probe" in w for w in verdict.why)


def test_busy_by_sm_activity_is_busy_too() -> None:
    # GPM: SMs 85 % active: not saturated at this power? It is: SM activity decides busy.
    window = frames(10, card(95.0, power_frac=0.41, sm=30.0), spinning(world_size=2))
    verdict = judge(window).cards["nvidia:0"]
    assert verdict.cause == "collective-wait"


def test_a_pegged_trainer_beside_an_idle_card_is_still_host_bound() -> None:
    window = frames(10, card(35.0, power_frac=0.35, mem_pct=50.0), spinning(world_size=2))
    verdict = judge(window).cards["nvidia:0"]
    assert (verdict.kind, verdict.cause) == ("starving", "host-bound")


# --- the readers behind the figures (pure parsers) ---------------------------------------------


def test_proc_io_parses_the_kernel_text() -> None:
    text = (b"rchar: 6976\nwchar: 12\nsyscr: 10\nsyscw: 1\nread_bytes: 0\nwrite_bytes: 0\n"
            b"cancelled_write_bytes: 0\n")
    io = parse_proc_io(text)
    assert io is not None and (io.rchar, io.wchar, io.syscr, io.syscw) == (6976, 12, 10, 1)
    assert parse_proc_io(b"rchar: 1\nwchar: x\nsyscr: 1\nsyscw: 1\n") is None
    assert parse_proc_io(b"rchar: 1\n") is None
    other = parse_proc_io(b"syscw: 4\nwchar: 2\nrchar: 1\nsyscr: 3\n")  # another layout
    assert other is not None and tuple(other) == (1, 2, 3, 4)
    assert parse_proc_io(b"") is None


def test_schedstat_gives_run_delay_and_context_switches() -> None:
    assert parse_schedstat_counts(b"123 2000000000 57\n") == (2.0, 57)
    assert parse_schedstat_counts(b"123 x 57\n") == (None, 57)
    assert parse_schedstat_counts(b"garbage") == (None, None)


def test_launcher_variables_from_the_environment() -> None:
    env = parse_environ(b"PATH=/bin\0WORLD_SIZE=2\0RANK=1\0junk\0=x\0")
    assert world_of(env) == (2, 1)
    assert world_of(parse_environ(b"OMPI_COMM_WORLD_SIZE=16\0OMPI_COMM_WORLD_RANK=7\0")) == (
        16, 7)
    assert world_of(parse_environ(b"SLURM_PROCID=3\0")) == (None, 3)
    assert world_of(parse_environ(b"WORLD_SIZE=two\0RANK=-1\0")) == (None, None)


def test_recordings_without_the_new_fields_still_load() -> None:
    old = ('{"pid": 1, "role": "trainer", "name": "python", "cpu_pct": 3.0, "state": "running",'
           ' "trainer_pid": null, "card_ids": [], "pin_cpu_pct": null, "num_threads": 4,'
           ' "run_delay_pct": null}')
    sample = ProcessSample.model_validate_json(old)
    assert sample.rchar_per_s is None and sample.world_size is None
    new = sample.model_copy(update={"wchar_per_s": 5.0, "world_size": 2})
    assert ProcessSample.model_validate_json(new.model_dump_json()) == new


def test_the_monitors_first_poll_without_cpu_figures_does_not_make_a_hang_starving() -> None:
    # The first poll of a process has no CPU figure (a baseline): a job hung before the
    # monitor started is paused from the first judged window, not starving.
    blank = [p.model_copy(update={"cpu_pct": None, "ctx_switches_per_s": None}) for p in hung_job()]
    window = [Frame(t=T0, seq=0, cards=[card(0.0)], processes=blank)]
    window += frames(8, card(0.0), hung_job())[1:]
    tracker = VerdictTracker()
    kinds = [(v.kind, v.cause) for v in (tracker.push(f).cards["nvidia:0"] for f in window)]
    assert ("unknown", "paused") in kinds
    assert all(kind != "starving" for kind, _ in kinds), kinds


def test_a_few_wake_ups_over_a_short_poll_do_not_end_a_stall() -> None:
    # Counting wake-ups over a 0.25 s poll: 3 naps of a 5-a-second timer read as 12 a second.
    def job_at(i: int) -> list[ProcessSample]:
        wakes = 12.0 if i % 3 == 1 else 4.0
        return [proc(100, "trainer", 0.5, **flat(ctx_switches_per_s=wakes)),
                proc(101, **flat())]
    window = [Frame(t=T0 + i, seq=i, cards=[card(0.0)], processes=job_at(i)) for i in range(30)]
    assert judge(window).cards["nvidia:0"].kind == "stalled"
    # Steady at that rate, it is progress (two such polls in a row end a stall).
    steady = frames(30, card(0.0), [proc(100, "trainer", 0.5, **flat(ctx_switches_per_s=12.0))])
    assert judge(steady).cards["nvidia:0"].kind == "starving"
