"""Nothing from a tool, a process or a recording reaches the terminal raw.

One sanitiser (`gpusat_tui.text.clean`) for the dashboard, ``check``, ``report`` and stderr;
JSON keeps the exact strings. Hostile names: OSC (title), CSI (clear screen, colours), RIS,
8-bit CSI, BEL, newlines, bidi overrides, Rich markup.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import gpusat_tui.text
from gpusat_tui.collectors import all_specs
from gpusat_tui.commands.check import render_human
from gpusat_tui.commands.check_schema import CheckCard, CheckError, CheckProcess, CheckReport
from gpusat_tui.commands.report import analyse
from gpusat_tui.commands.report_text import render_text
from gpusat_tui.model import CardReading, Frame, ProcessSample, RecordingHeader, ToolError
from gpusat_tui.output import say
from gpusat_tui.text import clean, clean_block
from gpusat_tui.ui import text as ui_text
from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin, Step
from tests.recording_helpers import write_recording

REPO = Path(__file__).resolve().parents[1]

TITLE = "\x1b]0;owned\x07"
CLEAR = "\x1b[2J\x1b[H"
RED = "\x1b[31m"
RESET = "\x1bc"
CSI8 = "\x9b2J"
HOSTILE = f"{TITLE}{CLEAR}{RED}evil{RESET}{CSI8}\nrow2\r\x07[bold]x[/]\u202eabc\u2028z"
NAMES = [HOSTILE, TITLE + "t", "a\nb", "[red]x[/red]", "\x1b]52;c;ZXZpbA==\x1b\\paste"]


def assert_inert(text: str) -> None:
    """No escape, no control but newline, no bidi override or line separator."""
    bad = [ch for ch in text if (ord(ch) < 32 and ch != "\n") or 0x7F <= ord(ch) <= 0x9F
           or ch in "\u202e\u2028\u2029"]
    assert not bad, f"raw control characters {bad!r} in {text!r}"


@pytest.mark.parametrize("name", NAMES)
def test_clean_makes_one_inert_line(name: str) -> None:
    out = clean(name)
    assert_inert(out)
    assert "\n" not in out
    assert "owned" not in out and "2J" not in out


def test_clean_keeps_ordinary_text_and_markup_literally() -> None:
    assert clean("NVIDIA H100 80GB HBM3") == "NVIDIA H100 80GB HBM3"
    assert clean("[bold]x[/]") == "[bold]x[/]"  # plain text: markup is just characters
    assert clean("python train.py\tx") == "python train.py x"
    assert clean("昇腾 910B") == "昇腾 910B"
    assert clean("x" * 300, 10) == "x" * 9 + "…"


def test_clean_block_keeps_lines_and_nothing_else() -> None:
    out = clean_block(f"line one {RED}red\nline two {TITLE}\r\n")
    assert out == "line one red\nline two \n"


def test_there_is_one_sanitiser() -> None:
    assert ui_text.clean is gpusat_tui.text.clean
    from gpusat_tui.collectors import base

    assert base.strip_ansi("a\x1b]0;t\x07b\x1b[1mc") == "abc"


def test_say_writes_one_clean_line(capsys: pytest.CaptureFixture[str]) -> None:
    say("gpusat-tui", f"cannot open {HOSTILE}.jsonl")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gpusat-tui: cannot open ")
    assert_inert(err)


def _hostile_report() -> CheckReport:
    return CheckReport(
        duration_s=1.0, samples=3,
        cards=[CheckCard(id="nvidia:0", vendor="nvidia", index=0, name=HOSTILE)],
        processes=[CheckProcess(pid=7, role="trainer", name=name) for name in NAMES],
        errors=[CheckError(tool="nvidia-smi", message=f"failed: {HOSTILE}", count=2)],
        notes=[f"PID 7 listed by the tool is {HOSTILE}"],
    )


def test_check_text_is_inert_and_rows_stay_rows() -> None:
    out = render_human(_hostile_report())
    assert_inert(out)
    lines = out.splitlines()
    proc_rows = [ln for ln in lines if ln.startswith("        7 trainer")]
    assert len(proc_rows) == len(NAMES)  # a newline in a name never splits its row
    assert not any(ln.startswith("row2") for ln in lines)


def test_check_json_keeps_the_exact_strings() -> None:
    data = json.loads(_hostile_report().model_dump_json())
    assert data["cards"][0]["name"] == HOSTILE
    assert [p["name"] for p in data["processes"]] == NAMES


def _hostile_recording(tmp_path: Path) -> Path:
    hdr = RecordingHeader(gpusat_tui_version=f"1{TITLE}", host=f"host{CLEAR}",
                          tools={f"evil{RED}": f"1.0{TITLE}"}, interval_s=1.0,
                          started_at=1.7e9)
    frames = [
        Frame(
            t=1.7e9 + i, seq=i,
            cards=[CardReading(vendor="nvidia", index=0, name=HOSTILE, util_pct=20.0,
                               power_w=50.0, power_cap_w=700.0, mem_used_mib=70000.0,
                               mem_total_mib=81920.0)],
            processes=[ProcessSample(pid=9, role="trainer", name=HOSTILE, cpu_pct=5.0)],
            errors=[ToolError(tool="nvidia-smi", message=f"boom {HOSTILE}", kind="exit")],
            notes=[f"note {HOSTILE}"],
        )
        for i in range(12)
    ]
    return write_recording(tmp_path / f"run{TITLE}.jsonl", frames, hdr)


def test_report_text_is_inert(tmp_path: Path) -> None:
    path = _hostile_recording(tmp_path)
    out = render_text(analyse(path), width=100, color=False)
    assert_inert(out)
    assert "owned" not in out
    assert "evil" in out and "[bold]x[/]" in out  # shown, harmlessly


def test_report_json_keeps_the_exact_strings(tmp_path: Path) -> None:
    path = _hostile_recording(tmp_path)
    run = subprocess.run([sys.executable, "-m", "gpusat_tui", "report", "--json", str(path)],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["cards"][0]["name"] == HOSTILE
    assert data["header"]["host"] == f"host{CLEAR}"


def test_report_error_on_stderr_is_inert(tmp_path: Path) -> None:
    missing = tmp_path / f"no{TITLE}{CLEAR}.jsonl"
    run = subprocess.run([sys.executable, "-m", "gpusat_tui", "report", str(missing)],
                         cwd=REPO, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1
    assert_inert(run.stderr)


def test_check_end_to_end_with_a_hostile_tool_and_process(fake_bin: FakeBin) -> None:
    """A real tool failing with escape codes on stderr, a card named with them, and a real
    trainer process whose name (comm) holds them: plain ``check`` prints none of it raw."""
    spec = next(s for s in all_specs() if s.tool == "nvidia-smi")
    evil_name = f"{RED}H100{TITLE}[bold]x[/]"
    fake_bin.add_for_spec(spec, [
        Step(cards=(FakeCard(0, name=evil_name, util_pct=50.0),)),
        Step(mode="fail", stderr=f"{TITLE}{CLEAR}driver says no"),
        Step(cards=(FakeCard(0, name=evil_name, util_pct=50.0),)),
    ])
    trainer = subprocess.Popen(
        [sys.executable, "-c",
         "import sys,time\n"
         "open('/proc/self/comm','w').write('\\x1b]0;pwn\\x07\\x1b[2J')\n"
         "print('ok', flush=True)\ntime.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert trainer.stdout is not None and trainer.stdout.readline() == "ok\n"
        base = [sys.executable, "-m", "gpusat_tui", "check", "--duration", "0.8",
                "--interval", "0.2", "--pid", str(trainer.pid)]
        text = subprocess.run(base, env=fake_bin.env(), cwd=REPO, capture_output=True,
                              text=True, timeout=60)
        as_json = subprocess.run([*base, "--json"], env=fake_bin.env(), cwd=REPO,
                                 capture_output=True, text=True, timeout=60)
    finally:
        trainer.kill()
        trainer.wait()
    assert text.returncode == 0, text.stderr
    assert_inert(text.stdout)
    assert_inert(text.stderr)
    assert "driver says no" in text.stdout and "H100" in text.stdout  # shown, harmlessly
    assert str(trainer.pid) in text.stdout
    data = json.loads(as_json.stdout)
    assert data["cards"][0]["name"] == evil_name
    names = [p["name"] for p in data["processes"] if p["pid"] == trainer.pid]
    assert names and "\x1b" in names[0]  # the exact comm, escaped by JSON itself


def test_dashboard_text_uses_the_same_sanitiser() -> None:
    shown = ui_text.literal(HOSTILE)
    assert shown.plain == clean(HOSTILE)
    assert_inert(shown.plain)

