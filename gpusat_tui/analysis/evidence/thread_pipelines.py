"""Input pipelines that run in threads inside the trainer: what to say, and what to advise.

tf.data's C++ runtime, MindSpore's dataset pipeline (without ``python_multiprocessing``) and
Grain without worker processes load in threads of the training process: no worker process to
watch, none to advise. Their threads carry no name of their own on Linux (measured with
TensorFlow 2.21 and MindSpore 2.10), so the figures are those of every thread but the main one
and the pin-memory thread (`host.task_threads`); they are read as the pipeline's only where the
trainer's probe names one of these frameworks (any other busy thread of the trainer counts too:
the cost of having no name to go by).
"""

from __future__ import annotations

from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.wording import pct

__all__ = ["THREAD_PIPELINES", "more_in_flight", "thread_pipeline_finding"]

#: Framework (as the probe names it) -> how to give its pipeline more in flight.
THREAD_PIPELINES = {
    "tf.data": "raise the map's num_parallel_calls (tf.data.AUTOTUNE), add .prefetch(AUTOTUNE), "
               "cache or interleave the reads",
    "mindspore": "raise num_parallel_workers (more than one forks worker processes with "
                 "python_multiprocessing=True), or the batch's prefetch_size",
    "grain": "set worker_count > 0 on grain.DataLoader (or mp_prefetch on a dataset) so "
             "batches are prepared in worker processes, and raise ReadOptions num_threads",
}

#: Framework -> what gives its worker processes more in flight (torch's DataLoader words
#: otherwise: Paddle's DataLoader takes the same).
WORKER_KNOBS = {
    "grain": "Give Grain more in flight: a larger worker_count and worker_buffer_size "
             "(grain.DataLoader; num_workers of mp_prefetch on a dataset), more ReadOptions "
             "num_threads",
    "mindspore": "Give the pipeline more in flight: a larger num_parallel_workers, a larger "
                 "prefetch size (mindspore.dataset.config.set_prefetch_size)",
}
TORCH_KNOBS = ("Give the DataLoader more in flight: more num_workers, a larger prefetch_factor, "
               "persistent_workers=True, pin_memory=True")


def more_in_flight(framework: str | None) -> str:
    """The advice that gives a pipeline with worker processes more in flight, in its
    framework's words."""
    return WORKER_KNOBS.get(framework or "", TORCH_KNOBS)


#: Where the pipeline's threads are pegged and there is no more core to give them.
_OFFLOAD = {
    "tf.data": "Move the pipeline's work off this host: precompute the transforms, or run it "
               "on a tf.data service (tf.data.experimental.service.distribute)",
    "mindspore": "Move the pipeline's work off this host's CPU: precompute the transforms, or "
                 "run the vision transforms on the device (their .device('Ascend'))",
    "grain": "Precompute the transforms, or cheaper ones: the pipeline's threads are pegged",
}

_BLOCKING = ("Look for blocking calls in the dataset (remote storage, a lock, sleeps, per-sample "
             "network requests): cache or prefetch what it fetches")


def thread_pipeline_finding(
    ev: HostEvidence, th: Thresholds, framework: str
) -> tuple[list[str], list[str]]:
    """(why, advice) of a loop measured waiting on a pipeline that runs in threads.

    With the threads' CPU read: ``input pipeline runs in N threads inside the trainer, X %
    CPU``, and whether they peg their cores (then more parallelism helps only where cores are
    free) or idle (then they wait on reads or a lock, not on the CPU). Without (other systems,
    older recordings): the plain sentence, said as not measured."""
    more = f"Give the {framework} pipeline more in flight: {THREAD_PIPELINES[framework]}"
    cpu, busy = ev.trainer_threads_cpu, ev.trainer_busy_threads
    if cpu is None:
        return [
            f"the {framework} input pipeline runs in threads inside the trainer (no worker "
            "processes; their CPU was not read): the batches arrive too slowly all the same"
        ], [more, _BLOCKING]
    if busy:
        line = (f"input pipeline runs in {busy} thread{'s' if busy > 1 else ''} inside the "
                f"trainer, {pct(cpu)} CPU ({framework}; threads other than the main one)")
    else:
        line = (f"input pipeline runs in threads inside the trainer, {pct(cpu)} CPU "
                f"({framework}; no thread besides the main one busy)")
    pegged = busy is not None and busy > 0 and cpu >= th.worker_pegged_pct * busy
    free = None
    if ev.cpu_count and ev.host_cpu is not None:
        free = ev.cpu_count * (1.0 - ev.host_cpu / 100.0)
    if pegged:
        why = [line, "its threads peg their cores: the input pipeline is CPU-bound"]
        if free is not None and free < 1.0:
            why.append(f"the host has no core to spare ({pct(ev.host_cpu or 0.0)} CPU busy)")
            return why, [_OFFLOAD[framework], more]
        return why, [more, _OFFLOAD[framework]]
    crowded = (ev.host_cpu is not None and ev.host_cpu >= th.host_busy_pct) or (
        ev.trainer_delay is not None and ev.trainer_delay >= th.run_delay_high_pct)
    if busy and crowded:
        # Threads that ask for a core may get less of one on a crowded host: their own run
        # delay is not read (a file per thread), so neither cause is ruled out.
        host = f"the host's CPUs are {pct(ev.host_cpu)} busy" if ev.host_cpu is not None else (
            f"the trainer waits for a CPU {pct(ev.trainer_delay or 0.0)} of the time")
        return [line, f"{host}: its threads may be held back by CPU contention as much as by "
                      "what they wait on"], [
            more, "Free cores for the pipeline: other jobs on this host (top), fewer threads "
                  "elsewhere in the trainer (OMP_NUM_THREADS)", _BLOCKING]
    return [line, "its threads are not pegged: the pipeline waits on something other than the "
                  "CPU (reads, a lock, too few batches in flight)"], [more, _BLOCKING]
