"""The training process(es) and their DataLoader workers: CPU % each, count, states.

Drawn as text rather than a DataTable: it changes every frame and a text block is far cheaper
to rebuild than table rows; names go through `literal` so they display exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from rich.text import Text

from gpusat_tui.analysis.outside_stacks.outside_words import dump_row
from gpusat_tui.analysis.probe_reading.probe_facts import sample_phase
from gpusat_tui.analysis.probe_reading.probe_words import (
    NO_BATCH,
    allocator_detail,
    figures,
    framework_words,
    lines_words,
    phases_words,
    place_words,
    silent_words,
    step_words,
    throughput_words,
    wait_words,
)
from gpusat_tui.analysis.probe_reading.stack_shares import stack_shares
from gpusat_tui.model import ProbeSample, ProcessSample
from gpusat_tui.text import clean
from gpusat_tui.ui.text import fmt
from gpusat_tui.ui.widgets.cards import CachedStatic

if TYPE_CHECKING:
    from gpusat_tui.analysis.probe_reading.probe_ranks import Rank


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


def card_processes(
    processes: list[ProcessSample], probes: list[ProbeSample], card_id: str | None
) -> tuple[list[ProcessSample], list[ProbeSample], bool]:
    """The trainers that drive ``card_id`` (by the card's process list or their probe), their
    workers and probes, and True; or everything and False where none is tied to the card
    (a tool that lists no processes, a container's hidden PIDs)."""
    if card_id is None:
        return processes, probes, False
    probed = {p.pid for p in probes if p.card_id == card_id}
    trainers = {
        p.pid for p in processes
        if p.role == "trainer" and (card_id in p.card_ids or p.pid in probed)
    }
    if not trainers and not probed:
        return processes, probes, False
    shown = [
        p for p in processes
        if p.pid in trainers or (p.role != "trainer" and p.trainer_pid in trainers)
    ]
    return shown, [p for p in probes if p.pid in trainers or p.pid in probed], True


#: Said where no trainer runs the probe: the figures below are the host's view only.
NO_PROBE = "no probe: start the job with `gpusat-tui run -- ...` to measure data wait"


def windowed(
    probes: list[ProbeSample], ranks: Mapping[int, Rank]
) -> tuple[list[ProbeSample], float | None]:
    """The probes with the figures the verdict's why quotes (``ranks``: its window's, by PID:
    data wait, step time, samples and batches a second), and that window's span; the probes
    as published where the window has no figure. One source: a title beside the why never
    quotes the probe's latest interval under the window's label."""
    out: list[ProbeSample] = []
    spans: list[float] = []
    for probe in probes:
        rank = ranks.get(probe.pid)
        if rank is not None and rank.wait_pct is not None and rank.span_s > 0:
            update: dict[str, float | None] = {"data_wait_pct": rank.wait_pct}
            for name in ("step_ms", "samples_per_s", "batches_per_s"):
                value = getattr(rank, name)
                if value is not None:
                    update[name] = value
            out.append(probe.model_copy(update=update))
            spans.append(rank.span_s)
        else:
            out.append(probe)
    return out, (max(spans) if spans and len(spans) == len(probes) else None)


def probe_summary(probes: list[ProbeSample], span_s: float | None = None) -> str:
    """The job as the probe measured it: ``data wait 12–34% over the last 11 s · step
    205–230 ms · 2,048 samples/s (4 ranks)``; "" without probes (the caller says `NO_PROBE`).
    ``span_s``: the window the waits were measured over (`windowed`)."""
    if not probes:
        return ""
    samples = [p.samples_per_s for p in probes if p.samples_per_s is not None]
    batches = [p.batches_per_s for p in probes if p.batches_per_s is not None]
    summary = figures((
        wait_words([p.data_wait_pct for p in probes if p.data_wait_pct is not None],
                   span_s=span_s, tight=True),
        step_words([p.step_ms for p in probes if p.step_ms is not None]),
        throughput_words(sum(samples) if samples else None,
                         sum(batches) if batches else None, tight=True),
    )) or f"probe: {NO_BATCH}"
    if any(sample_phase(p) == "eval" for p in probes):
        # Batches without optimizer steps after steps were counted: an evaluation, not a
        # stalled job (a loop that never stepped an optimizer is not said to be in one).
        summary += " · eval"
    if len(probes) > 1:
        summary += f" ({len(probes)} ranks)"
    stale = [p.age_s for p in probes if p.age_s is not None]
    return figures((summary, silent_words(max(stale) if stale else None,
                                          label="probe silent")))


def probe_row(
    probe: ProbeSample, *, allocator: bool = False, card: bool = True,
    span_s: float | None = None,
) -> str:
    """One rank's figures: ``rank 0 nvidia:0 (torch) · wait 34% over the last 11 s · step
    210 ms · 512 samples/s`` (``card``: with the card it drives; ``span_s``: see `windowed`)."""
    who = f"rank {probe.rank}" if probe.rank is not None else f"pid {probe.pid}"
    if card and probe.card_id:
        who += f" {clean(probe.card_id, 24)}"
    return figures((
        who + framework_words(probe.framework),
        wait_words(probe.data_wait_pct, span_s=span_s, note=probe.data_wait_note, tight=True,
                   label="wait"),
        step_words(probe.step_ms),
        throughput_words(probe.samples_per_s, probe.batches_per_s, tight=True),
        silent_words(probe.age_s),
        allocator_detail(probe.alloc) if allocator else None,
    ))


#: A trainer whose stack has not moved for this long says where it stands.
STILL_SHOWN_S = 5.0


def stack_rows(probe: ProbeSample, rank: Rank | None = None) -> list[str]:
    """A probed trainer's step as the stack sampler saw it: ``step 458 ms: data 72% ·
    forward 10% · …``, its hottest lines (``hot train.py:88 main 42% · …``) and, once its
    stack has stood still `STILL_SHOWN_S`, where. Over the verdict's window (``rank``) where
    it has two publications, else since the probe started. [] without a sampling probe."""
    shares = rank.stack if rank is not None and rank.stack is not None else (
        stack_shares(None, probe))
    if shares is None:
        return []
    step = rank.step_ms if rank is not None and rank.step_ms is not None else probe.step_ms
    rows = [phases_words(step, shares.phases, tight=True)]
    hot = lines_words(((s.line.file, s.line.line, s.line.function, s.pct)
                       for s in shares.lines[:3]), tight=True)
    rows.append(f"hot {hot}" if hot else None)
    still = probe.stack_still_s
    if still is not None and still >= STILL_SHOWN_S:
        line = probe.stack_line
        where = f"{line.file.rsplit('/', 1)[-1]}:{line.line}" if line is not None else None
        rows.append(f"now {place_words(probe.stack_where, where)}, not moved for {still:.0f} s")
    return [row for row in rows if row]


def process_text(
    processes: list[ProcessSample],
    max_rows: int = 12,
    probes: list[ProbeSample] | None = None,
    allocator_for: Callable[[ProbeSample], bool] | None = None,
    card_id: str = "",
    span_s: float | None = None,
    ranks: Mapping[int, Rank] | None = None,
) -> Text:
    """Summary line, the probe's figures (or `NO_PROBE`), then one line per process (trainer
    first, its workers under it); a probed trainer's row carries its rank's figures, and the
    lines under it its step's phases and hottest lines (`stack_rows`; ``ranks``: the
    verdict's window, by PID).

    ``allocator_for``: whether a rank's allocator figures are worth its row (fragmenting
    suspected on its card); None shows them nowhere. ``card_id``: the card these processes
    drive, named first ("" for all of the host's).
    """
    probes = probes or []
    text = Text(no_wrap=True, overflow="ellipsis")
    if card_id:
        text.append(f"{clean(card_id, 40)}: ", style="bold")
    if processes or not probes:
        text.append(process_summary(processes), style="bold")
    else:  # probed, yet no process of it seen: "no training process found" would contradict
        text.append("its trainer's processes are not visible here (another PID namespace, or "
                    "not readable); its probe reports it", style="bold")
    summary = probe_summary(probes, span_s)
    text.append("\n")
    if summary:
        text.append("probe ", style="bold")
        text.append(summary)
    else:
        text.append(NO_PROBE, style="dim")
    by_pid = {p.pid: p for p in probes}
    trainer_pids = {p.pid for p in processes if p.role == "trainer"}
    # Ranks the process scan did not find (another PID namespace, not yet scanned) come
    # first: under a long list of workers they would be cut off.
    for probe in probes:
        if probe.pid not in trainer_pids:
            wants = allocator_for is not None and allocator_for(probe)
            row = probe_row(probe, allocator=wants, span_s=span_s)
            text.append(f"\nprobed  {probe.pid:>7} {row}")
            for line in stack_rows(probe, (ranks or {}).get(probe.pid)):
                text.append(f"\n          {clean(line, 300)}")
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
        if proc.role == "trainer":
            text.append(other_threads_words(proc))
        measured = by_pid.get(proc.pid) if proc.role == "trainer" else None
        if measured is not None:
            wants = allocator_for is not None and allocator_for(measured)
            text.append(f"  {probe_row(measured, allocator=wants, span_s=span_s)}",
                        style="bold")
            for line in stack_rows(measured, (ranks or {}).get(proc.pid)):
                text.append(f"\n          {clean(line, 300)}")
        elif proc.role == "trainer" and proc.stack_dump is not None:
            dumped = dump_row(proc.stack_dump)
            if dumped:
                text.append(f"\n          {clean(dumped, 300)}", style="dim")
    if len(ordered) > max_rows:
        text.append(f"\n… {len(ordered) - max_rows} more")
    return text


def other_threads_words(proc: ProcessSample) -> str:
    """``  threads 180% (2 busy)``: the trainer's threads other than its main and pin-memory
    threads (where tf.data or MindSpore load), shown from a tenth of a core; else empty."""
    cpu = proc.other_threads_cpu_pct
    if cpu is None or cpu < 10.0:
        return ""
    busy = f" ({proc.busy_threads} busy)" if proc.busy_threads else ""
    return f"  threads {cpu:.0f}%{busy}"


#: Polls a shorter process list must last before the panel gives its rows back (5 minutes at
#: 1 Hz). Each change of the panel's height changes the charts' and repaints all of them (a
#: trainer appearing under the 160x50 overview: ~38 KB to the terminal at once, ~2 KB a poll
#: otherwise); with 30 polls, jobs starting and ending on a shared node did that every minute.
#: Cost: up to a few blank rows under the charts for 5 minutes after a job's workers end.
SHRINK_AFTER_POLLS = 300


class ProcessPanel(CachedStatic):
    """Updated only when the process figures changed; its height only grows at once.

    A trainer's process list comes and goes with its workers (and with other jobs on a shared
    machine): a panel that followed it line for line would re-lay out the whole screen each
    time, charts included (a full repaint, measured as most of the card view's CPU on a busy
    machine). Extra rows are kept blank until the list has been shorter for
    `SHRINK_AFTER_POLLS` polls.
    """

    _rows = 0
    _shorter_for = 0

    def show_processes(
        self,
        processes: list[ProcessSample],
        probes: list[ProbeSample] | None = None,
        allocator_for: Callable[[ProbeSample], bool] | None = None,
        card_id: str = "",
        span_s: float | None = None,
        ranks: Mapping[int, Rank] | None = None,
    ) -> None:
        # Keyed on the text as shown (CPU % rounded): a worker going from 41.2 to 41.4 % is
        # not worth a repaint.
        self.show_text(process_text(processes, probes=probes, allocator_for=allocator_for,
                                    card_id=card_id, span_s=span_s, ranks=ranks))

    def show_text(self, text: Text) -> None:
        """Any text in the panel, its height kept as `show_processes` keeps it."""
        rows = text.plain.count("\n") + 1
        if rows >= self._rows:
            self._rows, self._shorter_for = rows, 0
        else:
            self._shorter_for += 1
            if self._shorter_for >= SHRINK_AFTER_POLLS:
                self._rows, self._shorter_for = rows, 0
        if rows < self._rows:
            text.append("\n" * (self._rows - rows))
        self.show(text.plain, text)
