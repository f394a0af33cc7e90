"""Each host figure is declared once (`HostFigures`, with its fold): a poll's figures
(`PollEvidence`) and the window's (`HostEvidence`) are made from that one declaration, and the
fold is the one it names."""

from __future__ import annotations

import dataclasses

from gpusat_tui.analysis.clean_series import clean_median
from gpusat_tui.analysis.evidence.host_evidence import SHARES, HostEvidence, fold_evidence
from gpusat_tui.analysis.evidence.host_figures import FOLDS, HostFigures
from gpusat_tui.analysis.evidence.poll_evidence import PollEvidence

#: `HostEvidence` fields that come from the frames (the host), not from the processes' polls.
HOST_FIGURES = {"cpu_count", "iowait", "host_cpu"}


def _names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls) if f.init}


def test_every_figure_has_one_fold_and_is_a_field_of_the_poll_and_the_window() -> None:
    figures = _names(HostFigures)
    assert [name for name, _ in FOLDS] == [f.name for f in dataclasses.fields(HostFigures)]
    assert all(callable(fold) for _, fold in FOLDS)
    counts = {f for part, whole, _ in SHARES for f in (part, whole)}
    assert _names(PollEvidence) == figures | counts  # a poll: the figures and the counts
    shares = [target for _, _, target in SHARES]
    assert len(shares) == len(set(shares))
    assert _names(HostEvidence) == figures | set(shares) | HOST_FIGURES


def test_the_fold_of_each_figure_is_applied() -> None:
    polls = [
        PollEvidence(n_process_samples=3, trainer_cpu=10.0, n_workers=2, states=2, d_states=1,
                     world_size=2, rank=None, trainer_busy_threads=1, quota_cores=0.5,
                     quota_throttled_pct=40.0),
        PollEvidence(n_process_samples=3, trainer_cpu=30.0, n_workers=0, states=2, d_states=0,
                     world_size=4, rank=1, trainer_busy_threads=3, quota_cores=0.5,
                     quota_throttled_pct=60.0, foreign_processes=True),
        PollEvidence(n_process_samples=3, trainer_cpu=20.0, n_workers=4, states=4, d_states=3,
                     world_size=None, rank=0, trainer_busy_threads=None, quota_cores=1.0,
                     quota_throttled_pct=80.0),
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


def test_no_tied_process_at_any_poll_leaves_every_figure_unset_but_foreign() -> None:
    polls = [PollEvidence(foreign_processes=True, trainer_cpu=50.0), PollEvidence()]
    ev = fold_evidence([], polls)
    assert ev.foreign_processes is True and ev.trainer_cpu is None and not ev.has_processes
