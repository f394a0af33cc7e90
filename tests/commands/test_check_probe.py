"""End to end: ``check --json`` with a fake vendor tool beside a real probed training job.

The card's figures never change (busy utilisation, high power: "saturated" from outside); only
what the probe measures in the trainer does. Waiting on data, the card is starving whatever the
utilisation says, with the measured wait in ``why``; once the same job stops waiting, it is
saturated and ``why`` says the wait is low.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from gpusat_tui.collectors import all_specs
from tests.fakes.tool import FakeBin
from tests.probe_helpers import BUSY, check, start_job, stop_job, wait_for_doc, wait_ready


def test_starving_on_measured_data_wait_then_saturated(
    fake_bin: FakeBin, private_probe_dir: Path, tmp_path: Path
) -> None:
    spec = next(s for s in all_specs() if s.tool == "hy-smi")
    fake_bin.add_for_spec(spec, [[BUSY]])
    switch = tmp_path / "waiting"
    switch.write_text("")
    proc = start_job(private_probe_dir, "--sleep-ms", "60", "--compute-ms", "20",
                     "--switch-file", str(switch))
    try:
        pid = wait_ready(proc)
        wait_for_doc(private_probe_dir, pid)
        waiting = check(fake_bin, private_probe_dir)
        switch.unlink()  # the same job stops waiting on its data
        time.sleep(1.0)
        fed = check(fake_bin, private_probe_dir)
    finally:
        rc, _, err = stop_job(proc)
    assert rc == 0, err

    [card] = waiting["cards"]
    verdict = card["verdict"]
    assert (verdict["kind"], verdict["cause"]) == ("starving", "input-bound"), verdict
    assert "measured in the trainer" in verdict["why"][0], verdict["why"]
    assert "blocked on next(dataloader)" in verdict["why"][0]
    [trainer] = [p for p in waiting["processes"] if p["pid"] == pid]
    probe = trainer["probe"]
    assert trainer["role"] == "trainer" and trainer["card_ids"] == ["hygon:0"]
    assert probe["data_wait_pct"]["mean"] > 50 and probe["tie"] == "guess"
    assert list(probe) == ["data_wait_pct", "step_ms", "batches_per_s", "samples_per_s", "rank",
                           "world_size", "alloc", "local_rank", "card_id", "tie", "batches",
                           "steps", "run", "framework", "data_wait_note", "stack"]
    assert list(probe["step_ms"]) == ["mean", "min", "max", "last"]

    [card] = fed["cards"]
    verdict = card["verdict"]
    assert verdict["kind"] == "saturated", verdict
    # Quoted, and below the starving line: "the wait is low" (< 5 %) on a quiet machine; a
    # loaded one slows the batches' handover (6 % was read beside CPU burners).
    waits = [int(m.group(1)) for w in verdict["why"]
             if "measured in the trainer" in w and (m := re.match(r"data wait (\d+) %", w))]
    assert waits and waits[0] < 20, verdict["why"]
    [trainer] = [p for p in fed["processes"] if p["pid"] == pid]
    assert trainer["probe"]["data_wait_pct"]["mean"] < 5
