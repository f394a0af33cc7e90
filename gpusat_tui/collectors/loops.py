"""Loop modes of tools otherwise called once per poll, as `Stream`s keyed by tool name.

Kept apart from the tools' own modules (whose parsers they reuse unchanged) so that a loop mode
is one declaration: which argv, how its rows group into samples, which parser. The live source
attaches them by tool name (`loop_stream`); whether each one is the default was measured in
``benchmarks/bench_live.py`` (figures in the README).

* ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N``: one csv row per GPU per
  sample, no header, the same fields as the call it replaces (the clock-event reason mask
  included) parsed by `nvidia_smi.parse_query_gpu_event`, a sample ending when a GPU index
  repeats or the output pauses. Default (cheaper than a call per poll, and a real nvidia-smi
  call also pays a driver initialisation every time). A driver that refuses the reason field
  (before 535) refuses the loop too, before any record: the tool is then called per poll,
  where the query's fallback chain finds the field it knows. Read through a pty: whether
  nvidia-smi flushes each sample into a pipe is not verified, and samples arriving 4 KiB at
  a time would read as a tool going quiet. Untested against a real nvidia-smi.
* ``npu-smi info watch``: header once, one row per chip per sample (`npu_smi_watch`). Not the
  default: the watch view has Memory(%) but no HBM MiB, no names or bus ids, so it would lose
  figures the default view has. Read through a pty (its users run it under ``stdbuf -oL``).
"""

from __future__ import annotations

from gpusat_tui.collectors import npu_smi_watch, nvidia_smi, nvidia_smi_table
from gpusat_tui.collectors.base import Stream
from gpusat_tui.collectors.records import RowGroups

__all__ = ["LOOP_STREAMS", "loop_stream"]


def _csv_index(line: str, header: str | None) -> str | None:
    cell = line.split(",", 1)[0].strip()
    return cell if cell.isdigit() else None


def _nvidia_rows() -> RowGroups:
    return RowGroups(is_header=lambda line: line.lstrip().lower().startswith("index"),
                     key=_csv_index)


LOOP_STREAMS: dict[str, Stream] = {
    nvidia_smi_table.TOOL: Stream(
        name="-lms",
        args=(*nvidia_smi.QUERY_GPU_EVENT_ARGS, "-lms", "{interval_ms}"),
        parse=nvidia_smi.parse_query_gpu_event,
        framer=_nvidia_rows,
        pty=True,
        preferred=True,
    ),
    npu_smi_watch.TOOL: npu_smi_watch.WATCH_STREAM,
}


def loop_stream(tool: str) -> Stream | None:
    """The loop mode of ``tool``, or None when it has none."""
    return LOOP_STREAMS.get(tool)
