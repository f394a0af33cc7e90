"""Fake ``hy-smi`` output in the real format (template: the BW101 sample with Dec%/Enc%).

- `render`: the plain ``hy-smi`` table (HCU header, Dec%/Enc% columns, trailing spaces).
- `render_processes`: ``hy-smi --showpids --showpidgpus`` (rocm-smi's format: hy-smi is its
  fork; no real hy-smi process output was available).
- `render_for_args`: what the tool prints for an argv.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusat_tui.collectors.hy_smi import SPECS
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats import rocm_smi
from tests.fakes.formats._common import by_query_name, na_or, respond

_WIDTH = 96


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """The plain hy-smi table (leading empty line, '=' banners, padded cells)."""
    del processes
    lines = [
        "",
        " System Management Interface ".center(_WIDTH, "="),
        "=" * _WIDTH,
        "HCU     Temp     AvgPwr     Perf     PwrCap     VRAM%      HCU%      Dec%      Enc%  "
        "    Mode     ",
    ]
    for card in cards:
        pct = None
        if card.mem_used_mib is not None and card.mem_total_mib:
            pct = round(100.0 * card.mem_used_mib / card.mem_total_mib)
        lines.append(
            f"{card.index:<8}{na_or(card.temp_c, '{:.1f}C'):<9}{na_or(card.power_w, '{:.1f}W'):<11}"
            f"{'auto':<9}{na_or(card.power_cap_w, '{:.1f}W'):<11}{na_or(pct, '{:.0f}%'):<11}"
            f"{na_or(card.util_pct, '{:.1f}%'):<10}"
            f"{na_or(card.extras.get('dec_pct', 0.0), '{:.1f}%'):<10}"
            f"{na_or(card.extras.get('enc_pct', 0.0), '{:.1f}%'):<10}{'Normal':<9}"
        )
    lines += ["=" * _WIDTH, " End of SMI Log ".center(_WIDTH, "=")]
    return "\n".join(lines) + "\n"


def render_processes(
    cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    return rocm_smi.render_processes(cards, processes)


def render_json(cards: Sequence[FakeCard]) -> str:
    """``hy-smi --showmeminfo vram --json`` as the BW-series tool prints it: one line, every value
    a string, and the commas after the first two power fields missing (samples/smi/hygon/
    hy-smi-json-2xBW-malformed-missing-commas-98pct-vram-held.json.txt). No "Card Series": the
    table names no card either, so a fake card stays nameless whichever view answers."""
    parts = []
    for c in cards:
        power = na_or(c.power_w, "{:.1f}")
        parts.append(
            f'"card{c.index}": {{'
            f'"Average Graphics Package Power (W)": "{power}""Average GFX Core Power (W)": '
            f'"20.0""Average Memory Power (W)": "38.0", '
            f'"Temperature (Sensor edge) (C)": "{na_or(c.temp_c, "{:.1f}")}", '
            f'"HCU use (%)": "{na_or(c.util_pct, "{:.1f}")}", '
            f'"vram Total Memory (MiB)": "{na_or(c.mem_total_mib, "{:.0f}")}", '
            f'"vram Total Used Memory (MiB)": "{na_or(c.mem_used_mib, "{:.0f}")}"}}'
        )
    return "{" + ", ".join(parts) + "}"


def render_for_args(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    views = by_query_name(SPECS[0], {
        "table": lambda: render(cards),
        "json": lambda: render_json(cards),
        "pids": lambda: render_processes(cards, processes),
    })
    return respond(args, views, rocm_smi.usage(args).replace("rocm-smi", "hy-smi"))
