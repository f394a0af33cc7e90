"""The phase a stack is in, from its frames' modules and functions (`probe.phases`), and the
sampler's bookkeeping on a live thread (`probe.sampler`)."""

from __future__ import annotations

import threading
import time

import pytest

from gpusat_tui.probe.phases import PHASES, frame_phase, stack_phase
from gpusat_tui.probe.sampler import StackSampler, is_user_file, sample_hz


def phase_of(*frames: tuple[str, str]) -> str:
    """The phase of a stack given as (module, function), innermost first."""
    return stack_phase([frame_phase(m, f) for m, f in frames])[0]


@pytest.mark.parametrize(("frames", "phase"), [
    # torch: DDP's all-reduce, torch.save, Tensor.backward, an optimizer, a module call
    ([("torch.distributed.distributed_c10d", "all_reduce"), ("torch.distributed.c10d_logger",
      "wrapper"), ("__main__", "main")], "collective"),
    ([("torch.serialization", "save"), ("__main__", "main")], "checkpoint"),
    ([("torch.autograd", "backward"), ("torch._tensor", "backward"), ("__main__", "main")],
     "backward"),
    ([("torch._tensor", "backward"), ("__main__", "main")], "backward"),
    ([("torch.optim.sgd", "_single_tensor_sgd"), ("torch.optim.optimizer", "wrapper")],
     "optimizer"),
    ([("__main__", "Model.forward"), ("torch.nn.modules.module", "_call_impl")], "forward"),
    ([("torch.cuda", "synchronize"), ("__main__", "main")], "sync"),
    # Lightning runs the forward in a closure inside the optimizer's step: forward
    ([("torch.nn.modules.module", "_call_impl"), ("lightning.pytorch.loops", "closure"),
      ("torch.optim.optimizer", "wrapper"), ("lightning.pytorch.core.module", "step")],
     "forward"),
    # ... and its own training_step code (outside any module call) is forward too
    ([("__main__", "training_step"), ("lightning.pytorch.loops", "closure"),
      ("torch.optim.optimizer", "wrapper")], "forward"),
    # a model's state_dict under HF's checkpoint save is saving, not forward
    ([("torch.nn.modules.module", "state_dict"), ("transformers.trainer", "_save_checkpoint")],
     "checkpoint"),
    # evaluation anywhere in the stack wins over the forward it runs
    ([("torch.nn.modules.module", "_call_impl"), ("transformers.trainer", "evaluation_loop")],
     "evaluation"),
    # Keras fit and jax.jit: one compiled step
    ([("tensorflow.python.eager.polymorphic_function.polymorphic_function", "__call__"),
      ("keras.src.backend.tensorflow.trainer", "fit")], "compiled"),
    ([("jax._src.pjit", "cache_miss"), ("__main__", "train_step")], "compiled"),
    ([("jax._src.api", "block_until_ready"), ("__main__", "main")], "sync"),
    # Paddle and MindSpore
    ([("paddle.optimizer.adam", "step")], "optimizer"),
    ([("paddle.base.dygraph.tensor_patch_methods", "backward")], "backward"),
    ([("paddle.nn.layer.layers", "__call__")], "forward"),
    ([("mindspore.common.api", "__call__"), ("mindspore.train.model", "_train")], "compiled"),
    # MindSpore 2.8+: a graph-mode cell's graph runs under mindspore.graph inside
    # Cell.__call__ (mindspore.nn): compiled, not forward
    ([("mindspore.graph.api", "_exec_pip"), ("mindspore.graph.api", "run"),
      ("mindspore.nn.cell", "compile_and_run"), ("mindspore.nn.cell", "__call__")], "compiled"),
    # copying a device array to the host waits for the step that makes it
    ([("jax._src.array", "_value"), ("jax._src.array", "__float__"), ("__main__", "main")],
     "sync"),
    ([("mindspore.common.tensor", "asnumpy"), ("__main__", "main")], "sync"),
    ([("tensorflow.python.framework.ops", "_numpy"), ("__main__", "main")], "sync"),
    ([("jax._src.array", "__getitem__"), ("__main__", "main")], "other"),
    # what no rule names, and a user's own function called like a framework one
    ([("__main__", "log_progress"), ("__main__", "main")], "other"),
    ([("__main__", "synchronize")], "other"),
    ([("torchvision.transforms", "forward")], "other"),
])
def test_a_stack_is_in_the_phase_its_frames_name(frames: list[tuple[str, str]],
                                                  phase: str) -> None:
    assert phase in PHASES
    assert phase_of(*frames) == phase


def test_user_files_are_neither_the_standard_library_nor_installed_packages() -> None:
    assert is_user_file("/home/u/project/train.py")
    assert not is_user_file(threading.__file__)
    assert not is_user_file("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py")
    assert not is_user_file("/usr/lib/python3/dist-packages/numpy/core.py")
    assert not is_user_file("<frozen importlib._bootstrap>")


def test_sample_rate_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUSAT_PROBE_STACK_HZ", raising=False)
    assert sample_hz() == 20.0
    for off in ("0", "off", "-3"):
        monkeypatch.setenv("GPUSAT_PROBE_STACK_HZ", off)
        assert sample_hz() is None
    monkeypatch.setenv("GPUSAT_PROBE_STACK_HZ", "5000")
    assert sample_hz() == 200.0


def _blocked_here(started: threading.Event, release: threading.Event) -> None:
    started.set()
    release.wait(30)


def test_a_blocked_thread_reads_still_at_its_line_and_a_gone_one_is_not_sampled() -> None:
    started, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=_blocked_here, args=(started, release), daemon=True)
    thread.start()
    assert started.wait(10)
    sampler = StackSampler()
    sampler.thread = thread.ident
    now = time.perf_counter()
    assert sampler.sample(now, False, None)
    for i in range(1, 6):
        assert sampler.sample(now + i, False, None)
    line = sampler.user_line()
    assert line is not None and line[2] == "_blocked_here"
    assert sampler.t - sampler.since == 5  # the same stack for five seconds of samples
    assert sampler.samples == 6 and sampler.phases["other"] == 6
    assert sampler.signature() is not None and sampler.stack()[-1][1] == "Condition.wait"
    assert sampler.sample(now + 6, True, None) and sampler.phase == "data"
    release.set()
    thread.join(10)
    assert not sampler.sample(now + 7, False, None)
    assert sampler.samples == 7
    # No current stack once its thread is gone: nothing stands still for good.
    assert (sampler.frames, sampler.phase, sampler.signature(), sampler.user_line()) == (
        (), None, None, None)
