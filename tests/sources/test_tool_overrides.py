"""A vendor-keyed --tool override goes to the tool its file name names, never to a sibling."""

from __future__ import annotations

import pytest

from gpusat_tui.collectors import all_specs
from gpusat_tui.collectors.discovery import find_executable

SPECS = {spec.tool: spec for spec in all_specs()}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/opt/rocm/bin/rocm-smi", {"rocm-smi": "/opt/rocm/bin/rocm-smi", "amd-smi": None}),
        ("/opt/rocm/bin/amd-smi", {"rocm-smi": None, "amd-smi": "/opt/rocm/bin/amd-smi"}),
        # A name no AMD tool has (a wrapper script): every AMD tool may try it.
        ("/site/wrap-gpu", {"rocm-smi": "/site/wrap-gpu", "amd-smi": "/site/wrap-gpu"}),
    ],
)
def test_vendor_override_belongs_to_the_named_tool(path: str, expected: dict[str, str | None]):
    for tool, want in expected.items():
        found, searched = find_executable(SPECS[tool], {"amd": path}, path="")
        assert found == want, tool
        if want is not None:
            assert searched == ["--tool amd"]


def test_tool_keyed_override_and_env_var(monkeypatch: pytest.MonkeyPatch):
    spec = SPECS["hy-smi"]
    assert find_executable(spec, {"hy-smi": "/x/hy"}, path="")[0] == "/x/hy"
    monkeypatch.setenv(spec.env_var, "/env/hy-smi")
    assert spec.env_var == "GPUSAT_TOOL_HY_SMI"
    assert find_executable(spec, {}, path="") == ("/env/hy-smi", ["$GPUSAT_TOOL_HY_SMI"])


def test_nothing_found_says_where_it_looked(tmp_path):
    spec = SPECS["hy-smi"]
    found, searched = find_executable(spec, {}, path=str(tmp_path))
    assert found is None
    assert searched[:2] == ["$GPUSAT_TOOL_HY_SMI", "PATH"]
    assert "/opt/hyhal/bin" in searched
