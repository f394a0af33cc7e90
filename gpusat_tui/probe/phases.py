"""Which phase of a training step a stack is in, from its frames' modules and functions.

Standard library only (the probe runs it inside the trainer). A stack is read innermost frame
first and the first frame that names a phase decides (an optimizer step that calls a closure
running the forward, as Lightning's does, is in the forward while the closure runs), except
for evaluation and saving, which any frame of the stack decides (a model's ``state_dict`` under
``save_checkpoint`` is saving, not forward). Data wait is not decided here: the timed iterators
know it exactly (`sampler`).

Rules go by module prefix, so a framework version that moves a function inside its package
keeps its phase; what no rule names is "other". The cost of a rule table is paid once per code
object (`sampler` keeps each code's phase).
"""

from __future__ import annotations

#: Every phase a sample can be in, in the order shown.
PHASES = ("data", "forward", "backward", "optimizer", "collective", "sync", "checkpoint",
          "evaluation", "compiled", "other")

#: What a phase is called where it is shown (``compiled``: a graph that runs forward, backward
#: and the optimizer as one call, which no Python frame splits: Keras ``fit``, ``jax.jit``,
#: ``tf.function``, MindSpore's graph mode).
PHASE_WORDS = {
    "data": "data", "forward": "forward", "backward": "backward", "optimizer": "optimizer",
    "collective": "communication", "sync": "device sync", "checkpoint": "checkpoint",
    "evaluation": "evaluation", "compiled": "compiled step", "other": "other",
}

#: Module prefixes, most specific first (the first that matches a module decides).
MODULE_PHASES: tuple[tuple[str, str], ...] = (
    # saving and loading
    ("torch.distributed.checkpoint", "checkpoint"),
    ("torch.serialization", "checkpoint"),
    ("safetensors", "checkpoint"),
    ("paddle.framework.io", "checkpoint"),
    ("mindspore.train.serialization", "checkpoint"),
    ("orbax", "checkpoint"),
    ("tensorflow.python.checkpoint", "checkpoint"),
    ("tensorflow.python.training.saver", "checkpoint"),
    ("keras.src.saving", "checkpoint"),
    # communication
    ("torch.distributed", "collective"),
    ("deepspeed.comm", "collective"),
    ("horovod", "collective"),
    ("paddle.distributed", "collective"),
    ("mindspore.communication", "collective"),
    ("jax._src.lax.parallel", "collective"),
    ("tensorflow.python.distribute", "collective"),
    # input (outside a timed iterator: num_workers=0 collate is inside it)
    ("torch.utils.data", "data"),
    ("paddle.io", "data"),
    ("mindspore.dataset", "data"),
    ("grain", "data"),
    ("tensorflow.python.data", "data"),
    # the optimizer
    ("torch.optim", "optimizer"),
    ("paddle.optimizer", "optimizer"),
    ("mindspore.nn.optim", "optimizer"),
    ("optax", "optimizer"),
    ("keras.src.optimizers", "optimizer"),
    ("tf_keras.src.optimizers", "optimizer"),
    ("tensorflow.python.keras.optimizer_v2", "optimizer"),
    ("apex.optimizers", "optimizer"),
    ("transformers.optimization", "optimizer"),
    # the backward pass
    ("torch.autograd", "backward"),
    ("paddle.autograd", "backward"),
    ("mindspore.ops.composite", "backward"),
    ("tensorflow.python.eager.backprop", "backward"),
    ("jax._src.interpreters.ad", "backward"),
    # a compiled step (one phase: the graph does forward, backward and optimizer in one call)
    ("keras.src.backend.tensorflow.trainer", "compiled"),
    ("keras.src.backend.jax.trainer", "compiled"),
    ("tensorflow.python.eager.polymorphic_function", "compiled"),
    ("tensorflow.python.eager.def_function", "compiled"),
    ("jax._src.pjit", "compiled"),
    ("jax._src.pmap", "compiled"),
    ("mindspore.graph", "compiled"),  # MindSpore 2.8+: jit and graph-mode cells
    ("mindspore.common.api", "compiled"),
    ("torch._dynamo", "compiled"),
    # the forward pass
    ("torch.nn", "forward"),
    ("paddle.nn", "forward"),
    ("mindspore.nn", "forward"),
    ("flax", "forward"),
    ("haiku", "forward"),
    ("keras.src.layers", "forward"),
    ("keras.src.models", "forward"),
    ("tensorflow.python.keras.engine", "forward"),
)

