"""``gpusat-tui check`` end to end: the real CLI in a subprocess against fake vendor tools.

Each test writes fake executables (tests/fakes/tool.py) that print real-format output whose
numbers follow a scenario, puts only them on PATH, runs ``python -m gpusat_tui check --json``,
and compares the JSON with figures computed from the scenario.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.collectors import all_specs
from gpusat_tui.collectors.base import ToolSpec, merge_cards
from gpusat_tui.commands.check import render_human
from gpusat_tui.commands.check_report import CheckBuilder, overall_verdict
from gpusat_tui.commands.check_schema import CheckReport
from gpusat_tui.model import Assessment, CardReading, Frame, ProcessSample, ToolError, Verdict
from tests.conftest import leftover_processes
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import hy_smi as hy_fmt
from tests.fakes.formats import intel_xpu_smi as intel_fmt
from tests.fakes.tool import FakeBin, Step, renderer_for

REPO = Path(__file__).resolve().parents[2]


def fc(index: int, util: float, used: float, power: float, temp: float) -> FakeCard:
    # 100000 MiB total and multiples of 1000 MiB used: every tool's VRAM % is a whole number.
    return FakeCard(index=index, name="Fake Card", util_pct=util, mem_used_mib=used,
                    mem_total_mib=100000.0, power_w=power, power_cap_w=300.0, temp_c=temp)


#: Two cards over three polls (the last repeats): every figure moves.
SCENARIO: list[list[FakeCard]] = [
    [fc(0, 10, 25000, 100, 40), fc(1, 90, 90000, 250, 70)],
    [fc(0, 50, 50000, 200, 50), fc(1, 80, 80000, 240, 72)],
    [fc(0, 30, 30000, 150, 45), fc(1, 70, 70000, 230, 71)],
]


def run_check(
    fakes: FakeBin, *args: str, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", *args],
        env=fakes.env(), capture_output=True, text=True, timeout=timeout, cwd=REPO,
    )


def check_json(fakes: FakeBin, *args: str) -> dict[str, Any]:
    result = run_check(fakes, "--json", *args)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result.stdout  # exactly one JSON object on stdout
    return json.loads(lines[0])  # type: ignore[no-any-return]


def stats(values: Sequence[float | None]) -> dict[str, float | None]:
    good = [v for v in values if v is not None]
    if not good:
        return {"mean": None, "min": None, "max": None, "last": None}
    return {"mean": sum(good) / len(good), "min": min(good), "max": max(good), "last": good[-1]}


#: Figures a tool never prints at all (so no fake can render them): tpu-info has no
#: temperature; a tt-smi snapshot has no utilisation and no device memory.
NOT_SHOWN: dict[str, set[str]] = {"tpu-info": {"temp_c"}, "tt-smi": {"util_pct", "mem_pct"}}


def exe_specs() -> list[ToolSpec]:
    return [s for s in all_specs() if s.reader is None]


#: Tools read only as a stream, or with no utilisation in any view: their end-to-end checks
#: are in test_check_streams.py.
STREAM_OR_INVENTORY_ONLY = {"tegrastats", "neuron-monitor", "neuron-ls"}


def call_specs() -> list[ToolSpec]:
    return [s for s in exe_specs() if s.tool not in STREAM_OR_INVENTORY_ONLY]


def spec_named(tool: str) -> ToolSpec:
    return next(s for s in all_specs() if s.tool == tool)


def shown_fields(spec: ToolSpec, cards: Sequence[FakeCard]) -> set[str]:
    """Figures this tool's output carries at all (from its own parsers, not from the source)."""
    render = renderer_for(spec)
    merged: list[CardReading] = []
    for query in spec.queries:
        if query.per_card:
            continue
        reading = query.parse(render(query.args, cards, ()))
        merged = reading.cards if not merged else merge_cards(merged, reading.cards)
    fields = ("util_pct", "mem_pct", "mem_used_mib", "mem_total_mib", "power_w", "power_cap_w",
              "temp_c")
    return {f for f in fields if all(getattr(c, f) is not None for c in merged)}


# --- every vendor ----------------------------------------------------------------------------


