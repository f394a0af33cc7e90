"""Finding the tools: --tool overrides, GPUSAT_TOOL_* variables, PATH, vendor install folders."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from gpusat_tui.collectors import all_specs
from gpusat_tui.collectors.base import ToolSpec
from gpusat_tui.errors import ToolMissing
from gpusat_tui.sources.polling.live import LiveSource
from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin

REPO = Path(__file__).resolve().parents[2]
CARDS = [[FakeCard(index=0, util_pct=42.0, mem_used_mib=1000.0, mem_total_mib=4000.0)]]


def spec_named(tool: str) -> ToolSpec:
    return next(s for s in all_specs() if s.tool == tool)


def elsewhere(tmp_path: Path, spec: ToolSpec, folder: str = "opt") -> Path:
    """A fake of ``spec`` in a folder that is NOT on PATH."""
    fakes = FakeBin(tmp_path / folder)
    fakes.dir.mkdir(parents=True, exist_ok=True)
    return fakes.add_for_spec(spec, CARDS).path


def live(fake_bin: FakeBin, specs: list[ToolSpec], **kw: object) -> LiveSource:
    return LiveSource(specs=specs, path=fake_bin.path, process_monitor=None, **kw)  # type: ignore[arg-type]


def test_env_variable_points_at_a_tool_off_path(
    fake_bin: FakeBin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = spec_named("hy-smi")
    exe = elsewhere(tmp_path, spec)
    monkeypatch.setenv("GPUSAT_TOOL_HY_SMI", str(exe))
    assert live(fake_bin, [spec]).discover() == {"hy-smi": str(exe)}


def test_override_beats_env_beats_path(
    fake_bin: FakeBin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = spec_named("hy-smi")
    on_path = fake_bin.add_for_spec(spec, CARDS).path
    by_env = elsewhere(tmp_path, spec, "env")
    by_flag = elsewhere(tmp_path, spec, "flag")
    assert live(fake_bin, [spec]).discover() == {"hy-smi": str(on_path)}
    monkeypatch.setenv("GPUSAT_TOOL_HY_SMI", str(by_env))
    assert live(fake_bin, [spec]).discover() == {"hy-smi": str(by_env)}
    for key in ("hygon", "hy-smi"):
        src = live(fake_bin, [spec], overrides={key: str(by_flag)})
        assert src.discover() == {"hy-smi": str(by_flag)}


def test_vendor_key_goes_to_the_tool_its_file_name_names(fake_bin: FakeBin, tmp_path: Path) -> None:
    specs = [spec_named("xpu_smi"), spec_named("hy-smi"), spec_named("rocm-smi")]
    exe = elsewhere(tmp_path, specs[0])  # written as "xpu_smi"
    src = live(fake_bin, specs, overrides={"kunlunxin": str(exe)})
    assert src.discover() == {"xpu_smi": str(exe)}


def test_vendor_install_folder_is_searched_after_path(fake_bin: FakeBin, tmp_path: Path) -> None:
    spec = spec_named("npu-smi")
    folder_exe = elsewhere(tmp_path, spec, "Ascend/driver/tools")
    moved = replace(spec, search_dirs=("/nonexistent/gpusat", str(folder_exe.parent)))
    assert live(fake_bin, [moved]).discover() == {"npu-smi": str(folder_exe)}
    on_path = fake_bin.add_for_spec(spec, CARDS).path
    assert live(fake_bin, [moved]).discover() == {"npu-smi": str(on_path)}


def test_nothing_found_lists_every_place_searched(fake_bin: FakeBin) -> None:
    spec = replace(spec_named("cnmon"), search_dirs=("/nonexistent/neuware/bin",))
    src = live(fake_bin, [spec, spec_named("hy-smi")])
    with pytest.raises(ToolMissing) as info:
        src.discover()
    assert str(info.value).splitlines() == [
        "No accelerator tool found. Searched:",
        # In the order tools are tried (by group, then priority).
        "  hy-smi: $GPUSAT_TOOL_HY_SMI, PATH, " + ", ".join(spec_named("hy-smi").search_dirs),
        "  cnmon: $GPUSAT_TOOL_CNMON, PATH, /nonexistent/neuware/bin",
        "Use --tool VENDOR=PATH (or GPUSAT_TOOL_<TOOL>=PATH) to point at one.",
    ]


@pytest.mark.parametrize("key", ["hygon", "hy-smi"])
def test_cli_tool_option_finds_a_tool_off_path(
    fake_bin: FakeBin, tmp_path: Path, key: str
) -> None:
    exe = elsewhere(tmp_path, spec_named("hy-smi"))
    result = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", "0.5",
         "--interval", "0.5", "--tool", f"{key}={exe}"],
        env=fake_bin.env(), capture_output=True, text=True, timeout=60, cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [(c["id"], c["util_pct"]["last"]) for c in report["cards"]] == [("hygon:0", 42.0)]


def test_cli_env_variable_finds_a_tool_off_path(fake_bin: FakeBin, tmp_path: Path) -> None:
    exe = elsewhere(tmp_path, spec_named("cnmon"))
    result = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", "0.5",
         "--interval", "0.5"],
        env=fake_bin.env({"GPUSAT_TOOL_CNMON": str(exe)}), capture_output=True, text=True,
        timeout=60, cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [(c["id"], c["util_pct"]["last"]) for c in report["cards"]] == [("cambricon:0", 42.0)]