#: In these modules only these functions are forward (``Module.state_dict``, ``.to()`` and
#: ``zero_grad`` are not).
FORWARD_ONLY: dict[str, frozenset[str]] = {
    "torch.nn.modules.module": frozenset({"_call_impl", "_wrapped_call_impl", "__call__"}),
}

#: Functions that wait for the device, in any framework module.
SYNC_FUNCTIONS = frozenset({"synchronize", "block_until_ready", "device_get", "_sync"})
#: Framework roots whose ``SYNC_FUNCTIONS`` count (a user's own ``synchronize`` is not one).
SYNC_ROOTS = frozenset({"torch", "paddle", "jax", "jaxlib", "mindspore", "tensorflow"})
#: Functions of these modules that copy a device array to the host, so wait for the work that
#: makes it (JAX and MindSpore dispatch asynchronously: ``float(loss)`` waits for the step).
SYNC_IN_MODULES: dict[str, frozenset[str]] = {
    "jax._src.array": frozenset({"_value", "__array__"}),
    "mindspore.common.tensor": frozenset({"asnumpy"}),
    "tensorflow.python.framework.ops": frozenset({"numpy", "_numpy"}),
}

#: Functions that make a whole stack evaluation, wherever they are (the user's own included).
EVAL_FUNCTIONS = frozenset({
    "evaluate", "evaluation_loop", "prediction_loop", "prediction_step", "validate",
    "validation_step", "validation_loop", "eval_step", "test_step", "_run_evaluation",
    "run_evaluation", "predict_step", "evaluate_step",
})
#: Functions that make a whole stack saving, wherever they are.
SAVE_FUNCTIONS = frozenset({
    "save_checkpoint", "_save_checkpoint", "save_pretrained", "save_model", "save_state",
    "save_weights",
})


#: Functions that are a forward pass wherever they are: Lightning's ``training_step`` (the
#: user's forward and loss, which Lightning runs in a closure inside the optimizer's step).
FORWARD_FUNCTIONS = frozenset({"training_step"})


def frame_phase(module: str, function: str) -> str | None:
    """The phase one frame names by itself (None: it names none; "evaluation"/"checkpoint"
    from a function name: the whole stack's, see `stack_phase`)."""
    if function in FORWARD_FUNCTIONS:
        return "forward"
    if function in EVAL_FUNCTIONS:
        return "evaluation"
    if function in SAVE_FUNCTIONS:
        return "checkpoint"
    root = module.partition(".")[0]
    if function in SYNC_FUNCTIONS and root in SYNC_ROOTS:
        return "sync"
    waits = SYNC_IN_MODULES.get(module)
    if waits is not None and function in waits:
        return "sync"
    only = FORWARD_ONLY.get(module)
    if only is not None:
        return "forward" if function in only else None
    if function == "backward" and root in ("torch", "paddle"):
        return "backward"  # Tensor.backward (torch._tensor, paddle's patched methods)
    for prefix, phase in MODULE_PHASES:
        if module == prefix or (module.startswith(prefix) and module[len(prefix)] == "."):
            return phase
    return None


def stack_phase(phases: list[str | None]) -> tuple[str, int]:
    """The phase of a stack given each frame's `frame_phase`, innermost first, and the index
    of the frame that decided it (-1: none did, "other")."""
    for i, phase in enumerate(phases):
        if phase in ("evaluation", "checkpoint"):
            return phase, i
    for i, phase in enumerate(phases):
        if phase is not None:
            return phase, i
    return "other", -1
