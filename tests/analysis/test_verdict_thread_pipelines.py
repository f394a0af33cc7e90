"""A loop measured waiting on a pipeline that runs in threads inside the trainer (tf.data,
MindSpore, Grain without workers): the verdict stands on the trainer's other threads as it
stands on workers, and never advises ``num_workers``. Hand-built windows; the real pipelines
are in tests/probe/test_probe_thread_pipelines.py."""

from __future__ import annotations

import pytest

from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CardReading, HostSample, ProcessSample
from tests.analysis.test_verdict_probe import probe, window


def idle_card() -> CardReading:
    return CardReading(vendor="nvidia", index=0, util_pct=20.0, power_w=90.0,
                       power_cap_w=400.0, mem_used_mib=50000.0, mem_total_mib=80000.0)


def trainer(others: float | None, busy: int | None) -> ProcessSample:
    return ProcessSample(pid=100, role="trainer", name="python", cpu_pct=40.0 + (others or 0),
                         card_ids=["nvidia:0"], other_threads_cpu_pct=others,
                         busy_threads=busy)


def verdict(framework: str, others: float | None, busy: int | None):  # type: ignore[no-untyped-def]
    probes = [[probe(60.0, i, framework=framework)] for i in range(6)]
    return judge(window([idle_card()], probes, [trainer(others, busy)])).cards["nvidia:0"]


@pytest.mark.parametrize(("framework", "words"), [
    ("tf.data", "num_parallel_calls"), ("mindspore", "num_parallel_workers"),
    ("grain", "worker_count"),
])
def test_pegged_pipeline_threads_read_input_bound_in_n_threads(framework: str,
                                                               words: str) -> None:
    v = verdict(framework, 190.0, 2)
    assert (v.kind, v.cause) == ("starving", "input-bound")
    assert any(w.startswith("input pipeline runs in 2 threads inside the trainer, 190 % CPU")
               for w in v.why), v.why
    assert any("peg their cores" in w for w in v.why), v.why
    advice = " ".join(v.advice)
    assert words in advice
    assert "num_workers" not in advice


def test_busy_threads_on_a_crowded_host_are_not_said_to_wait_elsewhere() -> None:
    """60 % of a core each while the host's CPUs are all busy: the threads may be queued for
    a core (as the real burning pipeline reads on a loaded 2-core machine)."""
    probes = [[probe(60.0, i, framework="tf.data")] for i in range(6)]
    frames = window([idle_card()], probes, [trainer(60.0, 1)])
    frames = [f.model_copy(update={"host": HostSample(cpu_pct=99.0, cpu_count=2)})
              for f in frames]
    v = judge(frames).cards["nvidia:0"]
    assert v.cause == "input-bound"
    assert any("input pipeline runs in 1 thread inside the trainer, 60 % CPU" in w
               for w in v.why), v.why
    assert any("CPU contention" in w for w in v.why), v.why
    assert not any("not pegged" in w for w in v.why), v.why
    assert "Free cores" in " ".join(v.advice)


def test_idle_pipeline_threads_say_the_pipeline_waits_on_something_else() -> None:
    v = verdict("tf.data", 12.0, 0)
    assert (v.kind, v.cause) == ("starving", "input-bound")
    assert any("runs in threads inside the trainer, 12 % CPU" in w for w in v.why), v.why
    assert any("not pegged" in w for w in v.why)
    assert "num_workers" not in " ".join(v.advice)


def test_without_thread_figures_the_sentence_says_they_were_not_read() -> None:
    v = verdict("mindspore", None, None)
    assert v.cause == "input-bound"
    assert any("runs in threads inside the trainer (no worker processes; their CPU was not "
               "read)" in w for w in v.why), v.why


def test_a_torch_loop_with_busy_threads_is_not_called_a_thread_pipeline() -> None:
    """Other threads of a torch trainer (OpenMP, NCCL) are no input pipeline: the torch
    wording stays (no workers seen: loading runs in the loop)."""
    v = verdict("torch", 190.0, 2)
    assert v.cause == "input-bound"
    assert not any("inside the trainer" in w for w in v.why), v.why
    assert any("num_workers=0" in w for w in v.why)


@pytest.mark.parametrize(("framework", "words", "not_words"), [
    ("grain", "worker_count", "prefetch_factor"),
    ("mindspore", "num_parallel_workers", "prefetch_factor"),
    ("torch", "num_workers", "worker_count"),
])
def test_a_pipeline_with_workers_is_advised_in_its_frameworks_words(
    framework: str, words: str, not_words: str
) -> None:
    workers = [ProcessSample(pid=101, role="dataloader_worker", name="python", cpu_pct=3.0,
                             trainer_pid=100, card_ids=["nvidia:0"])]
    probes = [[probe(60.0, i, framework=framework)] for i in range(6)]
    v = judge(window([idle_card()], probes, [trainer(None, None), *workers])).cards["nvidia:0"]
    assert (v.kind, v.cause) == ("starving", "input-bound")
    advice = " ".join(v.advice)
    assert words in advice and not_words not in advice, v.advice
