"""Front ends and their output: full and closed stdout, readers that leave, Ctrl-C, bad flags.

Real ``/dev/full``, real closed descriptors, real pipes and real signals to real processes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpusat_tui.cli import tool_keys
from gpusat_tui.collectors import all_specs
from tests.fakes.tool import FakeBin, Step
from tests.recording_helpers import rich_frame, write_recording
from tests.scenarios import SCENARIOS

REPO = Path(__file__).resolve().parents[2]
PY = [sys.executable, "-m", "gpusat_tui"]


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    return write_recording(tmp_path / "run.jsonl", [rich_frame(i) for i in range(40)])


def _fake_tool(fake_bin: FakeBin) -> None:
    scenario = SCENARIOS["saturated_steady"]
    spec = next(s for s in all_specs() if s.tool == scenario.tool)
    fake_bin.add_for_spec(
        spec, [Step(cards=tuple(scenario.cards(k))) for k in range(30)]
    )


def _run(args: list[str], *, stdout: object, env: dict[str, str] | None = None,
         pass_fds: tuple[int, ...] = (), preexec: object = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*PY, *args], stdout=stdout, stderr=subprocess.PIPE, cwd=REPO, env=env, text=True,
        timeout=60, preexec_fn=preexec,  # type: ignore[arg-type]
    )


# -- /dev/full --------------------------------------------------------------------------------


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_report_to_dev_full_fails_with_one_line(recording: Path, json_flag: list[str]) -> None:
    with open("/dev/full", "w") as full:
        run = _run(["report", str(recording), *json_flag], stdout=full)
    assert run.returncode == 74
    assert run.stderr.strip().splitlines() == [
        "gpusat-tui: cannot write the output: No space left on device"
    ]


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_check_to_dev_full_fails_with_one_line(fake_bin: FakeBin, json_flag: list[str]) -> None:
    _fake_tool(fake_bin)
    with open("/dev/full", "w") as full:
        run = _run(["check", "--duration", "0.3", "--interval", "0.1", *json_flag],
                   stdout=full, env=fake_bin.env())
    assert run.returncode == 74
    assert run.stderr.strip().splitlines() == [
        "gpusat-tui: cannot write the output: No space left on device"
    ]


# -- closed stdout ------------------------------------------------------------------------------


def _close_stdout() -> None:
    os.close(1)


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_report_with_stdout_closed(recording: Path, json_flag: list[str]) -> None:
    run = _run(["report", str(recording), *json_flag], stdout=None, preexec=_close_stdout)
    assert run.returncode == 74
    assert run.stderr.strip().splitlines() == [
        "gpusat-tui: cannot write the output: stdout is closed"
    ]


def test_check_with_stdout_closed_still_records(fake_bin: FakeBin, tmp_path: Path) -> None:
    """fd 1 closed: the recording must not become fd 1 (a print would land in it)."""
    _fake_tool(fake_bin)
    out = tmp_path / "rec.jsonl"
    run = _run(["check", "--duration", "1", "--interval", "0.1", "--record", str(out)],
               stdout=None, env=fake_bin.env(), preexec=_close_stdout)
    assert run.returncode == 74
    assert "stdout is closed" in run.stderr
    from gpusat_tui.sources.recording.reader import read_recording

    _, reader = read_recording(out)
    # Every line is a frame: a print that landed in the file would be a line skipped. (How
    # many polls fit in the second depends on the machine's load: at least one.)
    assert len(list(reader)) >= 1 and reader.skipped == 0


# -- readers that leave --------------------------------------------------------------------------


def test_report_into_head_is_quiet(recording: Path) -> None:
    """``report | head -1``: a real pipe whose reader leaves after one line."""
    producer = subprocess.Popen(
        [*PY, "report", str(recording), "--width", "200"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, cwd=REPO,
    )
    head = subprocess.run(["head", "-1"], stdin=producer.stdout, capture_output=True, timeout=60)
    assert producer.stdout is not None
    producer.stdout.close()
    _, err = producer.communicate(timeout=60)
    assert head.stdout.startswith(b"gpusat-tui report: run.jsonl")
    assert err == b""  # no "Exception ignored ... BrokenPipeError"
    assert producer.returncode in (0, 141)  # 0 if it all fit in the pipe before head left


def test_report_into_a_closed_pipe_is_141_and_quiet(recording: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read
    try:
        proc = subprocess.run([*PY, "report", str(recording), "--json"], stdout=write_end,
                              stderr=subprocess.PIPE, cwd=REPO, timeout=60)
    finally:
        os.close(write_end)
    assert proc.returncode == 141
    assert proc.stderr == b""


# -- Ctrl-C anywhere --------------------------------------------------------------------------


def _wait_until_open(pid: int, path: Path, timeout: float = 30.0) -> None:
    """Until process ``pid`` has ``path`` open (a signal before Python's own handler is
    installed would just kill it: that is the interpreter's start-up, not ours)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                        return
                except OSError:
                    continue
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"process {pid} never opened {path}")