@pytest.mark.parametrize("spec", call_specs(), ids=lambda s: s.tool)
def test_check_json_gives_the_scenario_figures_for_every_vendor_tool(
    fake_bin: FakeBin, spec: ToolSpec
) -> None:
    fake_bin.add_for_spec(spec, SCENARIO)
    t0 = time.monotonic()
    report = check_json(fake_bin, "--duration", "1.5", "--interval", "0.5")
    wall = time.monotonic() - t0
    shown = shown_fields(spec, SCENARIO[0])
    # The minimum for every default view (power where the tool shows it at all).
    assert {"util_pct", "mem_pct", "temp_c"} - NOT_SHOWN.get(spec.tool, set()) <= shown
    assert report["schema_version"] == 1
    assert 2 <= report["samples"] <= 3
    assert 0.4 <= report["duration_s"] <= wall
    assert report["errors"] == []
    steps = [SCENARIO[min(i, len(SCENARIO) - 1)] for i in range(report["samples"])]
    assert [c["id"] for c in report["cards"]] == [f"{spec.vendor}:0", f"{spec.vendor}:1"]
    for n, card in enumerate(report["cards"]):
        assert (card["vendor"], card["index"]) == (spec.vendor, n)
        series = [step[n] for step in steps]

        def expect(field: str, values: list[float | None]) -> dict[str, float | None]:
            return stats(values) if field in shown else stats([])

        assert card["util_pct"] == expect("util_pct", [c.util_pct for c in series])
        assert card["mem_pct"] == pytest.approx(  # tpu-info prints GiB to 2 decimals
            expect("mem_pct", [100 * c.mem_used_mib / c.mem_total_mib for c in series]),
            rel=0.002,
        )
        assert card["mem_used_mib"] == pytest.approx(
            expect("mem_used_mib", [c.mem_used_mib for c in series]), rel=0.002
        )
        assert card["power_w"] == expect("power_w", [c.power_w for c in series])
        assert card["temp_c"] == expect("temp_c", [c.temp_c for c in series])
        assert card["mem_total_mib"] == (
            pytest.approx(100000.0, rel=0.002) if "mem_total_mib" in shown else None
        )
        assert card["power_cap_w"] == (300.0 if "power_cap_w" in shown else None)
        assert set(card["verdict"]) == {"kind", "cause", "why", "advice"}


# --- nothing found ---------------------------------------------------------------------------


def test_no_tool_exits_1_and_says_what_was_searched(fake_bin: FakeBin) -> None:
    result = run_check(fake_bin, "--json", "--duration", "1")
    assert result.returncode == 1
    # --json always prints its object: the error in it, the places searched in its notes.
    report = json.loads(result.stdout)
    assert [e["kind"] for e in report["errors"]] == ["no-tool"]
    assert any(note.startswith("nvidia-smi:") for note in report["notes"])
    err = result.stderr
    assert "No accelerator tool found" in err
    for spec in exe_specs():
        assert f"  {spec.tool}: ${spec.env_var}, PATH, {', '.join(spec.search_dirs)}" in err
    assert "--tool VENDOR=PATH" in err


def test_usage_error_exits_2(fake_bin: FakeBin) -> None:
    result = run_check(fake_bin, "--duration", "soon")
    assert result.returncode == 2 and "not a number" in result.stderr


# --- a tool that misbehaves ------------------------------------------------------------------


def test_hanging_tool_is_killed_each_poll_and_the_run_keeps_its_duration(
    fake_bin: FakeBin,
) -> None:
    spec = spec_named("hy-smi")
    fake_bin.add_for_spec(spec, [SCENARIO[0], Step(mode="hang")])
    t0 = time.monotonic()
    report = check_json(fake_bin, "--duration", "5", "--interval", "1")
    wall = time.monotonic() - t0
    assert wall < 9.0  # ~5 s of polls + interpreter start; the point is it doesn't hang
    assert report["samples"] == 5
    assert {"tool": "hy-smi", "message": "hy-smi did not answer within 1.0 s; killed",
            "count": 4, "kind": "timeout"} in report["errors"]
    card0 = report["cards"][0]
    # Only the first poll answered: its figures are the last good ones, never a stale copy.
    assert card0["util_pct"] == stats([10.0]) and card0["temp_c"] == stats([40.0])
    assert leftover_processes(fake_bin.dir, grace=1.0) == []


