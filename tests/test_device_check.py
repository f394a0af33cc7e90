"""The non-GPU parts of the real-GPU check: tools/device_compare.py on made-up outputs, and
tools/device_check.sh's argument handling and steps run against a fake nvidia-smi (no NVML
here, so the "NVML path used" check must fail and say so). The script itself has not yet run
on a real GPU."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import device_compare  # noqa: E402

SCRIPT = REPO / "tools" / "device_check.sh"

SMI_HEADER = ", ".join([
    "index", "utilization.gpu [%]", "memory.used [MiB]", "memory.total [MiB]", "power.draw [W]",
    "enforced.power.limit [W]", "temperature.gpu", "clocks_event_reasons.active",
])
SMI_CSV = SMI_HEADER + """
0, 97 %, 120000 MiB, 143771 MiB, 650.12 W, 700.00 W, 61, 0x0000000000000004
0, 99 %, 120004 MiB, 143771 MiB, 660.40 W, 700.00 W, 62, 0x0000000000000004
0, [N/A], 120004 MiB, 143771 MiB, 655.00 W, 700.00 W, 62, 0x0000000000000004
"""

def stats(mean: float | None) -> dict[str, float | None]:
    return {"mean": mean, "min": mean, "max": mean, "last": mean}


def report(util: float = 98.0, power: float = 655.0, cap: float = 700.0) -> dict[str, Any]:
    return {
        "schema_version": 1, "duration_s": 10.0, "samples": 10, "verdict": "saturated",
        "cards": [{
            "id": "nvidia:0", "vendor": "nvidia", "index": 0, "instance": None,
            "util_pct": stats(util), "mem_pct": stats(83.5), "mem_used_mib": stats(120002.0),
            "mem_total_mib": 143771.0, "power_w": stats(power), "power_cap_w": cap,
            "temp_c": stats(61.5), "extras": {"sm_active_pct": stats(84.0)},
            "throttle": {"power-cap": 10},
            "verdict": {"kind": "saturated", "cause": None, "advice": [],
                        "why": ["SM activity (GPM) median 84 %: at or above ..."]},
        }],
    }


def record(tool: str = "nvml") -> list[dict[str, Any]]:
    frame = {"t": 0.0, "cards": [{"vendor": "nvidia", "index": 0, "tool": tool}],
             "monitor_cpu_pct": 0.4}
    return [{"type": "header"}, frame, {**frame, "monitor_cpu_pct": 0.6}]


def test_figures_agree_and_the_nvml_path_is_checked() -> None:
    smi = device_compare.read_smi_csv(SMI_CSV)
    assert smi[0]["util_pct"] == [97.0, 99.0] and smi[0]["power_cap_w"] == [700.0] * 3
    result = device_compare.compare_figures(report(), smi, record())
    assert result["ok"], result
    assert {c["check"] for c in result["checks"]} == {
        "nvidia:0 util_pct", "nvidia:0 mem_used_mib", "nvidia:0 power_w",
        "nvidia:0 power_cap_w", "nvidia:0 temp_c", "NVML path used",
    }
    assert result["monitor_cpu_pct_mean"] == 0.5 and result["gpm_fields"] == ["sm_active_pct"]
    fallback = device_compare.compare_figures(report(), smi, record("nvidia-smi"))
    assert not fallback["ok"]
    assert [c["tools"] for c in fallback["checks"] if c["check"] == "NVML path used"] == [
        ["nvidia-smi"]
    ]


@pytest.mark.parametrize(
    ("changes", "failing"),
    [({"util": 70.0}, "nvidia:0 util_pct"), ({"power": 500.0}, "nvidia:0 power_w"),
     ({"cap": 650.0}, "nvidia:0 power_cap_w")],
)
def test_figures_that_disagree_fail(changes: dict[str, float], failing: str) -> None:
    result = device_compare.compare_figures(report(**changes), device_compare.read_smi_csv(SMI_CSV))
    assert not result["ok"]
    assert [c["check"] for c in result["checks"] if not c["ok"]] == [failing]


def test_verdict_expectations() -> None:
    assert device_compare.check_verdict(report(), "saturated", gpm=True)["ok"]
    assert not device_compare.check_verdict(report(), "starving:input-bound", gpm=False)["ok"]
    plain = report()
    plain["cards"][0]["verdict"]["why"] = ["GPU-Util median 98 %"]
    assert not device_compare.check_verdict(plain, "saturated", gpm=True)["ok"]
    assert device_compare.check_verdict(plain, "saturated", gpm=False)["ok"]


def test_cli_exit_status_and_unreadable_input(tmp_path: Path) -> None:
    good, csv_file = tmp_path / "c.json", tmp_path / "s.csv"
    good.write_text(json.dumps(report()))
    csv_file.write_text(SMI_CSV)
    tool = [sys.executable, str(REPO / "tools" / "device_compare.py")]
    ok = subprocess.run([*tool, "figures", str(good), str(csv_file)], capture_output=True,
                        text=True, timeout=30)
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"] is True
    bad = subprocess.run([*tool, "verdict", str(good), "--expect", "idle"], capture_output=True,
                         text=True, timeout=30)
    assert bad.returncode == 1
    (tmp_path / "torn.json").write_text('{"cards": [')
    torn = subprocess.run([*tool, "figures", str(tmp_path / "torn.json"), str(csv_file)],
                          capture_output=True, text=True, timeout=30)
    assert torn.returncode == 2 and "not a check --json output" in json.loads(torn.stdout)["error"]
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    none = subprocess.run([*tool, "figures", str(good), str(empty)], capture_output=True,
                          text=True, timeout=30)
    assert none.returncode == 2 and "no nvidia-smi csv header" in none.stdout


# --- the script ------------------------------------------------------------------------------

LOOP_ROW = "0, 97 %, 120000 MiB, 143771 MiB, 650.00 W, 700.00 W, 61, 0x0000000000000004"
QUERY_ROW = "0, NVIDIA H200, GPU-1, 00000000:18:00.0, 97, 120000, 143771, 650.00, 700.00, 61, 0x4"
FAKE_SMI = f"""#!/bin/sh
# A fake nvidia-smi: the views tools/device_check.sh and gpusat-tui's fallback ask for.
case "$*" in
  *"-l 1"*) echo "{SMI_HEADER}"; while :; do echo "{LOOP_ROW}"; sleep 0.2; done ;;
  *--query-gpu=index,name,*) echo "{QUERY_ROW}" ;;
  *--query-gpu=index,utilization*) echo "{SMI_HEADER}"; echo "{LOOP_ROW}" ;;
  *--query-compute-apps*) ;;
  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-1)" ;;
  *) echo "Invalid combination of input arguments." >&2; exit 2 ;;