def test_ctrl_c_while_report_reads_a_slow_file_is_130_without_traceback(tmp_path: Path) -> None:
    """A real SIGINT to ``report`` while it reads through a 4 GiB line of zeros (a sparse file:
    no disk used), skipping it in bounded chunks."""
    path = write_recording(tmp_path / "big.jsonl", [])
    with path.open("ab") as fh:
        fh.truncate(path.stat().st_size + (4 << 30))
    proc = subprocess.Popen([*PY, "report", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=REPO)
    _wait_until_open(proc.pid, path)  # past start-up and imports: reading
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    if proc.returncode == 1 and b"no frames" in err:
        pytest.skip("report read 4 GiB before the signal came (machine too fast for this test)")
    assert proc.returncode == 130, err
    assert err == b"" and out == b""


def test_ctrl_c_in_check_is_130_without_traceback(fake_bin: FakeBin) -> None:
    _fake_tool(fake_bin)
    proc = subprocess.Popen(
        [*PY, "check", "--duration", "30", "--interval", "0.2"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, cwd=REPO, env=fake_bin.env(),
    )
    tool = next(iter(fake_bin.tools.values()))
    deadline = time.monotonic() + 30
    while tool.calls() < 2:  # polling has begun: the report will have something in it
        assert time.monotonic() < deadline and proc.poll() is None, "check never polled"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"Traceback" not in err
    assert out.startswith(b"gpusat-tui check:")  # what was gathered is still reported


def test_main_turns_keyboard_interrupt_into_130(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from gpusat_tui import cli

    def interrupted(argv: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_main", interrupted)
    assert cli.main(["report", "x"]) == 130
    assert capsys.readouterr().err == ""


# -- --tool keys ------------------------------------------------------------------------------


def test_unknown_tool_key_is_a_usage_error_listing_the_valid_names() -> None:
    run = subprocess.run([*PY, "check", "--tool", "nosuchvendor=/bin/true"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "'nosuchvendor' is neither a vendor nor a tool" in run.stderr
    keys = tool_keys()
    for name in (*keys["vendors"], *keys["tools"]):
        assert name in run.stderr
    assert "nvidia" in keys["vendors"] and "hy-smi" in keys["tools"]
    assert "Traceback" not in run.stderr


def test_known_tool_keys_are_accepted(fake_bin: FakeBin) -> None:
    _fake_tool(fake_bin)
    exe = str(fake_bin.dir / "nvidia-smi")
    for key in ("nvidia", "nvidia-smi"):
        run = _run(["check", "--json", "--duration", "0.2", "--interval", "0.1", "--tool",
                    f"{key}={exe}"], stdout=subprocess.PIPE, env=fake_bin.env())
        assert run.returncode == 0, run.stderr


def test_force_without_record_is_a_usage_error() -> None:
    run = subprocess.run([*PY, "check", "--force"], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and "--record" in run.stderr


def test_a_terminal_that_cannot_encode_the_report_still_gets_it(recording: Path) -> None:
    env = {**os.environ, "PYTHONIOENCODING": "latin-1"}
    run = subprocess.run([*PY, "report", str(recording)], cwd=REPO, env=env,
                         capture_output=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(b"gpusat-tui report: run.jsonl ? ")  # "—" could not be
    assert run.stderr == b""


@pytest.mark.parametrize("flag", ["--interval", "--duration"])
@pytest.mark.parametrize("value", ["inf", "nan", "0", "-1"])
def test_figures_on_the_command_line_must_be_finite_and_positive(flag: str, value: str) -> None:
    run = subprocess.run([*PY, "check", flag, value], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and "finite number > 0" in run.stderr


def test_a_multi_line_message_keeps_its_lines_cleaned(capsys: pytest.CaptureFixture[str]) -> None:
    from gpusat_tui.output import say

    say("gpusat-tui check", "No tool found. Searched:\n  hy-smi: /opt/\x1b]0;x\x07bin", lines=True)
    assert capsys.readouterr().err == (
        "gpusat-tui check: No tool found. Searched:\n  hy-smi: /opt/bin\n"
    )