def test_exit_garbage_lost_card_and_refused_flag(fake_bin: FakeBin) -> None:
    spec = spec_named("hy-smi")
    first, lost = SCENARIO[0], [SCENARIO[2][0]]
    pids = next(q for q in spec.queries if q.name == "pids")
    fake_bin.add_for_spec(
        spec,
        [first, Step(mode="fail", exit_code=5, stderr="hy-smi: HCU driver not loaded"),
         Step(mode="garbage"), lost, lost],
        refuse=[pids.args],
    )
    report = check_json(fake_bin, "--duration", "2", "--interval", "0.4")
    assert report["samples"] == 5
    assert {(e["kind"], e["count"]) for e in report["errors"]} == {("exit", 1), ("parse", 1)}
    exit_err = next(e for e in report["errors"] if e["kind"] == "exit")
    assert exit_err["message"] == "hy-smi exited with status 5: hy-smi: HCU driver not loaded"
    ids = [c["id"] for c in report["cards"]]
    assert ids == ["hygon:0", "hygon:1"]  # the refused --showpids flag lost no card
    card0, card1 = report["cards"]
    # Polls 2-3 failed: their stale carry-overs are not figures. Card 1 vanished at poll 4.
    assert card0["util_pct"] == stats([10.0, 30.0, 30.0])
    assert card1["util_pct"] == stats([90.0])
    notes = report["notes"]
    assert "card hygon:1 no longer listed by hy-smi" in notes
    assert sum("refused pids" in n for n in notes) == 1


# --- groups and look-alikes ------------------------------------------------------------------


def dcu_rocm_smi(fakes: FakeBin, steps: Sequence[Step | Sequence[FakeCard]]) -> None:
    """DTK's rocm-smi on a DCU box prints the DCU table (like hy-smi's)."""

    def render(args: Sequence[str], cards: Sequence[FakeCard], procs: Sequence[FakeProcess]) -> str:
        return hy_fmt.render(cards, procs) if not args else "rocm-smi: unsupported here\n"

    fakes.add_for_spec(spec_named("rocm-smi"), steps, render=render)


def test_hy_smi_and_rocm_smi_on_a_dcu_box_count_each_card_once(fake_bin: FakeBin) -> None:
    hy = fake_bin.add_for_spec(spec_named("hy-smi"), SCENARIO)
    dcu_rocm_smi(fake_bin, SCENARIO)
    report = check_json(fake_bin, "--duration", "1", "--interval", "0.5")
    assert [c["id"] for c in report["cards"]] == ["hygon:0", "hygon:1"]
    assert fake_bin.tools["rocm-smi"].calls() == 0 and hy.calls() >= 2


def test_dcu_rocm_smi_takes_over_when_hy_smi_refuses(fake_bin: FakeBin) -> None:
    fake_bin.add_for_spec(spec_named("hy-smi"), [Step(mode="garbage")])
    dcu_rocm_smi(fake_bin, SCENARIO)
    report = check_json(fake_bin, "--duration", "1", "--interval", "0.5")
    assert [c["id"] for c in report["cards"]] == ["hygon:0", "hygon:1"]
    assert report["cards"][0]["util_pct"]["last"] == 50.0
    assert report["errors"] == []
    assert any(n.startswith("hy-smi not used") for n in report["notes"])


def test_intel_xpu_smi_1x_gives_intel_cards_through_dump_never_kunlunxin(
    fake_bin: FakeBin,
) -> None:
    spec = spec_named("intel-xpu-smi")
    fake_bin.add_for_spec(spec, SCENARIO, render=intel_fmt.render_v1_for_args)
    report = check_json(fake_bin, "--duration", "1.5", "--interval", "0.5")
    assert [c["id"] for c in report["cards"]] == ["intel:0", "intel:1"]
    assert report["errors"] == []
    # Plain xpu-smi printed its help text: the dump view took over, said once.
    [note] = [n for n in report["notes"] if "refused default" in n]
    assert note.startswith("intel-xpu-smi refused default") and note.endswith("using dump")
    assert not any("kunlunxin" in n for n in report["notes"])
    card = report["cards"][0]
    assert card["util_pct"]["max"] == 50.0 and card["mem_total_mib"] == 100000.0  # discovery


def test_kunlunxin_tool_named_xpu_smi_is_read_as_kunlunxin_after_one_intel_look(
    fake_bin: FakeBin,
) -> None:
    tool = fake_bin.add_for_spec(spec_named("xpu_smi"), SCENARIO, name="xpu-smi")
    report = check_json(fake_bin, "--duration", "1", "--interval", "0.5")
    assert [c["id"] for c in report["cards"]] == ["kunlunxin:0", "kunlunxin:1"]
    assert report["errors"] == []
    [note] = [n for n in report["notes"] if n.startswith(f"{tool.path} is not")]
    assert note.startswith(f"{tool.path} is not intel's intel-xpu-smi: ")
    assert "Kunlunxin" in note and note.endswith("; ignored")
    assert any(n.startswith("intel-xpu-smi not used") for n in report["notes"])


