"""The training process(es) and their DataLoader workers: CPU % each, count, states.

Drawn as text rather than a DataTable: it changes every frame and a text block is far cheaper
to rebuild than table rows; names go through `literal` so they display exactly.
"""

from __future__ import annotations

from collections import Counter

from rich.text import Text

from gpusat_tui.model import ProcessSample
from gpusat_tui.ui.text import clean, fmt
from gpusat_tui.ui.widgets.cards import CachedStatic


def process_summary(processes: list[ProcessSample]) -> str:
    """``1 trainer · 4 workers (3 running, 1 disk-sleep) · workers 312% CPU``."""
    trainers = [p for p in processes if p.role == "trainer"]
    workers = [p for p in processes if p.role == "dataloader_worker"]
    if not processes:
        return "No training process found (use --pid PID to point at one)."
    states = Counter(p.state or "?" for p in workers)
    parts = [f"{len(trainers)} trainer{'s' if len(trainers) != 1 else ''}"]
    worker_part = f"{len(workers)} worker{'s' if len(workers) != 1 else ''}"
    if states:
        worker_part += " (" + ", ".join(f"{n} {s}" for s, n in sorted(states.items())) + ")"
    parts.append(worker_part)
    cpu = [p.cpu_pct for p in workers if p.cpu_pct is not None]
    if cpu:
        parts.append(f"workers {sum(cpu):.0f}% CPU")
    return " · ".join(parts)


def process_text(processes: list[ProcessSample], max_rows: int = 12) -> Text:
    """Summary line, then one line per process (trainer first, its workers under it)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(process_summary(processes), style="bold")
    ordered = sorted(
        processes,
        key=lambda p: (p.trainer_pid or p.pid, p.role != "trainer", -(p.cpu_pct or 0.0), p.pid),
    )
    for proc in ordered[:max_rows]:
        role = "trainer" if proc.role == "trainer" else " worker"
        cpu = fmt(proc.cpu_pct, "%")
        line = f"\n{role} {proc.pid:>7} {cpu:>6} {clean(proc.state or '?', 12):<10} "
        text.append(line)
        text.append(clean(proc.name, 60))
        if proc.role == "trainer" and proc.pin_cpu_pct is not None:
            text.append(f"  pin-memory {proc.pin_cpu_pct:.0f}%")
    if len(ordered) > max_rows:
        text.append(f"\n… {len(ordered) - max_rows} more")
    return text


class ProcessPanel(CachedStatic):
    """Updated only when the process figures changed."""

    def show_processes(self, processes: list[ProcessSample]) -> None:
        # Keyed on the text as shown (CPU % rounded): a worker going from 41.2 to 41.4 % is
        # not worth a repaint.
        text = process_text(processes)
        self.show(text.plain, text)
