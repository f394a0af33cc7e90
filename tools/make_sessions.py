#!/usr/bin/env python3
"""Make the sample sessions: record `gpusat-tui check --record` against fake vendor tools.

Each session follows a labelled scenario of ``tests/scenarios.py``: a fake ``nvidia-smi``
(``tests/fakes/tool.py``) prints, poll after poll, that scenario's card figures in the real
nvidia-smi format, and a real ``python -m gpusat_tui check --record FILE --interval 1`` polls it
in real time. So the card figures, timestamps, tool errors and the monitor's own CPU in these
files went through the real collector, live source and recorder.

What is not recorded for real: the trainer and DataLoader worker CPU figures and the host CPU /
iowait. A fake tool cannot fake ``psutil``, and the scenario's PIDs do not exist, so after
recording, each frame's ``processes`` and ``host`` are replaced by the scenario's figures for
that poll (matched on ``seq``), and the "PID ... is not visible here" notes this causes are
dropped. The file is rewritten through the same `Recorder`.

Usage (from the repository root; takes about as long as the longest session, ~2.5 min):

    python tools/make_sessions.py            # all sessions
    python tools/make_sessions.py idle fragmenting  # some of them
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from gpusat_tui.collectors import all_specs  # noqa: E402
from gpusat_tui.model import Frame  # noqa: E402
from gpusat_tui.sources.recording.reader import read_recording  # noqa: E402
from gpusat_tui.sources.recording.recorder import Recorder  # noqa: E402
from tests.fakes.tool import FakeBin, Step  # noqa: E402
from tests.scenarios import (  # noqa: E402
    SCENARIOS,
    Scenario,
)

#: Output file -> (scenario, polls). The bundled demo (gpusat_tui/data/demo.jsonl, also
#: samples/sessions/demo.jsonl) follows its own story instead: tools/make_demo.py.
SESSIONS: dict[str, tuple[Scenario, int]] = {
    "samples/sessions/saturated.jsonl": (SCENARIOS["saturated_steady"], 60),
    "samples/sessions/starving.jsonl": (SCENARIOS["starving_input_bound"], 60),
    "samples/sessions/fragmenting.jsonl": (SCENARIOS["fragmenting"], 60),
    "samples/sessions/imbalanced.jsonl": (SCENARIOS["imbalanced_4_cards"], 60),
    "samples/sessions/idle.jsonl": (SCENARIOS["idle"], 40),
}
#: Scenarios a fake tool cannot record: GPM figures (SM activity) come from NVML's GPM API,
#: which the fake nvidia-smi (CSV fields only) does not give.
NOT_RECORDED = {"collective_wait_gpm"}
# Every other labelled scenario gets its own session too (each scenario is also a
# recording), named after the scenario: 60 polls, 45 for the step changes.
SESSIONS.update(
    {
        f"samples/sessions/{name}.jsonl": (scenario, 45 if scenario.change_at else 60)
        for name, scenario in SCENARIOS.items()
        if name not in {s.name for s, _ in SESSIONS.values()} and name not in NOT_RECORDED
    }
)


def spec_for(scenario: Scenario) -> object:
    return next(s for s in all_specs() if s.tool == scenario.tool)


def start_check(
    scenario: Scenario, out: Path, polls: int, interval: float, workdir: Path
) -> subprocess.Popen[str]:
    """Start ``check --record`` against a fake tool that follows ``scenario`` (not waited)."""
    fakes = FakeBin(workdir / "bin")
    fakes.dir.mkdir(parents=True, exist_ok=True)
    steps = [
        Step(cards=tuple(scenario.cards(k)), processes=tuple(scenario.tool_processes(k)))
        for k in range(polls)
    ]
    fakes.add_for_spec(spec_for(scenario), steps)  # type: ignore[arg-type]
    cmd = [
        sys.executable, "-m", "gpusat_tui", "check", "--json",
        "--duration", f"{polls * interval:g}", "--interval", f"{interval:g}",
        "--record", str(out), "--force",
    ]
    return subprocess.Popen(
        cmd, cwd=REPO, env=fakes.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )


def overlay_processes(path: Path, scenario: Scenario) -> int:
    """Put the scenario's process and host figures into each recorded frame (see docstring)."""
    header, reader = read_recording(path)
    frames: list[Frame] = []
    for frame in reader:
        frames.append(
            frame.model_copy(
                update={
                    "processes": scenario.processes(frame.seq),
                    "host": scenario.host(frame.seq),
                    "notes": [n for n in frame.notes if "not visible" not in n],
                }
            )
        )
    with Recorder(path, header, mode="overwrite") as rec:
        for frame in frames:
            rec.write(frame)
    return len(frames)


def make(names: Sequence[str], interval: float = 1.0) -> None:
    jobs = []
    with tempfile.TemporaryDirectory(prefix="gpusat-sessions-") as tmp:
        for out, (scenario, polls) in SESSIONS.items():
            if names and Path(out).stem not in names:
                continue
            work = Path(tmp) / Path(out).stem
            target = REPO / out
            target.parent.mkdir(parents=True, exist_ok=True)
            proc = start_check(scenario, target, polls, interval, work)
            jobs.append((out, scenario, proc))
            print(f"recording {out}: {scenario.name}, {polls} polls ...", flush=True)
        for out, scenario, proc in jobs:
            _, stderr = proc.communicate()
            if proc.returncode != 0:
                sys.exit(f"{out}: check exited {proc.returncode}: {stderr.strip()}")
            n = overlay_processes(REPO / out, scenario)
            size = os.path.getsize(REPO / out)
            print(f"{out}: {n} frames, {size / 1024:.0f} KiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="session names (file stems); default all")
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    make(args.names, args.interval)


if __name__ == "__main__":
    main()
