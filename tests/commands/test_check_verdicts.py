"""End to end: ``gpusat-tui check --json`` against fake tools following the labelled scenarios.

Each test renders a scenario of `tests.scenarios` (card figures per tick, the processes a tool
lists) into a fake vendor executable (`tests.fakes.tool`), runs the real CLI in a subprocess at
0.25 s polls, and compares every card's verdict and the top-level verdict with the scenario's
labels. Host evidence is never faked: the scenarios that need it (starving input-/host-bound,
the straggler's pegged workers, "no host bottleneck" behind a false saturation) run a real
process tree (`tests/jobs/busy_tree.py`) given with ``--pid`` or listed in the tool's own
process table.

Poll ``k`` of a run shows the scenario's tick ``ticks[k]``: the fake tool answers its ``k``-th
call with that tick's output, whatever time it is (see `scenario_steps`).

With 0.25 s polls the tracker's 30 s window holds the whole run: the verdict needs 3 fresh
polls (``Thresholds.min_samples``), the badge changes after the new state has held for 2 polls
(``hold_polls``), so 8 polls leave 5 of settled evidence. Scenario trainers have made-up PIDs;
those not backed by a real tree are mapped to PIDs above ``pid_max`` (a trainer in another PID
namespace: listed by the tool, never visible here).

The staged host side needs a machine that is not otherwise busy: a spinning worker or trainer
reads ~100 % of a core on an idle 2-core machine (the pegged lines are 85 % and 90 %), but
another CPU-bound job running at the same time takes its share and the cause may come out
``unknown``; another job's DataLoader workers would be auto-discovered by the run that must see
no process at all. Each such failure prints the figures that decided.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.collectors import all_specs
from gpusat_tui.collectors.base import ToolSpec
from gpusat_tui.sources.recording.reader import read_recording
from tests.fakes import FakeProcess
from tests.fakes.tool import FakeBin, Step
from tests.scenarios import SCENARIOS, TRAINER_PID, Expectation, Scenario

REPO = Path(__file__).resolve().parents[2]
INTERVAL = "0.25"
#: 8 polls: 3 to reach a verdict, the rest to settle it.
DURATION = "2.0"
#: Fewest polls a run may have for its verdict to mean anything: 3 fresh readings for a verdict,
#: one more because a process's CPU needs a baseline poll. A loaded machine overruns polls, and
#: a run is bounded by time, so it may get fewer than the 8 that 2 s hold.
MIN_POLLS = 4


def spec_named(tool: str) -> ToolSpec:
    return next(s for s in all_specs() if s.tool == tool)


def invisible_pid(n: int = 0) -> int:
    """A PID no process here can have (above the kernel's ``pid_max``)."""
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        pid_max = 4_194_304  # the largest Linux allows
    return pid_max + 1000 + n


def scenario_steps(
    scenario: Scenario,
    ticks: Sequence[int],
    pids: Mapping[int, int] | None = None,
) -> list[Step]:
    """One fake-tool call per poll: poll ``k`` shows ``scenario``'s tick ``ticks[k]``.

    ``pids`` maps the scenario's trainer PIDs to real ones; every other PID the tool lists
    becomes an invisible one.
    """
    pids = pids or {}
    fake_pids: dict[int, int] = {}

    def real(pid: int) -> int:
        if pid in pids:
            return pids[pid]
        return fake_pids.setdefault(pid, invisible_pid(len(fake_pids)))

    steps = []
    for tick in ticks:
        listed = tuple(
            FakeProcess(real(p.pid), p.name, p.card_index, p.mem_mib)
            for p in scenario.tool_processes(tick)
        )
        steps.append(Step(cards=tuple(scenario.cards(tick)), processes=listed))
    return steps


@functools.cache
def pid_namespace_prefix() -> tuple[str, ...]:
    """``unshare`` into a PID namespace of its own, where it may be used (root, and a kernel
    and sandbox that allow it): a check in it sees no process but its own, so no other job on
    this machine (another test's, with pytest-xdist) can be found by auto-discovery. Empty
    where it cannot be used."""
    argv = ("unshare", "--pid", "--fork", "--mount-proc")
    if shutil.which("unshare") is None:
        return ()
    probe = subprocess.run([*argv, "true"], capture_output=True, check=False, timeout=30)
    return argv if probe.returncode == 0 else ()


def start_check(fakes: FakeBin, *args: str, alone: bool = False) -> subprocess.Popen[str]:
    """``check --json`` started in its own session, boosted as `busy_tree` boosts the jobs;
    ``alone``: in a PID namespace of its own where one can be made (`pid_namespace_prefix`)."""
    prefix = list(pid_namespace_prefix()) if alone else []
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "gpusat_tui", "check", "--json", "--interval", INTERVAL,
         *args],
        env=fakes.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        start_new_session=True,
    )
    with contextlib.suppress(OSError):
        Path(f"/proc/{proc.pid}/autogroup").write_text("-10")
    return proc