# --- signals, human output, recording --------------------------------------------------------


@pytest.mark.parametrize(
    ("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
def test_signal_stops_the_run_and_prints_what_was_gathered(
    fake_bin: FakeBin, sig: int, status: int
) -> None:
    fake_bin.add_for_spec(spec_named("hy-smi"), [SCENARIO[0], Step(mode="hang")])
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", "30",
         "--interval", "0.3"],
        env=fake_bin.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )
    try:
        tool = fake_bin.tools["hy-smi"]
        deadline = time.monotonic() + 20
        while tool.calls(()) < 2 and time.monotonic() < deadline:  # now hanging in poll 2
            time.sleep(0.05)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == status, err
    report = json.loads(out)
    assert report["samples"] == 1
    assert report["cards"][0]["util_pct"] == stats([10.0])
    assert leftover_processes(fake_bin.dir, grace=1.0) == []


def test_human_summary_lists_cards_errors_and_the_verdict(fake_bin: FakeBin) -> None:
    fake_bin.add_for_spec(spec_named("hy-smi"), [SCENARIO[0], Step(mode="fail")])
    result = run_check(fake_bin, "--duration", "1", "--interval", "0.5")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "gpusat-tui check: 2 polls over " + lines[0].split("over ")[1]
    assert lines[0].endswith("— overall: unknown")
    row = next(line for line in lines if line.startswith("hygon:1 "))
    assert row.split() == ["hygon:1", "90", "[90–90]", "90", "[90–90]", "250", "[250–250]",
                           "300", "70", "[70–70]", "unknown"]
    assert any("[exit] hy-smi exited with status 3: fake: device busy (once)" in ln
               for ln in lines)


def test_record_writes_a_replayable_file(fake_bin: FakeBin, tmp_path: Path) -> None:
    from gpusat_tui.sources.recording.reader import read_recording

    fake_bin.add_for_spec(spec_named("hy-smi"), SCENARIO)
    out = tmp_path / "run.jsonl"
    report = check_json(fake_bin, "--duration", "1", "--interval", "0.5", "--record", str(out))
    header, frames = read_recording(out)
    frames = list(frames)
    assert header.tools == {"hy-smi": None}  # hy-smi's table does not say its version
    assert header.interval_s == 0.5
    assert len(frames) == report["samples"] == 2
    assert [c.util_pct for c in frames[1].cards] == [50.0, 80.0]


def test_record_to_an_unwritable_file_is_a_usage_error(fake_bin: FakeBin, tmp_path: Path) -> None:
    fake_bin.add_for_spec(spec_named("hy-smi"), SCENARIO)
    result = run_check(fake_bin, "--duration", "0.5", "--record", str(tmp_path / "no" / "x.jsonl"))
    assert result.returncode == 2
    assert result.stderr.startswith("gpusat-tui check: cannot record to ")


# --- headless, the JSON interface, pure helpers ----------------------------------------------


