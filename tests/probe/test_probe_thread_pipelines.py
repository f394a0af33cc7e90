"""Real tf.data and MindSpore pipelines that run in threads inside the trainer
(``pip install '.[frameworks]'``): the process monitor reads those threads' CPU, and ``check
--json`` beside a fake vendor tool on an idling card says ``starving (input-bound)`` with
"input pipeline runs in N threads inside the trainer, X % CPU", advising the pipeline's own
parallelism, never ``num_workers``.

The job (`probe_jobs/iter_job.py --burn`): the data source busy-waits 160 ms a batch in the
pipeline's thread while the step sleeps 40 ms (a step on an accelerator: the trainer's main
thread waits), so the loop waits ~75 % and the pipeline's thread burns a core.
"""

from __future__ import annotations

import re
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from gpusat_tui.host.monitor.processes import ProcessMonitor
from tests.fakes.tool import FakeBin, FakeCard
from tests.probe.test_probe_iterators import need
from tests.probe_helpers import JOBS, ProbedJob, check_beside, probed_job

pytestmark = pytest.mark.frameworks

JOB = str(JOBS / "iter_job.py")
IDLE = FakeCard(index=0, name="Fake DCU", util_pct=15.0, mem_used_mib=50000.0,
                mem_total_mib=100000.0, power_w=80.0, power_cap_w=300.0, temp_c=50.0)
THREAD_LINE = re.compile(r"input pipeline runs in (\d+) threads? inside the trainer, (\d+) % CPU")
#: (--framework, what the advice names)
CASES = [("tf-numpy", "num_parallel_calls"), ("mindspore", "num_parallel_workers")]


def burning_job(probe_dir: Path, framework: str) -> AbstractContextManager[ProbedJob]:
    return probed_job(
        probe_dir, sys.executable, JOB, "--framework", framework, "--burn", "--sleep-ms", "160",
        "--compute-ms", "40", "--workers", "1", "--max-seconds", "300")


@pytest.mark.parametrize(("framework", "_words"), CASES)
def test_the_monitor_reads_the_pipeline_threads(private_probe_dir: Path, framework: str,
                                                _words: str) -> None:
    need(framework)
    with burning_job(private_probe_dir, framework) as job:
        monitor = ProcessMonitor(pids=[job.pid], rescan_s=3.0)
        seen = []
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                [trainer] = [p for p in monitor.sample().processes if p.pid == job.pid]
                seen.append((trainer.other_threads_cpu_pct, trainer.busy_threads))
                if (trainer.other_threads_cpu_pct or 0.0) >= 30.0 and trainer.busy_threads:
                    break
                time.sleep(0.3)
            else:
                pytest.fail(f"the pipeline's threads were never read busy: {seen[-6:]}")
        finally:
            monitor.close()


@pytest.mark.parametrize(("framework", "words"), CASES)
def test_check_json_says_input_bound_in_n_threads(
    fake_bin: FakeBin, private_probe_dir: Path, framework: str, words: str
) -> None:
    name = need(framework)
    # A check whose seconds the pipeline's threads spent queued behind other jobs (a loaded
    # machine) reads them idle, as it should: check again until a run reads them busy.
    whys: list[list[str]] = []
    with burning_job(private_probe_dir, framework) as job:
        for _ in range(4):
            report = check_beside(fake_bin, private_probe_dir, IDLE)
            [card] = report["cards"]
            verdict = card["verdict"]
            whys.append(verdict["why"])
            found = [m for m in map(THREAD_LINE.search, verdict["why"]) if m]
            if found:
                break
    trainer = job.trainer(report)
    assert trainer["probe"]["framework"] == name
    assert (verdict["kind"], verdict["cause"]) == ("starving", "input-bound"), verdict
    assert found, whys
    threads, cpu = int(found[0].group(1)), int(found[0].group(2))
    assert threads >= 1 and cpu >= 10, verdict["why"]  # busy (19 % beside two CPU burners)
    advice = " ".join(verdict["advice"])
    assert words in advice and "num_workers" not in advice, verdict["advice"]
    assert trainer["other_threads_cpu_pct"]["max"] >= 10, trainer
    assert trainer["busy_threads"]["max"] >= 1, trainer
