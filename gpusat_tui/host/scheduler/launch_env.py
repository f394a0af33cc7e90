"""Whether a trainer belongs to a distributed job, from the variables its launcher set.

torchrun, ``mpirun`` and ``srun`` tell each rank its world size and rank through the
environment; the probe reads the same names inside the job (`gpusat_tui.probe.publish`). Read
from outside (``/proc/<pid>/environ``: the environment the process started with), they show a
rank whose peers are on other nodes, where no peer card is visible on this host. Pure: bytes in,
numbers out.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["RANK_VARS", "WORLD_SIZE_VARS", "parse_environ", "world_of"]

#: In the probe's order: torchrun, Open MPI, MPICH/Intel MPI (PMI), Slurm.
WORLD_SIZE_VARS = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")
RANK_VARS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID")

#: The most of an environment block that is read (a real one is a few KiB).
MAX_ENVIRON_BYTES = 256 * 1024


def parse_environ(data: bytes) -> dict[str, str]:
    """``/proc/<pid>/environ`` (NUL-separated ``NAME=value``) as a dict; odd entries skipped."""
    env: dict[str, str] = {}
    for entry in data[:MAX_ENVIRON_BYTES].split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name:
            env[name.decode("ascii", "replace")] = value.decode("utf-8", "replace")
    return env


def _first_int(env: Mapping[str, str], names: tuple[str, ...]) -> int | None:
    for name in names:
        text = env.get(name)
        if text is None:
            continue
        try:
            value = int(text.strip())
        except ValueError:
            continue
        if 0 <= value < 1 << 31:
            return value
    return None


def world_of(env: Mapping[str, str]) -> tuple[int | None, int | None]:
    """(world size, rank) the launcher gave this process; None for each one unset."""
    return _first_int(env, WORLD_SIZE_VARS), _first_int(env, RANK_VARS)
