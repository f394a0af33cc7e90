"""How figures are written in ``why`` and ``advice``: shared formatting and sentences.

People read these lines to decide what to change, so the same figure is always written the
same way (``pct``, ``gib``, ``plural``); the sentences about host evidence are
``evidence.host_words``'s.
"""

from __future__ import annotations

__all__ = [
    "ALLOC_CONF_VARS",
    "duration",
    "gib",
    "pct",
    "plural",
    "stall_span",
    "stalled_advice",
    "util_nature",
]

#: The PyTorch caching-allocator variable of each vendor's PyTorch build.
ALLOC_CONF_VARS: dict[str, str] = {
    "nvidia": "PYTORCH_CUDA_ALLOC_CONF",
    "amd": "PYTORCH_HIP_ALLOC_CONF",
    "hygon": "PYTORCH_HIP_ALLOC_CONF",
    "ascend": "PYTORCH_NPU_ALLOC_CONF",
    "cambricon": "PYTORCH_MLU_ALLOC_CONF",
    "mthreads": "PYTORCH_MUSA_ALLOC_CONF",
}


def util_nature(vendor: str) -> str:
    """What the vendor's utilisation figure measures, for ``why`` lines."""
    if vendor == "ascend":
        return "the share of time the AI (cube) cores were busy, vector work not counted"
    return "a duty cycle (the share of time any kernel ran: one small kernel counts as busy)"


# --- formatting --------------------------------------------------------------------------------


def pct(value: float) -> str:
    return f"{value:.0f} %"


def gib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --- stalled ------------------------------------------------------------------------------

#: The collective library's debug and timeout settings, by vendor (NCCL's for the rest: AMD's
#: RCCL and most vendors' NCCL ports read the NCCL_* variables).
_COLLECTIVE_DEBUG: dict[str, tuple[str, str]] = {
    "ascend": (
        "HCCL: ASCEND_GLOBAL_LOG_LEVEL=1 (info) with ASCEND_SLOG_PRINT_TO_STDOUT=1 logs which "
        "collective each rank entered",
        "HCCL_EXEC_TIMEOUT (seconds) and HCCL_CONNECT_TIMEOUT bound how long a collective may "
        "hang, and torch.distributed.init_process_group(timeout=...) the process group",
    ),
}
_NCCL_DEBUG = (
    "NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=COLL) logs which collective each rank entered: the "
    "rank that never entered the hung one is the culprit",
    "Make a hung collective fail instead of hanging: torch.distributed.init_process_group("
    "timeout=timedelta(minutes=10)) with TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (the collective "
    "timeout)",
)


def duration(seconds: float) -> str:
    """``45 s``, ``3 min 20 s``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def stall_span(seconds: float, open_start: bool) -> str:
    """How long, and whether it may be longer (it reaches back to the oldest poll held)."""
    return f"at least {duration(seconds)}" if open_start else duration(seconds)


def stalled_advice(vendor: str, trainer_pids: tuple[object, ...],
                   states: tuple[str, ...]) -> list[str]:
    """What to try on a stalled job: see where it waits, then make hangs fail loudly."""
    pids = [str(p) for p in trainer_pids if isinstance(p, int)]
    dump = (
        " and ".join(f"py-spy dump --pid {p}" for p in pids[:2]) if pids
        else "py-spy dump --pid <trainer PID>"
    )
    advice = [
        f"See where every thread waits: {dump} (add --native for C++ frames; a rank stuck "
        "in a collective, a lock, a queue.get() or a file write shows at once)"
    ]
    if "stopped" in states or "tracing-stop" in states:
        advice.insert(0, "The trainer is stopped (state T: Ctrl-Z, SIGSTOP or a debugger): "
                         "resume it with kill -CONT or fg")
    advice += list(_COLLECTIVE_DEBUG.get(vendor, _NCCL_DEBUG))
    advice.append(
        "A checkpoint or log write stuck on storage shows as a thread in write()/fsync() in "
        "the dump; a crashed peer rank leaves the others waiting until the timeout"
    )
    return advice
