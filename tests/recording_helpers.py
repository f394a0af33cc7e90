"""Frames and sources shared by the recording, replay and report tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from gpusat_tui.model import (
    CardProcess,
    CardReading,
    Frame,
    HostSample,
    ProcessSample,
    RecordingHeader,
    ToolError,
)
from gpusat_tui.sources.recording.recorder import Recorder


def rich_frame(seq: int, t0: float = 1_700_000_000.0, dt: float = 1.0, cards: int = 2) -> Frame:
    """A frame using every part of the model, with figures that change with ``seq``."""
    return Frame(
        t=t0 + seq * dt,
        seq=seq,
        cards=[
            CardReading(
                vendor="hygon",
                index=i,
                name="K100_AI",
                uuid=f"uuid-{i}",
                bus_id=f"0000:{i:02x}:00.0",
                util_pct=float((seq * 7 + i * 13) % 101),
                mem_used_mib=1000.0 + seq + i,
                mem_total_mib=65520.0,
                power_w=None if seq % 5 == 0 else 150.5 + i,
                power_cap_w=400.0,
                temp_c=45.0 + i,
                extras={"hbm_bw_pct": 12.5, "note": "x", "missing": None},
                tool="hy-smi",
                stale_s=2.0 if seq % 7 == 3 else None,
            )
            for i in range(cards)
        ],
        card_processes=[CardProcess(pid=4242, card_id="hygon:0", name="python", mem_used_mib=900)],
        processes=[
            ProcessSample(pid=4242, role="trainer", name="python", cpu_pct=99.0, state="running",
                          card_ids=["hygon:0"], pin_cpu_pct=2.5, num_threads=12),
            ProcessSample(pid=4243, role="dataloader_worker", name="pt_data_worker",
                          cpu_pct=None if seq == 0 else 97.0, state="disk-sleep",
                          trainer_pid=4242, card_ids=["hygon:0"]),
        ],
        host=HostSample(cpu_pct=55.0, iowait_pct=1.5, cpu_count=16),
        errors=[ToolError(tool="rocm-smi", message="did not answer", kind="timeout")]
        if seq % 4 == 1 else [],
        notes=["PID 9 listed by hy-smi is not visible here"] if seq == 2 else [],
        monitor_cpu_pct=0.3,
        raw={"hy-smi": "garbage \x1b[31m output\n"} if seq == 3 else {},
    )


def simple_frame(seq: int, t0: float = 1000.0, dt: float = 1.0, cards: int = 1) -> Frame:
    return Frame(
        t=t0 + seq * dt,
        seq=seq,
        cards=[
            CardReading(vendor="nvidia", index=i, util_pct=float(seq % 100), power_w=100.0,
                        power_cap_w=300.0, mem_used_mib=100.0, mem_total_mib=1000.0)
            for i in range(cards)
        ],
    )


def header(interval: float = 1.0, **kw: object) -> RecordingHeader:
    return RecordingHeader(
        gpusat_tui_version="0.1.0", host="test", tools={"hy-smi": "1.2"},
        interval_s=interval, started_at=1_700_000_000.0, **kw,  # type: ignore[arg-type]
    )


def write_recording(
    path: Path, frames: Sequence[Frame], hdr: RecordingHeader | None = None
) -> Path:
    with Recorder(path, hdr or header(), mode="overwrite") as rec:
        for frame in frames:
            rec.write(frame)
    return path


class ListSource:
    """An in-memory FrameSource; records whether it was closed."""

    label = "memory"

    def __init__(self, frames: Sequence[Frame], versions: dict[str, str | None] | None = None):
        self._frames = list(frames)
        self.closed = False
        if versions is not None:
            self.versions = versions

    async def frames(self) -> AsyncIterator[Frame]:
        for frame in self._frames:
            await asyncio.sleep(0)
            yield frame

    async def aclose(self) -> None:
        self.closed = True


def load_make_sessions() -> object:
    """``tools/make_sessions.py`` as a module (tools/ is not a package)."""
    import importlib.util
    import sys

    name = "gpusat_make_sessions"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[1] / "tools" / "make_sessions.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
