"""Finding the newer families' tools: ``--tool VENDOR=PATH``, ``GPUSAT_TOOL_*``, the discovery
message. The machinery is shared (see test_discovery.py); this pins it for each new tool."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpusat_tui.collectors import all_specs
from gpusat_tui.collectors.base import ToolSpec
from gpusat_tui.collectors.discovery import find_executable
from gpusat_tui.errors import ToolMissing
from gpusat_tui.sources.polling.live import LiveSource
from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin

REPO = Path(__file__).resolve().parents[2]
CARDS = [[FakeCard(index=0, util_pct=42.0, mem_used_mib=1000.0, mem_total_mib=4000.0,
                   power_w=100.0, power_cap_w=300.0, temp_c=50.0)]]
#: tool -> (vendor, override variable, executable names).
NEW_TOOLS = {
    "hl-smi": ("gaudi", "GPUSAT_TOOL_HL_SMI", ("hl-smi",)),
    "ixsmi": ("iluvatar", "GPUSAT_TOOL_IXSMI", ("ixsmi",)),
    "efsmi": ("enflame", "GPUSAT_TOOL_EFSMI", ("efsmi",)),
    "mx-smi": ("metax", "GPUSAT_TOOL_MX_SMI", ("mx-smi",)),
    "ht-smi": ("metax", "GPUSAT_TOOL_HT_SMI", ("ht-smi",)),
    "intel-xpu-smi": ("intel", "GPUSAT_TOOL_INTEL_XPU_SMI", ("xpu-smi",)),
    "tpu-info": ("tpu", "GPUSAT_TOOL_TPU_INFO", ("tpu-info",)),
    "tt-smi": ("tenstorrent", "GPUSAT_TOOL_TT_SMI", ("tt-smi",)),
}
SPECS = {s.tool: s for s in all_specs()}


def elsewhere(tmp_path: Path, spec: ToolSpec) -> Path:
    """A fake of ``spec`` in a folder that is NOT on PATH."""
    fakes = FakeBin(tmp_path / "opt")
    fakes.dir.mkdir(parents=True, exist_ok=True)
    return fakes.add_for_spec(spec, CARDS).path


@pytest.mark.parametrize("tool", sorted(NEW_TOOLS))
def test_names_and_override_variables_are_pinned(tool: str) -> None:
    vendor, variable, names = NEW_TOOLS[tool]
    spec = SPECS[tool]
    assert (spec.vendor, spec.env_var, spec.names) == (vendor, variable, names)


def test_override_variables_are_all_different() -> None:
    variables = [s.env_var for s in all_specs()]
    assert len(variables) == len(set(variables))


@pytest.mark.parametrize("tool", sorted(NEW_TOOLS))
def test_cli_vendor_override_finds_the_tool_off_path(
    fake_bin: FakeBin, tmp_path: Path, tool: str
) -> None:
    spec = SPECS[tool]
    exe = elsewhere(tmp_path, spec)
    result = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--json", "--duration", "0.5",
         "--interval", "0.5", "--tool", f"{spec.vendor}={exe}"],
        env=fake_bin.env(), capture_output=True, text=True, timeout=60, cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [c["id"] for c in report["cards"]] == [f"{spec.vendor}:0"]
    card = report["cards"][0]
    assert card["temp_c"]["last"] in (50.0, None) and card["power_w"]["last"] in (100.0, None)
    assert {card["util_pct"]["last"], card["power_w"]["last"]} != {None}  # some figure came


@pytest.mark.parametrize("tool", sorted(NEW_TOOLS))
def test_env_variable_beats_path(
    fake_bin: FakeBin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    spec = SPECS[tool]
    exe = elsewhere(tmp_path, spec)
    fake_bin.add_for_spec(spec, CARDS)  # another one on PATH
    monkeypatch.setenv(spec.env_var, str(exe))
    assert find_executable(spec, {}, path=fake_bin.path) == (str(exe), [f"${spec.env_var}"])


def test_nothing_found_names_every_new_tool_and_where_it_looked(fake_bin: FakeBin) -> None:
    specs = [SPECS[t] for t in NEW_TOOLS]
    src = LiveSource(specs=specs, path=fake_bin.path, process_monitor=None)
    with pytest.raises(ToolMissing) as info:
        src.discover()
    message = str(info.value)
    for tool, (_, variable, _) in NEW_TOOLS.items():
        [line] = [ln for ln in message.splitlines() if ln.startswith(f"  {tool}: ")]
        assert line.startswith(f"  {tool}: ${variable}, PATH")
        assert all(folder in line for folder in SPECS[tool].search_dirs)
    assert message.splitlines()[-1].startswith("Use --tool VENDOR=PATH")
