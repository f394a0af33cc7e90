"""The probe file layout: the interface between a probe (inside a trainer) and a monitor.

A trainer started with an older probe may be read by a newer monitor and the other way round,
so the layout is versioned like `check --json`: fields are only ever added (with the same
``LAYOUT_VERSION``); a rename, a removal or a change of meaning bumps it, and a monitor refuses
a version newer than it knows with a note instead of guessing.

One file per trainer process, ``probe-<pid>.json`` in the probe folder, one JSON object
(UTF-8, at most `MAX_BYTES`), always replaced whole (written to ``.probe-<pid>.json.tmp``,
`tmp_name`, then ``os.replace``-d), so a reader never sees half of one; a monitor reads only
``probe-*.json``. Both are removed when the trainer exits. Standard library only: the probe
imports this inside the user's process.
"""

from __future__ import annotations

import os
import stat
import tempfile

#: Version of the file layout below. Bump on any incompatible change.
LAYOUT_VERSION = 1

#: A monitor reads no more than this; a real probe file is well under 2 KiB.
MAX_BYTES = 64 * 1024

FILE_PREFIX = "probe-"
FILE_SUFFIX = ".json"

#: Every key a layout-1 file carries (values may be null where unknown). Pinned by tests.
LAYOUT_1_KEYS = (
    "layout",          # int: LAYOUT_VERSION of the writer
    "pid",             # int: the trainer's PID (in its own PID namespace)
    "start_ticks",     # int|null: field 22 of /proc/<pid>/stat, so a reused PID is told apart
    "uid",             # int|null: the writer's uid
    "t",               # float: unix time of this publication
    "elapsed_s",       # float: seconds since the probe started measuring (first batch/step)
    "interval_s",      # float: seconds covered by the interval figures below
    "batches",         # int: cumulative batches returned by DataLoader iterators
    "steps",           # int: cumulative optimizer steps (torch's global step post hook)
    "data_wait_s",     # float: cumulative seconds blocked in the DataLoader iterator's __next__
    "data_wait_pct",   # float|null: share of the last interval blocked there, percent
    "step_ms",         # float|null: wall ms per step, from the newest step back to the newest
                       #  step of the last publication that had one (or per batch)
    "step_source",     # "optimizer"|"callback"|"batch"|null: what step_ms counted ("callback":
                       #  Keras's train-batch-end callbacks)
    "batches_per_s",   # float|null: likewise, batches over the time between newest batches
    "samples_per_s",   # float|null: batches_per_s x batch_size
    "batch_size",      # int|null: first dimension of the first tensor of a recent batch
    "rank",            # int|null: RANK (or OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID)
    "local_rank",      # int|null: LOCAL_RANK (or the MPI/SLURM equivalents)
    "world_size",      # int|null: WORLD_SIZE (or the MPI/SLURM equivalents)
    "device_type",     # str|null: "cuda", "npu", "mlu", "musa"... as the framework names it
    "device_index",    # int|null: the device the trainer uses, numbered as the trainer sees them
    "hip",             # bool: torch is a ROCm build ("cuda" devices are AMD/Hygon cards)
    "env",             # {name: value}: the trainer's *_VISIBLE_DEVICES and CUDA_DEVICE_ORDER
    "alloc",           # {allocated_bytes, reserved_bytes, inactive_split_bytes, alloc_retries,
                       #  ooms}|null: the device allocator, read at most once a second
    "cmd",             # str: base name of the trainer's argv[0], at most 64 characters
    # Added (same layout): the times of the newest batch and step, so that a reader takes
    # step time and rates from cumulative figures over any span (a step longer than the
    # publishing interval reads its own length).
    "last_batch_s",    # float|null: elapsed_s when the newest batch was returned
    "last_step_s",     # float|null: elapsed_s when the newest optimizer step ended
    "num_workers",     # int|null: worker processes of the DataLoader being iterated, as its
                       #  iterator says (so "set num_workers > 0" is never said to a job
                       #  that runs workers the monitor could not see)
    "framework",       # str|null: whose hooks measured: "torch", "paddle", "grain",
                       #  "tf.data", "keras", "mindspore"
    "data_wait_note",  # str|null: why the data wait is not measured in this process (then
                       #  data_wait_pct is null and the monitor quotes this instead): Keras
                       #  fit, data sink mode, a DALI/Ray Data pipeline, a rank fed by broadcast
    # Added (same layout: a reader of the fields above reads these files unchanged): the
    # training thread's stack, sampled from the probe's thread (`sampler`). Counts are
    # cumulative like data_wait_s, so a reader takes any window's shares from two files.
    "stack_hz",        # float|null: samples a second (null: sampling off, GPUSAT_PROBE_STACK_HZ=0)
    "stack_samples",   # int: cumulative samples of the training thread
    "phase_samples",   # {phase: int}: cumulative samples per phase (`phases.PHASES`; a
                       #  phase never sampled is left out): data, forward, backward, optimizer,
                       #  collective, sync, checkpoint, evaluation, compiled, other
    "user_lines",      # [[file, line, function, int]]: cumulative samples whose innermost
                       #  frame of the user's own code (not the standard library nor an
                       #  installed package) is that line; the most sampled, at most 24
    "stack_phase",     # str|null: the phase of the newest sample
    "stack_where",     # str|null: the framework function that decided it, as
                       #  "torch.distributed.all_reduce" (null: no framework frame did)
    "stack_line",      # [file, line, function]|null: the newest sample's innermost user frame
    "stack_still_s",   # float|null: seconds the training thread's stack (every frame's code
                       #  and line) has been the same, up to the newest sample
    "stack_sig",       # str|null: 8 hex digits naming the newest stack, equal on every rank
                       #  stopped at the same place
    "stack",           # [[module, function, file base name, line]]: the newest stack's
                       #  innermost 32 frames, outermost first
)

