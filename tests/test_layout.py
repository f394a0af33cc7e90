"""The static checks `.ci/run` runs before the tests can fail, and say why.

Each check (``ruff``, ``mypy``, ``lint-imports``) runs, as `.ci/run` runs it, on a copy of the
package and of ``pyproject.toml`` in a temporary folder: on the untouched copy it passes; with
one fault planted (an import circle, a lower layer importing a higher, Textual in the pure
judgement, a type error, a lint finding) it fails naming the planted module. A check that
passes whatever the code says would show here. The tools are those installed beside the
running Python (the ``test`` extra).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.lint

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
#: Generous: a cold mypy run of the whole package takes ~10 s of CPU, more on a busy machine.
TIMEOUT_S = 600


def _copy(dest: Path) -> Path:
    """``dest`` holding a copy of the package and the project's configuration."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copytree(
        ROOT / "gpusat_tui", dest / "gpusat_tui",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def _run(tool: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = BIN / tool
    if not exe.exists():
        pytest.fail(f"{tool} is not installed beside {sys.executable} (pip install '.[test]')")
    # Only the copy is importable: not the repository, not whatever PYTHONPATH named.
    env = {**os.environ, "PYTHONPATH": str(cwd), "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("MYPYPATH", None)
    return subprocess.run(
        [str(exe), *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=TIMEOUT_S, check=False,
    )


def _said(result: subprocess.CompletedProcess[str]) -> str:
    return result.stdout + result.stderr


def _plant(copy: Path, relative: str, text: str) -> None:
    (copy / relative).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _copy(tmp_path_factory.mktemp("pristine"))


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    return _copy(tmp_path / "planted")


# --- lint-imports: the contracts in pyproject.toml -----------------------------------------


def _lint_imports(copy: Path) -> subprocess.CompletedProcess[str]:
    return _run("lint-imports", ["--no-cache", str(copy / "pyproject.toml")], copy)


def test_import_contracts_pass_on_the_package(pristine: Path) -> None:
    result = _lint_imports(pristine)
    assert result.returncode == 0, _said(result)
    assert "0 broken" in result.stdout


def test_an_import_circle_breaks_the_contracts(planted: Path) -> None:
    _plant(planted, "gpusat_tui/analysis/planted_a.py",
           '"""Planted."""\n\nfrom gpusat_tui.analysis import planted_b\n\nB = planted_b\n')
    _plant(planted, "gpusat_tui/analysis/planted_b.py",
           '"""Planted."""\n\nfrom gpusat_tui.analysis import planted_a\n\nA = planted_a\n')
    result = _lint_imports(planted)
    out = _said(result)
    assert result.returncode != 0, out
    assert "No import circles between the modules of one folder BROKEN" in out
    assert "No cycles are allowed in gpusat_tui.analysis" in out
    assert re.search(r"\.planted_([ab]) -> \.planted_(?!\1)[ab]", out), out


def test_a_lower_layer_importing_a_higher_breaks_the_layers(planted: Path) -> None:
    # host sits below sources (which reads the host), so the siblings' circle contract
    # breaks too; the layers contract must name the import itself.
    _plant(planted, "gpusat_tui/host/planted_up.py",
           '"""Planted."""\n\nfrom gpusat_tui.sources.recording import codec\n\nC = codec\n')
    result = _lint_imports(planted)
    out = _said(result)
    assert result.returncode != 0, out
    assert re.search(r"Layers: entry, commands, UI, sources, .* BROKEN", out, re.S), out
    assert "gpusat_tui.host.planted_up -> gpusat_tui.sources.recording.codec" in out


@pytest.mark.parametrize(
    ("planted_in", "imported", "contract"),
    [
        ("sources/recording", "gpusat_tui.sources.polling.live", "Sources: build over three rooms"),
        ("sources/fleet_view", "gpusat_tui.sources.recording.reader",
         "Sources: build over three rooms"),
        ("host/probes", "gpusat_tui.host.monitor.procfs",
         "Host: the process monitor and the probe"),
        ("host/scheduler", "gpusat_tui.host.probes.probe_files",
         "Host: the process monitor and the probe"),
        ("analysis/probe_reading", "gpusat_tui.analysis.verdicts.card",
         "Analysis: the verdicts over the host evidence"),
        ("analysis/probe_reading", "gpusat_tui.analysis.facts",
         "Analysis: the verdicts over the host evidence"),
        ("analysis/evidence", "gpusat_tui.analysis.outside_stacks.outside_stack",
         "Analysis: the verdicts over the host evidence"),
        ("analysis/outside_stacks", "gpusat_tui.analysis.evidence.host_evidence",
         "Analysis: the verdicts over the host evidence"),
    ],
)
def test_an_import_across_rooms_breaks_their_contract(
    planted: Path, planted_in: str, imported: str, contract: str
) -> None:
    _plant(planted, f"gpusat_tui/{planted_in}/planted_across.py",
           f'"""Planted."""\n\nimport {imported}\n\nM = {imported}\n')
    result = _lint_imports(planted)
    out = _said(result)
    assert result.returncode != 0, out
    assert re.search(re.escape(contract) + r".*BROKEN", out, re.S), out
    planted_module = "gpusat_tui." + planted_in.replace("/", ".") + ".planted_across"
    assert f"{planted_module} -> {imported}" in out, out


def test_textual_in_the_judgement_breaks_the_contracts(planted: Path) -> None:
    _plant(planted, "gpusat_tui/analysis/planted_widget.py",
           '"""Planted."""\n\nimport textual\n\nVERSION = textual.__version__\n')
    result = _lint_imports(planted)
    out = _said(result)
    assert result.returncode != 0, out
    assert "Only the UI and the dashboard command import Textual BROKEN" in out
    assert "gpusat_tui.analysis.planted_widget -> textual" in out


# --- mypy: strict on the package ------------------------------------------------------------


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the module's runs: the planted copy re-checks only what changed."""
    return tmp_path_factory.mktemp("mypy-cache")


def _mypy(copy: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return _run("mypy", ["--cache-dir", str(cache), "gpusat_tui"], copy)


def test_mypy_passes_on_the_package(pristine: Path, mypy_cache: Path) -> None:
    result = _mypy(pristine, mypy_cache)
    assert result.returncode == 0, _said(result)
    assert result.stdout.startswith("Success: no issues found")


def test_a_type_error_fails_mypy(planted: Path, mypy_cache: Path) -> None:
    _plant(planted, "gpusat_tui/analysis/planted_types.py",
           '"""Planted."""\n\nfrom gpusat_tui.model import Verdict\n\n\n'
           'def kind_of(verdict: Verdict) -> int:\n    return verdict.kind\n')
    result = _mypy(planted, mypy_cache)
    out = _said(result)
    assert result.returncode == 1, out
    assert "gpusat_tui/analysis/planted_types.py:7: error: Incompatible return value type" in out
    assert "Found 1 error in 1 file" in out


# --- ruff: the lint rules in pyproject.toml -------------------------------------------------


def test_ruff_passes_on_the_package(pristine: Path) -> None:
    result = _run("ruff", ["check", "--no-cache", "."], pristine)
    assert result.returncode == 0, _said(result)


def test_a_lint_finding_fails_ruff(planted: Path) -> None:
    _plant(planted, "gpusat_tui/analysis/planted_lint.py", '"""Planted."""\n\nimport os\n')
    result = _run("ruff", ["check", "--no-cache", "."], planted)
    out = _said(result)
    assert result.returncode == 1, out
    assert "F401" in out and "planted_lint.py" in out
