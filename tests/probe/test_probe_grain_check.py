"""A real input-bound Grain loop beside a fake vendor tool: ``check --json`` reads the wait the
job itself spent in ``next()``, and the job is input-bound as constructed.

Why this file exists: ``check --json`` once read ~22 % for a Grain job constructed to wait
75 %. The measurement was right; the construction was not: Grain reads a batch's records with
16 threads by default (``ReadOptions(num_threads=16)``), so a source sleeping 40 ms a record
made a 40 ms batch, not a 160 ms one, and the loop barely waited (its own timing of ``next()``
read 1.2 % where the probe read 1.1 % and ``check`` 1 %; 2.2 % and 1 % beside three CPU hogs;
the 22 % itself was not reproduced).
`probe_jobs/iter_job.py` now reads with one thread (``--read-threads 1``), and this test holds
both links: the job against its construction, ``check`` against the job's own timing.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.tool import FakeBin
from tests.probe.test_probe_iterators import need
from tests.probe.test_probe_jobs import waited_by
from tests.probe_helpers import JOBS, check_beside, edge_pct, probed_job

pytestmark = pytest.mark.frameworks

WAIT_LINE = re.compile(r"data wait (\d+) % over the last (\d+) s, measured in the trainer")


@pytest.mark.parametrize("framework", ["grain", "grain-dataset"])
@pytest.mark.parametrize(("sleep_ms", "compute_ms"), [(160.0, 40.0), (160.0, 120.0)])
def test_check_json_reads_the_wait_grain_was_constructed_with(
    fake_bin: FakeBin, private_probe_dir: Path, tmp_path: Path, framework: str,
    sleep_ms: float, compute_ms: float,
) -> None:
    need(framework)
    marks_file = tmp_path / "marks.json"
    with probed_job(private_probe_dir, sys.executable, str(JOBS / "iter_job.py"),
                    "--framework", framework, "--sleep-ms", str(sleep_ms), "--compute-ms",
                    str(compute_ms), "--workers", "1", "--max-seconds", "300",
                    "--marks", str(marks_file)) as job:
        report = check_beside(fake_bin, private_probe_dir)
        ended = time.time()
    [card] = report["cards"]
    found = [m for m in map(WAIT_LINE.search, card["verdict"]["why"]) if m]
    assert found, card["verdict"]["why"]
    read, span = float(found[0].group(1)), float(found[0].group(2))
    marks = json.loads(marks_file.read_text())
    start = ended - max(span, 1.0)
    own = 100.0 * (waited_by(marks, ended) - waited_by(marks, start)) / (ended - start)
    constructed = 100.0 * (sleep_ms - compute_ms) / sleep_ms
    # The job is input-bound as constructed (Grain's 16 reading threads made it ~1 %) ...
    assert abs(own - constructed) <= 10.0, (own, constructed)
    # ... and check --json reads what the job itself spent in next().
    slack = 6.0 + edge_pct(marks, start, ended)
    assert abs(read - own) <= slack, (read, own, slack, card["verdict"]["why"][0])
    assert job.trainer(report)["probe"]["framework"] == "grain"
    if read >= 20:
        advice = " ".join(card["verdict"]["advice"])
        assert "worker_count" in advice and "num_workers" not in advice.replace(
            "num_workers of mp_prefetch", ""), advice
