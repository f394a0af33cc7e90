"""Shared test fixtures."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.fakes.tool import FakeBin


@pytest.fixture(autouse=True)
def private_probe_dir(tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's probe folder (``GPUSAT_PROBE_DIR``, read by subprocesses too): probe files
    of jobs elsewhere on this machine never reach a test's frames."""
    folder = tmp_path_factory.mktemp("probes")
    folder.chmod(0o700)
    monkeypatch.setenv("GPUSAT_PROBE_DIR", str(folder))
    return folder


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeBin]:
    """A bin dir for fake tools; PATH (here and in `fake_bin.env()`) holds only it + /bin.

    No ``GPUSAT_TOOL_*`` override leaks in from the caller's environment. On teardown any
    process still running from the dir is killed (and the test that leaked it should fail on
    its own assertion first).
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fakes = FakeBin(bin_dir)
    monkeypatch.setenv("PATH", fakes.path)
    for name in [k for k in os.environ if k.startswith("GPUSAT_TOOL_")]:
        monkeypatch.delenv(name)
    yield fakes
    for proc in leftover_processes(bin_dir):
        with contextlib.suppress(psutil.Error):
            proc.kill()


def leftover_processes(folder: Path, grace: float = 0.0) -> list[psutil.Process]:
    """Live processes whose command line mentions ``folder`` (a fake tool or its sleep).

    Zombies do not count: they are dead, and a grandchild's zombie is init's to reap (ours are
    checked by `zombie_children`). ``grace``: a SIGKILLed process takes a moment to be gone,
    so look again for up to that many seconds before reporting.
    """
    marker = str(folder)
    deadline = time.monotonic() + grace
    while True:
        found: list[psutil.Process] = []
        for proc in psutil.process_iter(["cmdline", "status"]):
            try:
                cmdline = " ".join(proc.info["cmdline"] or [])
                alive = proc.info["status"] != psutil.STATUS_ZOMBIE
            except psutil.Error:
                continue
            if marker in cmdline and alive:
                found.append(proc)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.02)


def zombie_children() -> list[psutil.Process]:
    """Children of this test process that exited and were never reaped."""
    zombies: list[psutil.Process] = []
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.status() == psutil.STATUS_ZOMBIE:
                zombies.append(child)
    return zombies
