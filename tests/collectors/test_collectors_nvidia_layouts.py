"""nvidia-smi 570–590 default tables (the ``+---`` border, 570/575/580/590 drivers, GB200 at
1200 W, a hard-wrapped copy): every card of every capture, exact figures. A companion of
test_collectors_nvidia.py, whose prefix and shuffle sweeps cover these samples too."""

from __future__ import annotations

import pytest

from gpusat_tui.collectors import nvidia_smi_table
from tests.collector_helpers import (
    card_figures,
    process_rows,
    sample_reader,
)

sample = sample_reader("nvidia")


def test_590_gb200_plus_border_1200w_cap() -> None:
    r = nvidia_smi_table.parse_table(
        sample("nvidia-smi-4xGB200-590.48.01-plus-border-1200W-cap.txt"))
    assert r.version == "590.48.01"
    powers = [166, 157, 150, 172]
    temps = [37, 37, 36, 36]
    assert card_figures(r.cards) == [
        (i, "NVIDIA GB200", 0.0, 0.0, 189471.0, powers[i], 1200.0, temps[i]) for i in range(4)]
    assert [c.bus_id for c in r.cards] == [
        "00000008:01:00.0", "00000009:01:00.0", "00000018:01:00.0", "00000019:01:00.0"]
    assert r.processes == []


@pytest.mark.parametrize(
    ("name", "version", "rows", "procs"),
    [
        ("nvidia-smi-2xRTX3090-575.57.08-old-rule-idle-P0-107W.txt", "575.57.08",
         [(0, "NVIDIA GeForce RTX 3090", 0.0, 0.0, 24576.0, 107.0, 350.0, 52.0),
          (1, "NVIDIA GeForce RTX 3090", 0.0, 0.0, 24576.0, 109.0, 350.0, 42.0)], []),
        ("nvidia-smi-3xL40S-570.195.03-slurm-one-llama-server-41GB-0pct.txt", "570.195.03",
         [(0, "NVIDIA L40S", 0.0, 41515.0, 46068.0, 83.0, 350.0, 44.0),
          (1, "NVIDIA L40S", 0.0, 0.0, 46068.0, 34.0, 350.0, 36.0),
          (2, "NVIDIA L40S", 0.0, 0.0, 46068.0, 23.0, 350.0, 37.0)],
         [(3330776, "nvidia:0", "...ma.cpp/build/bin/llama-server", 41504.0)]),
        ("nvidia-smi-H100-80GB-HBM3-570.195.03-slurm-MIG-Disabled.txt", "570.195.03",
         [(0, "NVIDIA H100 80GB HBM3", 0.0, 0.0, 81559.0, 104.0, 700.0, 34.0)], []),
        ("nvidia-smi-RTX3090-580.142-full-load-fan100-348W-truncated.txt", "580.142",
         [(0, "NVIDIA GeForce RTX 3090", 100.0, 20843.0, 24576.0, 348.0, 350.0, 67.0)], []),
        ("nvidia-smi-RTX5060-WSL2-580.82.02-drv581.15-proc-mem-NA.txt", "580.82.02",
         [(0, "NVIDIA GeForce RTX 5060", 1.0, 817.0, 8151.0, 12.0, 145.0, 33.0)],
         [(26, "nvidia:0", "/Xwayland", None), (35, "nvidia:0", "/Xwayland", None),
          (46, "nvidia:0", "/Xwayland", None)]),
    ],
)
def test_57x_58x_tables(name: str, version: str, rows: list[tuple], procs: list[tuple]) -> None:
    r = nvidia_smi_table.parse_table(sample(name))
    assert r.version == version
    assert card_figures(r.cards) == rows
    assert process_rows(r.processes) == procs


def test_hard_wrapped_copy_is_rejoined() -> None:
    name = "nvidia-smi-L40S-570.124.06-slurm-out-HARD-WRAPPED-lines.txt"
    r = nvidia_smi_table.parse_table(sample(name))
    assert r.version == "570.124.06"
    assert card_figures(r.cards) == [(0, "NVIDIA L40S", 0.0, 1.0, 46068.0, 33.0, 350.0, 35.0)]
    assert r.cards[0].bus_id == "00000000:25:00.0"
    assert r.processes == []
