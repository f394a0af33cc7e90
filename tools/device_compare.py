"""Compare ``gpusat-tui check --json`` with ``nvidia-smi`` sampled over the same seconds, and
check the verdicts of a device run. Standard library only (it runs on the bare GPU machine).

    python3 tools/device_compare.py figures CHECK_JSON SMI_CSV [--record REC_JSONL]
    python3 tools/device_compare.py verdict CHECK_JSON --expect starving:input-bound [--gpm]

``figures``: per card, the means of util, memory used, power and temperature and the power
cap must agree within `TOLERANCES`; with ``--record`` (the run's ``check --record`` file) every
NVIDIA card must have been read by ``nvml`` (the in-process path, not the nvidia-smi fallback),
and the monitor's own CPU is summarised. ``verdict``: the card(s) holding memory have the
expected kind (and cause), and with ``--gpm`` their ``why`` quotes SM activity (GPM).

Prints one JSON object (``{"ok": bool, "checks": [...], ...}``); exit status 0 when every check
passed, 1 when one failed, 2 on unreadable input. Used by tools/device_check.sh.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

#: figure -> (absolute tolerance, relative tolerance): agree when within either.
TOLERANCES: dict[str, tuple[float, float]] = {
    "util_pct": (10.0, 0.0),
    "mem_used_mib": (512.0, 0.02),
    "power_w": (25.0, 0.10),
    "power_cap_w": (1.0, 0.0),
    "temp_c": (3.0, 0.0),
}
#: nvidia-smi --query-gpu field -> check --json figure.
SMI_FIELDS: dict[str, str] = {
    "utilization.gpu": "util_pct",
    "memory.used": "mem_used_mib",
    "power.draw": "power_w",
    "power.limit": "power_cap_w",
    "enforced.power.limit": "power_cap_w",
    "temperature.gpu": "temp_c",
}
_UNIT = re.compile(r"\s*\[[^\]]*\]\s*$")
_NUM = re.compile(r"[-+]?\d+(?:\.\d+)?")


class InputError(Exception):
    """A file that cannot be read as what it should be."""


def _number(cell: str) -> float | None:
    match = _NUM.search(cell)
    if match is None or "n/a" in cell.lower() or "not supported" in cell.lower():
        return None
    return float(match.group())


def read_smi_csv(text: str) -> dict[int, dict[str, list[float]]]:
    """``nvidia-smi --query-gpu=index,... --format=csv[,nounits] -l 1`` -> per index, the
    samples of each figure. The header (repeated or not) names the fields."""
    fields: list[str] | None = None
    samples: dict[int, dict[str, list[float]]] = {}
    for row in csv.reader(io.StringIO(text), skipinitialspace=True):
        if not row or not any(cell.strip() for cell in row):
            continue
        names = [_UNIT.sub("", c).strip().lower() for c in row]
        if "index" in names:
            fields = names
            continue
        if fields is None or len(row) != len(fields):
            continue
        values = dict(zip(fields, row, strict=True))
        index = _number(values.get("index", ""))
        if index is None:
            continue
        card = samples.setdefault(int(index), {})
        for smi_name, figure in SMI_FIELDS.items():
            if smi_name in values and (value := _number(values[smi_name])) is not None:
                card.setdefault(figure, []).append(value)
    if fields is None:
        raise InputError("no nvidia-smi csv header (with an index field) found")
    return samples


def _agree(figure: str, mine: float, theirs: float) -> bool:
    absolute, relative = TOLERANCES[figure]
    return abs(mine - theirs) <= max(absolute, relative * abs(theirs))


def compare_figures(
    report: dict[str, Any], smi: dict[int, dict[str, list[float]]],
    record: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    checks: list[dict[str, Any]] = []
    whole = [c for c in report.get("cards", []) if c.get("vendor") == "nvidia"
             and not c.get("instance")]
    if not whole:
        checks.append({"check": "nvidia cards in check --json", "ok": False,
                       "detail": "no NVIDIA card"})
    for card in whole:
        theirs = smi.get(int(card["index"]))
        if not theirs:
            checks.append({"check": f"{card['id']} in nvidia-smi", "ok": False})
            continue
        for figure in TOLERANCES:
            mine = card.get(figure)
            mine = mine.get("mean") if isinstance(mine, dict) else mine
            samples = theirs.get(figure)
            if mine is None or not samples:
                checks.append({"check": f"{card['id']} {figure}", "ok": False,
                               "detail": f"check {mine!r}, nvidia-smi {len(samples or [])} "
                                         "samples"})
                continue
            smi_mean = statistics.fmean(samples)
            checks.append({
                "check": f"{card['id']} {figure}", "ok": _agree(figure, mine, smi_mean),
                "check_json": round(mine, 2), "nvidia_smi": round(smi_mean, 2),
                "tolerance": TOLERANCES[figure],
            })
    summary: dict[str, Any] = {}
    if record is not None:
        frames = [r for r in record if r.get("type") != "header"]
        tools = sorted({c.get("tool") for f in frames for c in f.get("cards", [])
                        if c.get("vendor") == "nvidia"}, key=str)
        checks.append({"check": "NVML path used", "ok": bool(frames) and tools == ["nvml"],
                       "tools": tools})
        cpu = [f["monitor_cpu_pct"] for f in frames
               if isinstance(f.get("monitor_cpu_pct"), int | float)]
        summary["monitor_cpu_pct_mean"] = round(statistics.fmean(cpu), 3) if cpu else None
        summary["monitor_cpu_pct_max"] = round(max(cpu), 3) if cpu else None
        summary["frames"] = len(frames)
    gpm = sorted({k for c in report.get("cards", []) for k in c.get("extras") or {}})
    summary["gpm_fields"] = gpm
    summary["throttle"] = {c["id"]: c.get("throttle") for c in report.get("cards", [])}
    return {"ok": all(c["ok"] for c in checks), "checks": checks, **summary}


def check_verdict(report: dict[str, Any], expect: str, gpm: bool) -> dict[str, Any]:
    kind, _, cause = expect.partition(":")
    busy = [c for c in report.get("cards", [])
            if (c.get("mem_used_mib") or {}).get("mean") not in (None, 0)
            and (c.get("mem_pct") or {}).get("mean", 0) >= 1.0]
    checks: list[dict[str, Any]] = []
    if not busy:
        checks.append({"check": "a card holding memory", "ok": False})
    for card in busy:
        verdict = card.get("verdict") or {}
        got = (verdict.get("kind"), verdict.get("cause"))
        ok = got[0] == kind and (not cause or got[1] == cause)
        checks.append({"check": f"{card['id']} verdict", "ok": ok, "expected": expect,
                       "got": ":".join(str(g) for g in got if g)})
        if gpm:
            quoted = any("SM activity (GPM)" in w for w in verdict.get("why", []))
            checks.append({"check": f"{card['id']} why quotes GPM", "ok": quoted,
                           "why": verdict.get("why", [])})
    return {"ok": all(c["ok"] for c in checks), "checks": checks,
            "overall": report.get("verdict")}


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a check --json output ({exc})") from exc
    if not isinstance(data, dict) or "cards" not in data:
        raise InputError(f"{path}: not a check --json output (no cards)")
    return data


def _load_record(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a torn last line
            if isinstance(row, dict):
                rows.append(row)
    except OSError as exc:
        raise InputError(f"{path}: {exc}") from exc
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    fig = sub.add_parser("figures", help="check --json against nvidia-smi samples")
    fig.add_argument("check_json", type=Path)
    fig.add_argument("smi_csv", type=Path)
    fig.add_argument("--record", type=Path)
    ver = sub.add_parser("verdict", help="the expected verdict of the busy card(s)")
    ver.add_argument("check_json", type=Path)
    ver.add_argument("--expect", required=True, help="KIND or KIND:CAUSE")
    ver.add_argument("--gpm", action="store_true", help="why must quote SM activity")
    args = parser.parse_args(argv)
    try:
        report = _load_json(args.check_json)
        if args.what == "figures":
            try:
                smi_text = args.smi_csv.read_text()
            except OSError as exc:
                raise InputError(f"{args.smi_csv}: {exc}") from exc
            record = _load_record(args.record) if args.record else None
            result = compare_figures(report, read_smi_csv(smi_text), record)
        else:
            result = check_verdict(report, args.expect, args.gpm)
    except InputError as exc:
        print(json.dumps({"ok": False, "error": str(exc)}))
        return 2
    print(json.dumps(result, indent=1))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