esac
"""


@pytest.fixture
def smi_bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def run_script(*args: str, path: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("GPUSAT_") and k != "OUT_DIR"}
    environ.update(PATH=path, PYTHON=sys.executable, CHECK_S="2", WARM_S="1", LOAD_WARM_S="0",
                   **env)
    return subprocess.run(["bash", str(SCRIPT), *args], env=environ, capture_output=True,
                          text=True, timeout=120, cwd=REPO)


def test_script_needs_an_output_folder() -> None:
    result = run_script(path=os.environ["PATH"])
    assert result.returncode == 2 and "usage: tools/device_check.sh OUT_DIR" in result.stderr
    assert run_script("a", "b", path=os.environ["PATH"]).returncode == 2
    helped = run_script("--help", path=os.environ["PATH"])
    assert helped.returncode == 0 and "pip download" in helped.stdout


def test_script_without_nvidia_smi_stops_at_setup(tmp_path: Path) -> None:
    result = run_script(str(tmp_path / "out"), path="/usr/bin:/bin")
    assert result.returncode == 3
    assert "nvidia-smi not found" in (tmp_path / "out" / "summary.txt").read_text()


def test_script_runs_every_step_on_a_fake_and_says_what_failed(
    tmp_path: Path, smi_bin: Path
) -> None:
    out = tmp_path / "out"
    result = run_script(path=f"{smi_bin}:/usr/bin:/bin", OUT_DIR=str(out),
                        TRAIN_JOB=str(tmp_path / "no_such_job.py"))
    summary = (out / "summary.txt").read_text()
    assert result.returncode == 1, summary + result.stderr
    # (a) ran: the figures agree with the fake nvidia-smi, but NVML did not answer here.
    assert "FAIL  (a) check --json vs nvidia-smi, NVML path" in summary
    compared = json.loads((out / "compare_load.json").read_text())
    figures = [c for c in compared["checks"] if c["check"] != "NVML path used"]
    assert figures and all(c["ok"] for c in figures), figures
    assert [c["tools"] for c in compared["checks"] if c["check"] == "NVML path used"] == [
        ["nvidia-smi"]
    ]
    assert compared["throttle"] == {"nvidia:0": {"power-cap": compared["frames"]}}
    assert "NOTE  the load did not run" in summary  # no CUDA on this machine
    # (b) is skipped with a clear message when the training job is not there.
    assert "SKIP  (b) input-bound" in summary and "is not in this checkout" in summary
    assert "SKIP  (b) compute-bound" in summary
    # (c) needs the real NVML.
    assert "FAIL  (c) per-poll NVML cost" in summary
    assert "device check: FAILED steps above" in summary


def test_script_pack_leaves_one_archive_and_the_summary(tmp_path: Path, smi_bin: Path) -> None:
    out = tmp_path / "out"
    run = run_script(str(out), path=f"{smi_bin}:/usr/bin:/bin", PACK="1",
                     TRAIN_JOB=str(tmp_path / "none.py"))
    left = sorted(p.name for p in out.iterdir())
    log = (out / "log.txt").read_text()[-2000:] if (out / "log.txt").exists() else ""
    assert left == ["results.tgz", "summary.txt"], (run.stdout, run.stderr[-2000:], log)
    with tarfile.open(out / "results.tgz") as tar:
        names = {Path(n).name for n in tar.getnames()}
    assert {"check_load.json", "smi_load.csv", "record_load.jsonl", "log.txt"} <= names
