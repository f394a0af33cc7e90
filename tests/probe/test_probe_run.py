"""``gpusat-tui run``: an exec with the probe in the environment, and nothing else."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.probe_helpers import REPO, job_env, run_argv

MODULES = (
    "import json, sys; print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
    "('pydantic', 'psutil', 'gpusat_tui', '_gpusat_tui_probe', 'torch', 'textual'))))"
)


def run(probe_dir: Path, *cmd: str, extra: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(run_argv(*cmd), env=job_env(probe_dir, extra), capture_output=True,
                          text=True, timeout=60, cwd=REPO)


def test_exit_status_and_output_are_the_commands_own(private_probe_dir: Path) -> None:
    done = run(private_probe_dir, sys.executable, "-c", "print('hi'); raise SystemExit(3)")
    assert (done.returncode, done.stdout, done.stderr) == (3, "hi\n", "")


def test_run_is_an_exec_not_a_wrapper(private_probe_dir: Path) -> None:
    proc = subprocess.Popen(
        run_argv(sys.executable, "-c", "import os; print(os.getpid())"),
        env=job_env(private_probe_dir), stdout=subprocess.PIPE, text=True, cwd=REPO,
    )
    out, _ = proc.communicate(timeout=60)
    assert int(out) == proc.pid


def test_sigint_reaches_the_job(private_probe_dir: Path) -> None:
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGINT, lambda *a: (print('got SIGINT', flush=True), "
            "sys.exit(42)))\n"
            "print('up', flush=True)\n"
            "time.sleep(30)\n")
    proc = subprocess.Popen(run_argv(sys.executable, "-c", code), env=job_env(private_probe_dir),
                            stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert (proc.returncode, out) == (42, "got SIGINT\n")


def test_a_missing_command_is_127_and_no_command_is_2(private_probe_dir: Path) -> None:
    missing = run(private_probe_dir, "no-such-command-xyz")
    assert missing.returncode == 127 and "command not found" in missing.stderr
    none = subprocess.run([sys.executable, "-m", "gpusat_tui", "run", "--"], capture_output=True,
                          text=True, timeout=60, cwd=REPO)
    assert none.returncode == 2 and "no command given" in none.stderr


def test_the_probe_is_standard_library_only(private_probe_dir: Path) -> None:
    # Through `run`: the probe loads under its own name, nothing of gpusat-tui's dependencies.
    done = run(private_probe_dir, sys.executable, "-c", MODULES)
    assert json.loads(done.stdout) == [
        "_gpusat_tui_probe", "_gpusat_tui_probe.calls", "_gpusat_tui_probe.core",
        "_gpusat_tui_probe.layout",
        "_gpusat_tui_probe.phases", "_gpusat_tui_probe.publish", "_gpusat_tui_probe.sampler",
        "_gpusat_tui_probe.state", "_gpusat_tui_probe.timing"]
    # Imported in code: only the probe's own modules (and the package's tiny __init__).
    code = "import gpusat_tui.probe as p; p.enable(); " + MODULES.replace("import json, sys; ", "")
    done = subprocess.run([sys.executable, "-c", f"import json, sys; {code}"],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert json.loads(done.stdout) == [
        "gpusat_tui", "gpusat_tui.probe", "gpusat_tui.probe.calls", "gpusat_tui.probe.core",
        "gpusat_tui.probe.layout",
        "gpusat_tui.probe.phases", "gpusat_tui.probe.publish", "gpusat_tui.probe.sampler",
        "gpusat_tui.probe.state", "gpusat_tui.probe.timing"]


def test_a_python_process_that_does_not_train_publishes_nothing(private_probe_dir: Path) -> None:
    code = ("import os, threading, torch, torch.optim, torch.utils.data; "
            "print(threading.active_count(), os.listdir(os.environ['GPUSAT_PROBE_DIR']))")
    done = run(private_probe_dir, sys.executable, "-c", code)
    assert done.stdout == "1 []\n", done.stderr


def test_a_shadowed_sitecustomize_still_runs(private_probe_dir: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("MARK = 'theirs'\n")
    code = ("import sys, sitecustomize; "
            "print(sitecustomize.MARK, '_gpusat_tui_probe' in sys.modules)")
    done = run(private_probe_dir, sys.executable, "-c", code, extra={"PYTHONPATH": str(site)})
    assert done.stdout == "theirs True\n", done.stderr


def test_gpusat_probe_0_turns_it_off(private_probe_dir: Path) -> None:
    code = "import sys; print('_gpusat_tui_probe' in sys.modules)"
    done = run(private_probe_dir, sys.executable, "-c", code, extra={"GPUSAT_PROBE": "0"})
    assert (done.stdout, done.stderr) == ("False\n", "")


def test_an_unusable_folder_is_one_line_and_the_job_runs(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    bad = blocker / "probes"  # under a regular file: can never be made
    done = run(bad, sys.executable, "-c", "print('trained')")
    assert done.stdout == "trained\n" and done.returncode == 0
    assert done.stderr.count("\n") == 1 and "running without the probe" in done.stderr
    # enable() in code with the same folder: one line at the first batch, then nothing.
    code = ("import gpusat_tui.probe as p; p.enable()\n"
            "import torch\nfrom torch.utils.data import DataLoader\n"
            "for _ in range(2):\n    for b in DataLoader(list(range(8)), batch_size=2): pass\n"
            "print('trained')\n")
    env = job_env(bad)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    lines = [line for line in done.stderr.splitlines() if "gpusat-tui probe" in line]
    assert done.stdout == "trained\n" and len(lines) == 1 and "cannot publish" in lines[0]


def test_enable_is_idempotent_and_times_an_already_imported_torch(tmp_path: Path) -> None:
    code = ("import torch, time\nfrom torch.utils.data import DataLoader\n"
            "import gpusat_tui.probe as p\nassert p.enable() and p.enable()\n"
            "it = DataLoader(list(range(40)), batch_size=4)\n"
            "for b in it: time.sleep(0.01)\n"
            "print(p.snapshot()['batches'])\n")
    done = subprocess.run([sys.executable, "-c", code], env=job_env(tmp_path),
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.stdout == "10\n", done.stderr  # counted once per batch, not twice
    time.sleep(0)  # (the file went away with the process)
    assert not list(tmp_path.glob("probe-*"))
