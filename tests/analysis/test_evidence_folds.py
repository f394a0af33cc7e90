"""Each host figure is folded across polls by one row: `PollEvidence`, `HostEvidence` and the
fold table agree, and the fold is the one the row names."""

from __future__ import annotations

import dataclasses

from gpusat_tui.analysis.evidence import (
    FOLDS,
    SHARES,
    HostEvidence,
    PollEvidence,
    fold_evidence,
)
from gpusat_tui.analysis.facts import clean_median

#: `HostEvidence` fields that come from the frames (the host), not from the processes' polls.
HOST_FIGURES = {"cpu_count", "iowait", "host_cpu"}


def test_every_poll_figure_has_one_row_and_lands_on_an_evidence_field() -> None:
    folded = [poll for poll, _, _ in FOLDS] + [f for part, whole, _ in SHARES
                                              for f in (part, whole)]
    assert sorted(folded) == sorted(PollEvidence._fields)  # each once, none left out
    targets = [target for _, target, _ in FOLDS] + [target for _, _, target in SHARES]
    assert len(targets) == len(set(targets))
    fields = {f.name for f in dataclasses.fields(HostEvidence) if f.init}
    assert set(targets) == fields - HOST_FIGURES


def _poll(**figures: object) -> PollEvidence:
    base: dict[str, object] = {"n_tied": 3, "foreign": False, "trainer_cpu": None,
                               "pin_cpu": None, "trainer_delay": None, "n_workers": 2,
                               "worker_cpu": None, "worker_sum": None, "worker_delay": None,
                               "worker_demand": None, "states": 2, "d_states": 0}
    base.update(figures)
    return PollEvidence(**base)  # type: ignore[arg-type]


def test_the_fold_of_each_row_is_applied() -> None:
    polls = [
        _poll(trainer_cpu=10.0, n_workers=2, states=2, d_states=1, world_size=2, rank=None,
              busy_threads=1, quota_cores=0.5, throttled_pct=40.0),
        _poll(trainer_cpu=30.0, n_workers=0, states=2, d_states=0, world_size=4, rank=1,
              busy_threads=3, quota_cores=0.5, throttled_pct=60.0, foreign=True),
        _poll(trainer_cpu=20.0, n_workers=4, states=4, d_states=3, world_size=None, rank=0,
              busy_threads=None, quota_cores=1.0, throttled_pct=80.0),
    ]
    ev = fold_evidence([], polls)
    assert ev.n_process_samples == 9
    assert ev.foreign_processes is True
    assert ev.trainer_cpu == clean_median([10.0, 30.0, 20.0]) == 20.0
    assert ev.n_workers == 3  # the median of the polls that saw workers (2 and 4)
    assert ev.dstate_frac == 4 / 8
    assert ev.world_size == 4 and ev.rank == 1  # the largest, the first set
    assert ev.trainer_busy_threads == 2
    assert ev.quota_cores == 0.5 and ev.quota_throttled_pct == 60.0