def test_check_and_live_source_do_not_import_textual() -> None:
    code = (
        "import sys, gpusat_tui.commands.check, gpusat_tui.sources.polling.live, gpusat_tui.cli, "
        "gpusat_tui.analysis.stats, gpusat_tui.collectors; gpusat_tui.collectors.all_specs(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'textual_plotext')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    assert result.stdout.strip() == "[]"


def test_check_json_field_names_are_pinned() -> None:
    """An interface test: renaming a field of `check --json` must fail here."""
    report = CheckBuilder()
    frame = Frame(
        t=0.0,
        cards=[CardReading(vendor="hygon", index=0, util_pct=1.0)],
        processes=[ProcessSample(pid=1, role="trainer", name="python", cpu_pct=5.0,
                                 card_ids=["hygon:0"])],
        errors=[ToolError(tool="hy-smi", message="boom", kind="exit")],
        notes=["n"],
    )
    report.add(frame)
    data = json.loads(report.report(1.0).model_dump_json())
    assert list(data) == ["schema_version", "duration_s", "samples", "cards", "processes",
                          "errors", "verdict", "notes", "job", "no_tool", "jobs"]
    assert list(data["cards"][0]) == [
        "id", "vendor", "index", "name", "util_pct", "mem_pct", "mem_used_mib", "mem_total_mib",
        "power_w", "power_cap_w", "temp_c", "verdict", "instance", "extras", "throttle",
        "energy",
    ]
    assert list(data["cards"][0]["util_pct"]) == ["mean", "min", "max", "last"]
    assert list(data["cards"][0]["verdict"]) == ["kind", "cause", "why", "advice"]
    assert list(data["processes"][0]) == [
        "pid", "role", "name", "cpu_pct", "card_ids", "probe", "job", "rchar_per_s",
        "wchar_per_s", "syscalls_per_s", "ctx_switches_per_s", "world_size", "rank",
        "other_threads_cpu_pct", "busy_threads", "cpu_quota_cores", "cpu_throttled_pct",
        "stack_dump",
    ]
    assert data["processes"][0]["probe"] is None  # no probe: null (additive)
    assert data["processes"][0]["stack_dump"] is None  # no dump taken: null (additive)
    assert list(data["errors"][0]) == ["tool", "message", "count", "kind"]
    assert CheckReport.model_validate(data).samples == 1


def test_gpm_extras_throttle_and_mig_instances_reach_check_json() -> None:
    """NVIDIA's GPM figures and clock-event reasons are documented fields of check --json."""
    builder = CheckBuilder()
    gpm = {"sm_active_pct": 38.0, "tensor_active_pct": 22.0}
    for n, reasons in enumerate(["", "power-cap", "power-cap,hw-thermal", "power-cap"]):
        extras = {"throttle": reasons, **{k: v + n for k, v in gpm.items()}, "mig": "Enabled"}
        builder.add(Frame(t=float(n), cards=[
            CardReading(vendor="nvidia", index=0, util_pct=None, extras=extras),
            CardReading(vendor="nvidia", index=0, instance="mig1", mem_used_mib=12.0,
                        mem_total_mib=5952.0, extras={"sm_active_pct": 50.0}),
            CardReading(vendor="amd", index=0, util_pct=5.0),
        ]))
    data = json.loads(builder.report(4.0).model_dump_json())
    whole, mig, amd = data["cards"]
    assert (whole["id"], whole["instance"], mig["id"], mig["instance"]) == (
        "nvidia:0", None, "nvidia:0/mig1", "mig1"
    )
    assert whole["extras"] == {
        "sm_active_pct": stats([38.0, 39.0, 40.0, 41.0]),
        "tensor_active_pct": stats([22.0, 23.0, 24.0, 25.0]),
    }
    assert whole["throttle"] == {"power-cap": 3, "hw-thermal": 1}
    assert mig["extras"] == {"sm_active_pct": stats([50.0] * 4)} and mig["throttle"] is None
    assert (amd["extras"], amd["throttle"]) == ({}, None)
    assert CheckReport.model_validate(data).cards[1].instance == "mig1"


def test_builder_folds_frames_skipping_stale_and_missing_figures() -> None:
    builder = CheckBuilder()
    card = CardReading(vendor="ascend", index=3, name="910B2", util_pct=10.0, power_w=100.0,
                       mem_used_mib=1000.0, mem_total_mib=4000.0)
    err = ToolError(tool="npu-smi", message="did not answer", kind="timeout")
    builder.add(Frame(t=0, cards=[card]))
    builder.add(Frame(t=1, cards=[card.model_copy(update={"util_pct": 30.0, "power_w": None})]))
    builder.add(Frame(t=2, cards=[card.model_copy(update={"util_pct": 99.0, "stale_s": 1.0})],
                      errors=[err], notes=["x", "y"]))
    builder.add(Frame(t=3, cards=[], errors=[err], notes=["x"]))
    rep = builder.report(3.14159)
    assert rep.samples == 4 and rep.duration_s == 3.142
    [c] = rep.cards
    assert c.util_pct.model_dump() == {"mean": 20.0, "min": 10.0, "max": 30.0, "last": 30.0}
    assert c.power_w.model_dump() == {"mean": 100.0, "min": 100.0, "max": 100.0, "last": 100.0}
    assert c.mem_pct.last == 25.0 and c.mem_total_mib == 4000.0 and c.name == "910B2"
    assert [(e.message, e.count, e.kind) for e in rep.errors] == [("did not answer", 2, "timeout")]
    assert rep.notes == ["x", "y"]


def test_builder_uses_the_latest_assessment() -> None:
    builder = CheckBuilder()
    frame = Frame(t=0, cards=[CardReading(vendor="amd", index=0), CardReading(vendor="amd",
                                                                              index=1)])
    verdict = Verdict(kind="starving", cause="input-bound", why=["util 40 %"], advice=["more"])
    builder.add(frame, Assessment(cards={"amd:0": verdict}, job=Verdict(kind="starving")))
    rep = builder.report(1.0)
    assert [(c.verdict.kind, c.verdict.cause) for c in rep.cards] == [
        ("starving", "input-bound"), ("unknown", None)
    ]
    assert rep.cards[0].verdict.why == ["util 40 %"] and rep.verdict == "starving"
    assert "starving (input-bound)" in render_human(rep)


@pytest.mark.parametrize(
    ("kinds", "job", "expected"),
    [
        (["saturated", "saturated", "starving"], None, "saturated"),
        (["saturated", "starving"], None, "starving"),
        (["starving", "fragmenting"], None, "fragmenting"),
        (["saturated", "idle", "idle", "idle"], None, "saturated"),
        (["idle", "idle"], None, "idle"),
        (["saturated", "saturated"], "imbalanced", "imbalanced"),
        (["unknown", "idle"], None, "unknown"),
        ([], None, "unknown"),
    ],
)
def test_overall_verdict(kinds: list[str], job: str | None, expected: str) -> None:
    assert overall_verdict(kinds, job) == expected


def test_override_to_a_missing_file_is_a_usage_error(fake_bin: FakeBin) -> None:
    missing = fake_bin.dir / "nope" / "hy-smi"
    result = run_check(fake_bin, "--json", "--duration", "0.5", "--interval", "0.5",
                       "--tool", f"hygon={missing}")
    assert result.returncode == 2, result.stderr
    assert f"--tool hygon={missing}: no such file" in result.stderr
    assert result.stdout == ""


def test_a_process_listed_by_the_tool_is_followed_on_its_card(fake_bin: FakeBin) -> None:
    trainer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        fake_bin.add_for_spec(
            spec_named("hy-smi"),
            [Step(cards=tuple(SCENARIO[0]), processes=(FakeProcess(trainer.pid, "python", 1),))],
        )
        report = check_json(fake_bin, "--duration", "1.5", "--interval", "0.5")
    finally:
        trainer.kill()
        trainer.wait()
    [proc] = report["processes"]
    assert (proc["pid"], proc["role"], proc["card_ids"]) == (trainer.pid, "trainer", ["hygon:1"])
    # A sleeping process: its CPU is measured (from the second tick) and near zero.
    assert proc["cpu_pct"]["last"] is not None and proc["cpu_pct"]["max"] < 5.0


def test_a_reader_that_leaves_early_is_no_crash(fake_bin: FakeBin) -> None:
    fake_bin.add_for_spec(spec_named("hy-smi"), SCENARIO)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpusat_tui", "check", "--duration", "0.5", "--interval", "0.5"],
        env=fake_bin.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # like `gpusat-tui check | head -0`
    _, err = proc.communicate(timeout=30)
    # Quietly, as a Unix tool killed by SIGPIPE: status 141, not a word on stderr.
    assert proc.returncode == 141 and err == b""


@pytest.mark.parametrize(("option", "lists_read"), [((), 2), (("--enrich-every", "1"), 6)])
def test_enrich_every_sets_how_often_the_process_list_is_read(
    fake_bin: FakeBin, option: tuple[str, ...], lists_read: int
) -> None:
    from gpusat_tui.collectors.nvidia_smi import QUERY_APPS_ARGS

    tool = fake_bin.add_for_spec(spec_named("nvidia-smi"), SCENARIO)
    report = check_json(fake_bin, "--duration", "3", "--interval", "0.5", *option)
    assert report["samples"] == 6
    # By default the process list is read on polls 0 and 5; with 1, on every poll. The cards'
    # figures are read on every poll either way.
    assert tool.calls(QUERY_APPS_ARGS) == lists_read
    assert tool.calls() - tool.calls(QUERY_APPS_ARGS) == 6


def test_enrich_every_must_be_a_positive_whole_number(fake_bin: FakeBin) -> None:
    for bad in ("0", "x"):
        result = run_check(fake_bin, "--enrich-every", bad)
        assert result.returncode == 2 and "--enrich-every" in result.stderr
