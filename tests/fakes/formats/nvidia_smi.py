"""Fake ``nvidia-smi`` output in the real formats (templates: the 535.x samples).

- `render`: the plain ``nvidia-smi`` table (89 columns, 535 driver layout) with its process box.
- `render_csv`: ``--query-gpu=<QUERY_GPU_FIELDS> --format=csv,noheader,nounits``, with the
  clock-event reason mask as a last column when asked (``reasons=True``): a card's
  ``extras["throttle_mask"]`` (default 0). An old driver that knows only one of the two reason
  names is a fake that refuses the other argv (``refuse=[QUERY_GPU_EVENT_ARGS]``).
- `render_processes`: ``--query-compute-apps=<QUERY_APPS_FIELDS> --format=csv,noheader,nounits``.
- `render_for_args`: what the real tool prints for an argv (the three above, or its refusal).

Cards get a fake UUID and bus id derived from the index (`fake_uuid`, `fake_bus_id`), the
same in every view.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpusat_tui.collectors.nvidia_smi import (
    QUERY_APPS_ARGS,
    QUERY_GPU_ARGS,
    QUERY_GPU_EVENT_ARGS,
    QUERY_GPU_THROTTLE_ARGS,
)
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import respond

WIDTH = 89


def fake_uuid(index: int) -> str:
    return f"GPU-{index:08x}-0000-4000-8000-{index:012x}"


def fake_bus_id(index: int) -> str:
    return f"00000000:{index + 0x10:02X}:00.0"


def _fig(value: float | None, unit: str = "") -> str:
    return "N/A" if value is None else f"{value:.0f}{unit}"


def _csv_fig(value: float | None, fmt: str = "{:.0f}") -> str:
    return "[N/A]" if value is None else fmt.format(value)


def _gpu_block(card: FakeCard) -> list[str]:
    mig = str(card.extras.get("mig", "N/A"))
    name = card.name[:28]
    cell0 = f"{card.index:>4}  {name:<28}{'Off':>6} "
    cell1 = f" {fake_bus_id(card.index)} Off "
    cell2 = f"{'0':>21} "
    power = f"{_fig(card.power_w, 'W'):>17} / {_fig(card.power_cap_w, 'W'):>4} "
    line2 = (
        f"| N/A  {_fig(card.temp_c, 'C'):>4}    P0{power}|"
        f"{_fig(card.mem_used_mib, 'MiB'):>10} / {_fig(card.mem_total_mib, 'MiB'):>8} |"
        f"{_fig(card.util_pct, '%'):>8}      Default |"
    )
    return [
        f"|{cell0}|{cell1}|{cell2}|",
        line2,
        f"|{'':41}|{'':22}|{mig:>21} |",
        "+" + "-" * 41 + "+" + "-" * 22 + "+" + "-" * 22 + "+",
    ]


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """The plain ``nvidia-smi`` table for these cards, 535.x layout."""
    lines = [
        "Tue Mar  3 09:08:25 2026       ",
        "+" + "-" * (WIDTH - 2) + "+",
        "| NVIDIA-SMI 535.274.02             Driver Version: 535.274.02   CUDA Version: 12.2     |",
        "|-----------------------------------------+----------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                      |               MIG M. |",
        "|=========================================+======================+======================|",
    ]
    for card in cards:
        lines.extend(_gpu_block(card))
    lines += [
        " " * WIDTH,
        "+" + "-" * (WIDTH - 2) + "+",
        f"{'| Processes:':<{WIDTH - 1}}|",
        "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |",
        "|        ID   ID                                                             Usage      |",
        "|" + "=" * (WIDTH - 2) + "|",
    ]
    if not processes:
        lines.append(f"{'|  No running processes found':<{WIDTH - 1}}|")
    for proc in processes:
        lines.append(
            f"|  {proc.card_index:>3}   N/A  N/A  {proc.pid:>9}      C   "
            f"{proc.name[:39]:<39}{_fig(proc.mem_mib, 'MiB'):>10} |"
        )
    lines.append("+" + "-" * (WIDTH - 2) + "+")
    return "\n".join(lines) + "\n"


def render_csv(cards: Sequence[FakeCard], reasons: bool = False) -> str:
    """``--query-gpu=index,name,uuid,pci.bus_id,... --format=csv,noheader,nounits``."""
    rows = []
    for card in cards:
        mask = int(card.extras.get("throttle_mask", 0))
        rows.append(
            ", ".join(
                [
                    str(card.index), card.name, fake_uuid(card.index), fake_bus_id(card.index),
                    _csv_fig(card.util_pct), _csv_fig(card.mem_used_mib),
                    _csv_fig(card.mem_total_mib), _csv_fig(card.power_w, "{:.2f}"),
                    _csv_fig(card.power_cap_w, "{:.2f}"), _csv_fig(card.temp_c),
                    *([f"0x{mask:016X}"] if reasons else []),
                ]
            )
        )
    return "".join(row + "\n" for row in rows)


def render_processes(
    cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """``--query-compute-apps=gpu_bus_id,pid,process_name,used_gpu_memory`` (csv, no header)."""
    del cards  # processes name their card by bus id, which derives from the index
    return "".join(
        f"{fake_bus_id(p.card_index)}, {p.pid}, {p.name}, {p.mem_mib:.0f}\n" for p in processes
    )


USAGE = (
    "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"
)


def render_for_args(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """What nvidia-smi prints for ``args``; unknown args get its usage complaint (exit 2)."""
    views = {
        (): lambda: render(cards, processes),
        QUERY_GPU_EVENT_ARGS: lambda: render_csv(cards, reasons=True),
        QUERY_GPU_THROTTLE_ARGS: lambda: render_csv(cards, reasons=True),
        QUERY_GPU_ARGS: lambda: render_csv(cards),
        QUERY_APPS_ARGS: lambda: render_processes(cards, processes),
    }
    return respond(args, views, USAGE)
