"""``gpusat-tui run [--] CMD ARGS...``: exec CMD with the probe turned on in its Python processes.

An exec, not a wrapper: CMD replaces this process, so its stdout, stderr, TTY, signals and
exit status are its own and there is no extra process between a shell or a scheduler and the
job. The probe travels through the environment: the probe's ``boot`` folder goes first on
``PYTHONPATH`` (its ``sitecustomize`` enables the probe and chain-loads any ``sitecustomize`` it
shadows), so every Python process CMD starts (torchrun's ranks, spawn and forkserver children)
loads it. Costs: interpreters run with ``-I``/``-E`` ignore ``PYTHONPATH`` and get no probe.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from gpusat_tui.probe.layout import ENV_DIR, default_dirs, prepare_dir
from gpusat_tui.probe.state import ENV_ENABLE

BOOT_DIR = Path(__file__).resolve().parent.parent / "probe" / "boot"


def probe_env(environ: dict[str, str]) -> tuple[dict[str, str], str | None]:
    """The environment CMD gets, and the reason the probe is off (None when it is on)."""
    env = dict(environ)
    if env.get(ENV_ENABLE, "1").strip().lower() in ("0", "off", "no", "false"):
        return env, f"{ENV_ENABLE}={env[ENV_ENABLE]}"
    try:
        folder = prepare_dir(default_dirs()[0])
    except OSError as exc:
        return env, f"the probe cannot publish ({exc})"
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BOOT_DIR) + (os.pathsep + old if old else "")
    env[ENV_ENABLE] = "1"
    env[ENV_DIR] = folder  # every rank and child publishes in the same folder
    return env, None


def run_command(command: Sequence[str], verbose: bool = False) -> int:
    """Exec ``command``; returns only when it could not be started (127/126, as shells do)."""
    cmd = list(command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        sys.stderr.write("gpusat-tui run: no command given (gpusat-tui run -- python train.py)\n")
        return 2
    env, off = probe_env(dict(os.environ))
    if off is not None and (verbose or not off.startswith(ENV_ENABLE)):
        sys.stderr.write(f"gpusat-tui run: running without the probe: {off}\n")
    elif verbose:
        sys.stderr.write(
            f"gpusat-tui run: exec {cmd[0]}; the probe is on in every Python process it "
            f"starts, publishing in {env[ENV_DIR]}\n"
        )
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvpe(cmd[0], cmd, env)
    except FileNotFoundError:
        sys.stderr.write(f"gpusat-tui run: {cmd[0]}: command not found\n")
        return 127
    except OSError as exc:
        sys.stderr.write(f"gpusat-tui run: {cmd[0]}: {exc.strerror or exc}\n")
        return 126
    return 0  # pragma: no cover - execvpe does not return
