"""What ``check`` says about what it was given: a bad flag with its own usage, a ``--tool`` that
cannot run and a ``--pid`` that does not exist, before any poll; the no-tool summary without the
list of places searched."""

from __future__ import annotations

import subprocess
import sys

from gpusat_tui.analysis.verdicts.probe_only import NO_TOOL_LINE
from gpusat_tui.commands.check import render_human
from gpusat_tui.commands.check_schema import CheckReport, CheckVerdict
from gpusat_tui.sources.polling.tool_discovery import missing_tool_message
from tests.fakes.tool import FakeBin
from tests.probe_helpers import REPO


def check(fakes: FakeBin, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpusat_tui", "check", *args], env=fakes.env(),
                          cwd=REPO, capture_output=True, text=True, timeout=60)


def test_an_unknown_flag_shows_check_s_usage(fake_bin: FakeBin) -> None:
    done = check(fake_bin, "--bogus")
    assert done.returncode == 2
    assert done.stderr.startswith("usage: gpusat-tui check "), done.stderr
    assert "gpusat-tui check: error: unrecognized arguments: --bogus" in done.stderr


def test_a_tool_that_cannot_run_is_a_usage_error(fake_bin: FakeBin) -> None:
    done = check(fake_bin, "--tool", "nvidia-smi=/nonexist/nvidia-smi")
    assert done.returncode == 2
    assert "--tool nvidia-smi=/nonexist/nvidia-smi: no such file" in done.stderr
    done = check(fake_bin, "--tool", "nvidia-smi=no-such-command-here")
    assert done.returncode == 2 and "no such command on PATH" in done.stderr


def test_a_pid_that_does_not_exist_is_said(fake_bin: FakeBin) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    done = check(fake_bin, "--pid", str(gone.pid), "--duration", "0.5")
    assert f"--pid {gone.pid}: no such process" in done.stderr, done.stderr


def test_the_no_tool_summary_does_not_repeat_the_places_searched() -> None:
    message = missing_tool_message({"nvidia-smi": ["PATH", "/usr/bin"],
                                    "hy-smi": ["PATH", "/opt/hyhal/bin"]})
    report = CheckReport(
        duration_s=3.0, samples=3, no_tool=True,
        job=CheckVerdict(kind="starving", cause="input-bound", why=[NO_TOOL_LINE, "data wait"]),
        notes=[NO_TOOL_LINE, *message.splitlines(), "a note of its own"],
    )
    text = render_human(report)
    assert "/opt/hyhal/bin" not in text and "nvidia-smi:" not in text, text
    assert "a note of its own" in text
    assert text.count(NO_TOOL_LINE.capitalize()) == 1, text
