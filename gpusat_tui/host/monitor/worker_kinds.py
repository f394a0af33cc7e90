"""Which of a trainer's child processes are its data-loading workers, by what they are.

torch names its DataLoader workers ``pt_data_worker``, but nothing else does: torchdata's
``StatefulDataLoader`` workers, PaddlePaddle's, MindSpore's and Grain's keep the trainer's name
(``python``, or the script's). What they all share is how they are made: Python's
``multiprocessing`` starts them, so each is either a fork of the trainer (the same command
line), a ``spawn`` child (``multiprocessing.spawn ... spawn_main``) or a child of the
``forkserver`` the trainer started. That is what is looked at here, on the trainer's
descendants only (a plain program with a process pool is never taken for a trainer by it).

What it costs: one ``cmdline`` read per new child of a trainer (cached by PID and start time).
What it cannot tell: any other process pool the trainer forks (``torch.compile``'s forked
compile workers, a ``multiprocessing.Pool`` of the user's) counts as workers too; the known
helpers (resource tracker, the forkserver itself, inductor's subprocess pool) do not. Pure.
"""

from __future__ import annotations

__all__ = ["WORKER_NAMES", "child_kind"]

#: Process titles that name a data-loading worker wherever it sits (torch sets the first).
WORKER_NAMES = frozenset({"pt_data_worker"})

#: Command-line markers of helper processes that ``multiprocessing`` or a framework starts
#: beside the workers and that load no data.
HELPER_MARKERS = (
    "multiprocessing.resource_tracker",
    "multiprocessing.semaphore_tracker",
    "compile_worker",  # torch inductor's subprocess compile pool
)

FORKSERVER_MARKER = "multiprocessing.forkserver"
SPAWN_MARKERS = ("multiprocessing.spawn", "spawn_main")


def child_kind(
    name: str, cmdline: str, trainer_cmdline: str, parent_is_trainer: bool
) -> str | None:
    """What a descendant of a trainer is: ``"worker"``, ``"forkserver"`` (look below it),
    or None (a process that loads no data for it, or one we cannot tell).

    ``cmdline`` is the child's, NUL bytes as spaces; ``parent_is_trainer`` says whether its
    parent is the trainer itself (else a forkserver under it).
    """
    if name in WORKER_NAMES:
        return "worker"
    if not cmdline:
        return None  # unreadable or a kernel thread: say nothing rather than guess
    if any(marker in cmdline for marker in HELPER_MARKERS):
        return None
    if FORKSERVER_MARKER in cmdline:
        # The forkserver is the trainer's child; what it forks (the workers) keeps its
        # command line.
        return "forkserver" if parent_is_trainer else "worker"
    if any(marker in cmdline for marker in SPAWN_MARKERS):
        return "worker"
    if parent_is_trainer and trainer_cmdline and cmdline == trainer_cmdline:
        return "worker"  # a fork of the trainer (multiprocessing's default start on Linux)
    return None