ALLOC_KEYS = ("allocated_bytes", "reserved_bytes", "inactive_split_bytes", "alloc_retries", "ooms")

#: Environment a trainer's device numbering depends on; published so that the monitor maps the
#: trainer's device index to a physical card with the trainer's own view, not the monitor's.
VISIBLE_DEVICE_VARS = (
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "ASCEND_RT_VISIBLE_DEVICES", "MLU_VISIBLE_DEVICES", "MUSA_VISIBLE_DEVICES",
    "XPU_VISIBLE_DEVICES",
)

ENV_DIR = "GPUSAT_PROBE_DIR"


def file_name(pid: int) -> str:
    return f"{FILE_PREFIX}{pid}{FILE_SUFFIX}"


def tmp_name(pid: int) -> str:
    """The temporary file a publication is written to before it is renamed."""
    return f".{file_name(pid)}.tmp"


def default_dirs() -> list[str]:
    """Where probes publish, first choice first: ``$GPUSAT_PROBE_DIR`` alone when it is set,
    else ``$XDG_RUNTIME_DIR/gpusat-tui`` and ``<tempdir>/gpusat-tui-<uid>``.

    A probe writes to the first; a monitor reads all of them (a trainer started from another
    shell may have had no ``XDG_RUNTIME_DIR``). Setting ``GPUSAT_PROBE_DIR`` pins both sides to
    one folder (and keeps test runs apart from each other).
    """
    explicit = os.environ.get(ENV_DIR)
    if explicit:
        return [explicit]
    dirs: list[str] = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        dirs.append(os.path.join(runtime, "gpusat-tui"))
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    dirs.append(os.path.join(tempfile.gettempdir(), f"gpusat-tui-{uid}"))
    return dirs


def prepare_dir(folder: str) -> str:
    """Make the probe folder (0700) if missing and check that it is ours and writable.

    Raises OSError with a plain reason otherwise: a folder of another user under /tmp could be
    a trap, and one that is not writable means no probe (said once, never retried).
    """
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise OSError(f"{folder} is not a plain folder")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise OSError(f"{folder} belongs to another user")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OSError(f"{folder} is not writable")
    return folder
