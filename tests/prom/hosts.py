"""Fake hosts for the exporter and fleet tests: an nvidia-smi fake per host, one scenario each.

``saturated``: every card busy (util 96-100 %, power 82-90 % of cap, VRAM steady).
``starving``: util swinging between bursts and waits, power 25-40 % of cap, VRAM held.
Figures are drawn per call from a seeded generator, so a test knows the range of every one.
"""

from __future__ import annotations

import random
import re
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from gpusat_tui.collectors import all_specs
from tests.fakes import FakeCard
from tests.fakes.tool import FakeBin

REPO = Path(__file__).resolve().parents[2]

CAP_W = 400.0
TOTAL_MIB = 81920.0
#: Calls rendered per fake (past the end the last call repeats).
STEPS = 240


def _card(index: int, util: float, mem_pct: float, power_frac: float) -> FakeCard:
    return FakeCard(
        index=index, name="NVIDIA H100 80GB HBM3", util_pct=round(util),
        mem_used_mib=round(TOTAL_MIB * mem_pct / 100), mem_total_mib=TOTAL_MIB,
        power_w=round(CAP_W * power_frac, 1), power_cap_w=CAP_W, temp_c=55.0,
    )


def scenario_cards(kind: str, cards: int, tick: int, seed: int = 0) -> list[FakeCard]:
    rng = random.Random(f"{kind}:{seed}:{tick}")
    if kind == "saturated":
        return [_card(i, rng.uniform(96, 100), 71.0, rng.uniform(0.82, 0.90))
                for i in range(cards)]
    if kind == "starving":
        burst = tick % 4 == 0
        return [_card(i, rng.uniform(92, 100) if burst else rng.uniform(0, 8), 60.0,
                      rng.uniform(0.25, 0.40)) for i in range(cards)]
    raise ValueError(kind)


def fake_host(root: Path, kind: str, cards: int = 2, steps: int = STEPS) -> FakeBin:
    """A bin dir with an nvidia-smi fake that follows scenario ``kind``."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    fakes = FakeBin(bin_dir)
    spec = next(s for s in all_specs() if s.tool == "nvidia-smi")
    fakes.add_for_spec(spec, [scenario_cards(kind, cards, k) for k in range(steps)])
    return fakes


_URL = re.compile(r"serving (http://\S+/metrics)")


@dataclass
class Exporter:
    """A ``gpusat-tui export`` subprocess against one fake host; stderr goes to ``log``."""

    proc: subprocess.Popen[bytes]
    url: str
    host: str
    log: Path

    @property
    def address(self) -> str:
        return self.url.removeprefix("http://").removesuffix("/metrics")

    def scrape(self, timeout: float = 5.0) -> str:
        with urllib.request.urlopen(self.url, timeout=timeout) as answer:
            return answer.read().decode()

    def stop(self) -> int:
        """SIGTERM, then SIGKILL after 10 s; returns the exit status."""
        return stop_process(self.proc)


def stop_process(proc: subprocess.Popen[bytes], grace: float = 10.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return proc.returncode


def start_exporter(
    fakes: FakeBin, host: str, *extra: str, interval: float = 0.25, timeout: float = 20.0
) -> Exporter:
    """Start an exporter on a free loopback port (port 0) and wait for its URL."""
    log = fakes.dir.parent / f"export-{host}.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpusat_tui", "export", "--listen", "127.0.0.1:0",
             "--interval", str(interval), "--host-label", host, *extra],
            env=fakes.env(), cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=err,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = _URL.search(log.read_text(errors="replace"))
        if match:
            return Exporter(proc, match.group(1), host, log)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    stop_process(proc, 1.0)
    raise AssertionError(f"exporter did not start (rc={proc.returncode}): {log.read_text()}")