def run_check(fakes: FakeBin, *args: str, timeout: float = 120.0,
              alone: bool = False) -> dict[str, Any]:
    """``check --json`` in its own session, boosted like the jobs it watches (`busy_tree`):
    with autogroup scheduling a boosted job tree beside a loaded machine would otherwise
    leave the monitor too little CPU to poll its duration's samples at all."""
    proc = start_check(fakes, *args, alone=alone)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    [line] = stdout.strip().splitlines()
    return json.loads(line)  # type: ignore[no-any-return]


def card_expectations(scenario: Scenario, vendor: str) -> dict[str, Expectation]:
    """Each card's expected verdict: the scenario's per-card label, else the job's."""
    return {
        f"{vendor}:{card.index}": scenario.expected_cards.get(card.index, scenario.expected)
        for card in scenario.cards(0)
    }


def verdicts(report: dict[str, Any]) -> dict[str, Expectation]:
    return {
        c["id"]: Expectation(c["verdict"]["kind"], c["verdict"]["cause"]) for c in report["cards"]
    }


def assert_verdicts(report: dict[str, Any], scenario: Scenario, vendor: str) -> None:
    """Every card's kind and cause, and the top-level verdict, as the scenario labels them."""
    assert report["samples"] >= MIN_POLLS, report
    assert verdicts(report) == card_expectations(scenario, vendor), json.dumps(
        [c["verdict"] for c in report["cards"]], indent=1
    )
    assert report["verdict"] == scenario.expected_kind


#: DataLoader workers that burn a core each. "Pegged" means near 100 % of a core, so they need a
#: core each with room left for the monitor: on a 2-core machine two spinning workers and the
#: polling ``check`` share two cores and read ~85-90 % each, on the threshold; one reads ~100 %.
PEGGED_WORKERS = 2 if (os.cpu_count() or 1) >= 3 else 1


def workers_line(n: int) -> str:
    """How a verdict's ``why`` starts its worker figures (``_worker_line``)."""
    return f"{n} worker at " if n == 1 else f"{n} workers at "


def processes_of(report: dict[str, Any]) -> dict[int, str]:
    return {p["pid"]: p["role"] for p in report["processes"]}


# --- real process trees -------------------------------------------------------------------------


@dataclass
class Tree:
    """A running `busy_tree.py`: the trainer's PID and its workers'."""

    trainer: int
    workers: list[int]


