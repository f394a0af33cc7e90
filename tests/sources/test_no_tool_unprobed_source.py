"""The live source with no tool and trainers with no probe (a stand-in process monitor): one
given with ``--pid`` starts the no-tool mode and is followed; one found only by its DataLoader
workers (another user's job, perhaps) is not followed, nor are its workers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpusat_tui.model import CardProcess, HostSample, ProcessSample, ToolError
from gpusat_tui.sources.polling.live import LiveSource


@dataclass
class Report:
    processes: list[ProcessSample]
    host: HostSample = field(default_factory=HostSample)
    notes: list[str] = field(default_factory=list)
    errors: list[ToolError] = field(default_factory=list)


class Monitor:
    """An unprobed trainer (PID 500) and its worker, as the census reports them."""

    def sample(self, card_processes: Sequence[CardProcess] = ()) -> Report:
        return Report([
            ProcessSample(pid=500, role="trainer", name="python", cpu_pct=1.0),
            ProcessSample(pid=501, role="dataloader_worker", name="pt_data_worker",
                          cpu_pct=0.0, trainer_pid=500),
        ])


def no_tool_source(pids: Sequence[int]) -> LiveSource:
    src = LiveSource(specs=[], pids=pids, process_monitor=Monitor(), path="/nonexistent")
    src.searched = {"toy-smi": ["PATH"]}
    return src


async def test_a_trainer_given_with_pid_is_followed_with_no_tool_and_no_probe() -> None:
    src = no_tool_source([500])
    assert src.use_probes_only() is True and not src.waiting
    frame = await src.poll_once()
    assert [p.pid for p in frame.processes] == [500, 501]
    await src.aclose()


async def test_an_unprobed_trainer_found_by_its_workers_alone_is_not_followed() -> None:
    src = no_tool_source([])
    assert src.use_probes_only() is False  # no probe, no --pid: the no-tool message stays
    assert src.use_probes_only(wait=True) is True and src.waiting
    frame = await src.poll_once()
    assert frame.processes == [], frame.processes
    await src.aclose()