@contextlib.contextmanager
def busy_tree(*args: str, max_s: float = 300.0) -> Iterator[Tree]:
    """Start ``tests/jobs/busy_tree.py`` with ``args``; always kill the whole tree after.

    The tree lives until the test kills it: ``max_s`` is only a safety net for a crashed
    test. (At 20 s, a check that a loaded machine took long to start polled a trainer that
    had already ended: a zombie, and no workers.)

    The tree leads its own session, and where allowed (root / CAP_SYS_NICE) that session's
    autogroup gets nice -10, as `tests.host.test_processes.Job` does: with autogroup scheduling
    every session gets an equal share of the cores, so a CPU-bound neighbour (another job on a
    shared runner) would otherwise hold a spinning worker well under the 85 % "pegged" line, and the
    verdict would say ``unknown``. Boosted, the staged job is pegged as a real one would be.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.jobs.busy_tree", "--max-s", str(max_s), *args],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True,
    )
    with contextlib.suppress(OSError):
        Path(f"/proc/{proc.pid}/autogroup").write_text("-10")
    workers: list[int] = []
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the worker PIDs, once they are forked
        assert line, f"busy_tree.py {' '.join(args)} did not start"
        workers = [int(pid) for pid in line.split()]
        yield Tree(proc.pid, workers)
    finally:
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        # The trainer reaps its workers (every 0.2 s at most) while it lives: wait for that
        # before killing it, so no zombie worker is left for init to reap whenever it gets to
        # it, showing up meanwhile in the next test's process scan.
        gone_by = time.monotonic() + 5
        while proc.poll() is None and any(_child_of(p, proc.pid) for p in workers):
            assert time.monotonic() < gone_by, f"workers {workers} were never reaped"
            time.sleep(0.01)
        proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
        # Had the trainer ended first (--max-s), its orphans are init's; they must be dead.
        while any(_alive(p) for p in workers):
            assert time.monotonic() < gone_by, f"workers {workers} outlived the test"
            time.sleep(0.02)


def _child_of(pid: int, parent: int) -> bool:
    """``pid`` still exists (a zombie counts) as a child of ``parent`` (not a reused PID)."""
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).ppid() == parent
    return False


def _alive(pid: int) -> bool:
    """``pid`` runs (not a zombie); a reused PID has another parent and does not count."""
    with contextlib.suppress(psutil.Error):
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE and proc.ppid() <= 1
    return False


# --- device-side scenarios ------------------------------------------------------------------


DEVICE_CASES = [
    # (scenario, tool): a few vendors, each with the figures its scenario depends on
    # (false saturation needs a power cap: nvidia-smi and hy-smi give one, npu-smi does not).
    ("saturated_steady", "npu-smi"),
    ("saturated_noisy", "hy-smi"),
    ("fragmenting", "hy-smi"),
    ("idle", "npu-smi"),
    ("saturated_no_power", "cnmon"),
    ("amd_busy_reading_idle", "amd-smi"),
    ("ascend_saturated_aicore", "npu-smi"),
]


@pytest.mark.parametrize(("name", "tool"), DEVICE_CASES, ids=[n for n, _ in DEVICE_CASES])
def test_device_side_scenario_gets_its_labelled_verdict(
    fake_bin: FakeBin, name: str, tool: str
) -> None:
    scenario = SCENARIOS[name]
    spec = spec_named(tool)
    fake_bin.add_for_spec(spec, scenario_steps(scenario, range(12)))
    report = run_check(fake_bin, "--duration", DURATION)
    assert_verdicts(report, scenario, spec.vendor)


def test_imbalanced_four_cards_with_the_stragglers_workers_pegged(fake_bin: FakeBin) -> None:
    """Ranks 0-2 saturated, rank 3 starving on its own pegged workers: the job is imbalanced."""
    scenario = SCENARIOS["imbalanced_4_cards"]
    rank3 = 5000 + 100 * 3  # the scenario's rank-3 trainer
    assert {p.pid for p in scenario.processes(0) if "nvidia:3" in p.card_ids} == {rank3}
    with busy_tree("--workers", str(PEGGED_WORKERS), "--worker-burn-s", "inf") as tree:
        spec = spec_named("nvidia-smi")
        fake_bin.add_for_spec(spec, scenario_steps(scenario, range(12), {rank3: tree.trainer}))
        report = run_check(fake_bin, "--duration", DURATION)
    assert processes_of(report) == {
        tree.trainer: "trainer", **{w: "dataloader_worker" for w in tree.workers}
    }
    assert_verdicts(report, scenario, spec.vendor)
    card3 = report["cards"][3]["verdict"]
    assert any(w.startswith(workers_line(PEGGED_WORKERS)) for w in card3["why"]), card3["why"]
    assert any(w.startswith("lags the job: ") for w in card3["why"]), card3["why"]


def test_false_saturation_with_a_calm_host_is_light_kernels(fake_bin: FakeBin) -> None:
    """100 % GPU-Util at 30 % power while the host has nothing pegged: not saturated."""
    scenario = SCENARIOS["false_saturation"]
    with busy_tree("--workers", "2") as tree:  # trainer and workers idle: no host bottleneck
        spec = spec_named("nvidia-smi")
        fake_bin.add_for_spec(
            spec, scenario_steps(scenario, range(12), {TRAINER_PID: tree.trainer})
        )
        report = run_check(fake_bin, "--duration", DURATION)
    assert processes_of(report)[tree.trainer] == "trainer"
    assert_verdicts(report, scenario, spec.vendor)
    why = report["cards"][0]["verdict"]["why"]
    assert any("not saturation" in w for w in why), why


# --- starving: the cause from the host ------------------------------------------------------


def test_starving_without_process_evidence_says_unknown_and_asks_for_pid(
    fake_bin: FakeBin,
) -> None:
    scenario = SCENARIOS["starving_no_process_data"]
    spec = spec_named("hy-smi")
    fake_bin.add_for_spec(spec, scenario_steps(scenario, range(12)))
    report = run_check(fake_bin, "--duration", DURATION, alone=True)
    # The tool lists a trainer this machine cannot see; nothing else runs DataLoader workers
    # (a pt_data_worker tree running elsewhere on this machine would be found instead: the
    # check runs in a PID namespace of its own where it can).
    foreign = [(p["pid"], p["role"], p["name"]) for p in report["processes"]]
    assert foreign == [], (
        "another job's DataLoader workers run on this machine and were auto-discovered, so "
        f"this scenario cannot be staged here: {foreign}"
    )
    assert any(n.startswith(f"PID {invisible_pid()} listed by the accelerator tool")
               for n in report["notes"]), report["notes"]
    assert_verdicts(report, scenario, spec.vendor)
    advice = report["cards"][0]["verdict"]["advice"]
    assert any("--pid" in line for line in advice), advice


@pytest.mark.parametrize("how", ["--pid", "tool-listed"])
def test_starving_with_pegged_workers_is_input_bound(fake_bin: FakeBin, how: str) -> None:
    scenario = SCENARIOS["starving_input_bound"]
    with busy_tree("--workers", str(PEGGED_WORKERS), "--worker-burn-s", "inf") as tree:
        if how == "--pid":
            spec = spec_named("nvidia-smi")
            fake_bin.add_for_spec(spec, scenario_steps(scenario, range(12)))
            report = run_check(fake_bin, "--duration", DURATION, "--pid", str(tree.trainer))
        else:
            spec = spec_named("hy-smi")
            fake_bin.add_for_spec(
                spec, scenario_steps(scenario, range(12), {TRAINER_PID: tree.trainer})
            )
            report = run_check(fake_bin, "--duration", DURATION)
    assert processes_of(report) == {
        tree.trainer: "trainer", **{w: "dataloader_worker" for w in tree.workers}
    }
    assert_verdicts(report, scenario, spec.vendor)
    why = report["cards"][0]["verdict"]["why"]
    # Pegged workers, or (other jobs keeping the cores busy) workers that ask for a full core
    # and are queued for part of it: the same cause, said with the figures that show it.
    assert any(
        w.startswith(workers_line(PEGGED_WORKERS)) and "the input pipeline is CPU-bound" in w
        for w in why
    ), why


def test_starving_with_the_trainer_pegged_is_host_bound(fake_bin: FakeBin) -> None:
    scenario = SCENARIOS["starving_host_bound"]
    with busy_tree("--workers", "2", "--trainer-burn") as tree:
        spec = spec_named("nvidia-smi")
        fake_bin.add_for_spec(spec, scenario_steps(scenario, range(12)))
        report = run_check(fake_bin, "--duration", DURATION, "--pid", str(tree.trainer))
    assert processes_of(report) == {
        tree.trainer: "trainer", **{w: "dataloader_worker" for w in tree.workers}
    }
    assert_verdicts(report, scenario, spec.vendor)
    why = report["cards"][0]["verdict"]["why"]
    # Pegged, or (on a loaded machine) held under the line but queued for a CPU.
    assert any(w.startswith("trainer at ") and "while 2 workers at" in w
               and ("(pegged)" in w or "queued for a CPU" in w) for w in why), why


def test_more_busy_workers_than_cores_are_input_bound_by_run_delay(fake_bin: FakeBin) -> None:
    """Three spinning workers per core: each gets a third of a core (far under the 85 %
    pegged line, and together under it too), but waits the rest of the time in the run
    queue. Judged by the run delay, they are CPU-bound, and the host oversubscribed."""
    scenario = SCENARIOS["starving_contended"]
    cores = len(os.sched_getaffinity(0))
    workers = min(3 * cores, 24)
    with busy_tree("--workers", str(workers), "--worker-burn-s", "inf") as tree:
        spec = spec_named("nvidia-smi")
        fake_bin.add_for_spec(spec, scenario_steps(scenario, range(12)))
        report = run_check(fake_bin, "--duration", DURATION, "--pid", str(tree.trainer))
    assert processes_of(report) == {
        tree.trainer: "trainer", **{w: "dataloader_worker" for w in tree.workers}
    }
    assert_verdicts(report, scenario, spec.vendor)
    why = report["cards"][0]["verdict"]["why"]
    assert any("queued for a CPU" in w or "CPU-bound" in w for w in why), why
    assert any(w.startswith("the host is oversubscribed: workers wait for a CPU") for w in why), why


def test_a_job_with_nothing_running_for_20_s_is_stalled(fake_bin: FakeBin) -> None:
    """A real trainer and workers that sleep (0 % CPU) beside a card that holds its VRAM at
    util 0: ``check`` says stalled once it has lasted ``stall_min_s`` (20 s: this test takes
    about 22 s), with how long and the py-spy advice for the real PID."""
    scenario = SCENARIOS["stalled"]
    with busy_tree("--workers", "2") as tree:
        spec = spec_named("nvidia-smi")
        fake_bin.add_for_spec(spec, scenario_steps(scenario, range(30, 130)))
        report = run_check(fake_bin, "--duration", "22", "--pid", str(tree.trainer))
    assert report["verdict"] == "stalled", json.dumps(report["cards"], indent=1)
    verdict = report["cards"][0]["verdict"]
    assert verdict["kind"] == "stalled"
    assert verdict["why"][0].startswith("stalled for at least 2"), verdict["why"]
    assert any(f"py-spy dump --pid {tree.trainer}" in a for a in verdict["advice"])


# --- a step change --------------------------------------------------------------------------


def test_step_from_input_bound_to_saturated_flips_the_badge_once(
    fake_bin: FakeBin, tmp_path: Path
) -> None:
    """Starving (input-bound) for 6 polls, then saturated: ``check`` ends on saturated, and the
    badge over its recorded polls flips once, within 3 polls of the change."""
    scenario = SCENARIOS["step_starving_to_saturated"]
    assert scenario.change_at is not None and scenario.before is not None
    before, after = 6, 8
    ticks = list(range(scenario.change_at - before, scenario.change_at + after))
    stop, recording = tmp_path / "stop", tmp_path / "run.jsonl"
    spec = spec_named("nvidia-smi")
    required = next(q for q in spec.queries if not q.optional).args
    with busy_tree("--workers", str(PEGGED_WORKERS), "--worker-burn-s", "inf",
                   "--stop-file", str(stop)) as tree:
        tool = fake_bin.add_for_spec(spec, scenario_steps(scenario, ticks))
        check = start_check(fake_bin, "--duration", str(0.25 * len(ticks)),
                            "--pid", str(tree.trainer), "--record", str(recording))
        try:
            # The workers stop being the bottleneck once the first "after" poll has run the
            # tool (the num_workers fix of the scenario).
            deadline = time.monotonic() + 30
            while tool.calls(required) <= before and check.poll() is None:
                assert time.monotonic() < deadline, "check never reached the step"
                time.sleep(0.02)
            stop.touch()
            out, err = check.communicate(timeout=30)
        finally:
            check.kill()
            check.wait()
    assert check.returncode == 0, err
    report = json.loads(out)
    # check's own verdict at the end: the state after the step.
    assert verdicts(report) == {f"{spec.vendor}:0": scenario.expected}
    assert report["verdict"] == scenario.expected_kind

    # Its polls, judged one by one as the badge does: poll k showed tick ticks[k].
    _, frames = read_recording(recording)
    frames = list(frames)
    assert len(frames) == report["samples"] >= before + 4
    assert [f.cards[0].util_pct for f in frames] == [
        scenario.cards(t)[0].util_pct for t in ticks[: len(frames)]
    ]
    tracker = VerdictTracker(window_s=30.0)
    badge = [
        Expectation(v.kind, v.cause)
        for v in (tracker.push(f).cards[f"{spec.vendor}:0"] for f in frames)
    ]
    shown = [b for b in badge if b.kind != "unknown"]
    changes = [b for i, b in enumerate(shown) if i == 0 or b != shown[i - 1]]
    assert changes == [scenario.before, scenario.expected], badge
    assert badge[before - 1] == scenario.before, badge  # held until the change
    assert badge.index(scenario.expected) <= before + 2, badge  # within 3 polls of it
