"""UI fixtures: fixed frames, in-memory sources, a fixed verdict tracker, snapshot folder shim."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from pathlib import Path

import pytest
import pytest_textual_snapshot
from syrupy.location import PyTestLocation

from gpusat_tui.model import (
    Assessment,
    CardReading,
    Frame,
    ProcessSample,
    ToolError,
    Verdict,
)

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT_DIR = ROOT / "snapshots"


def _snapshot_dirname(cls: type, *, test_location: PyTestLocation) -> str:
    """SVG snapshots live in the top-level ``snapshots/<test module>/``, not beside the tests.

    The module-named subfolder is what lets syrupy relate each file to its test (and so spot
    unused snapshots) without a warning.
    """
    return str(SNAPSHOT_DIR / test_location.basename)


# syrupy asks the extension class where its files live; the plugin's SVG extension inherits
# ``dirname`` from SingleFileSnapshotExtension (tests/ui/__snapshots__/<module>/). Point it at
# the project folder instead.
pytest_textual_snapshot.SVGImageExtension.dirname = classmethod(_snapshot_dirname)  # type: ignore[assignment]

T0 = 1_700_000_000.0


def card(
    index: int,
    util: float | None = 50.0,
    *,
    vendor: str = "nvidia",
    name: str | None = "NVIDIA H100 80GB HBM3",
    mem_used: float | None = 40960.0,
    mem_total: float | None = 81920.0,
    power: float | None = 350.0,
    cap: float | None = 700.0,
    temp: float | None = 55.0,
    stale_s: float | None = None,
) -> CardReading:
    return CardReading(
        vendor=vendor,  # type: ignore[arg-type]
        index=index,
        name=name,
        util_pct=util,
        mem_used_mib=mem_used,
        mem_total_mib=mem_total,
        power_w=power,
        power_cap_w=cap,
        temp_c=temp,
        stale_s=stale_s,
        tool="nvidia-smi",
    )


def trainer_with_workers(
    pid: int = 4242, workers: int = 4, cpu: float = 95.0, state: str = "running"
) -> list[ProcessSample]:
    procs = [ProcessSample(pid=pid, role="trainer", name="python train.py", cpu_pct=cpu,
                           state="running", card_ids=["nvidia:0"], num_threads=12)]
    for i in range(workers):
        procs.append(
            ProcessSample(pid=pid + 1 + i, role="dataloader_worker", name="pt_data_worker",
                          cpu_pct=40.0 + i, state=state, trainer_pid=pid)
        )
    return procs


def frames_for(
    n: int,
    cards_at: Callable[[int], list[CardReading]],
    *,
    processes: Sequence[ProcessSample] = (),
    errors: Sequence[ToolError] = (),
) -> list[Frame]:
    return [
        Frame(t=T0 + i, seq=i, cards=cards_at(i), processes=list(processes), errors=list(errors))
        for i in range(n)
    ]


class ListSource:
    """Yields fixed frames (optionally paced), then stays open like a live source would."""

    label = "test source"

    def __init__(self, frames: Sequence[Frame], delay: float = 0.0, hold: bool = True) -> None:
        self._frames = list(frames)
        self.delay = delay
        self.hold = hold
        self.gate = asyncio.Event()
        self.closed = False
        self.yielded = 0

    async def frames(self) -> AsyncIterator[Frame]:
        for frame in self._frames:
            if self.delay:
                await asyncio.sleep(self.delay)
            self.yielded += 1
            yield frame
        if self.hold:
            await self.gate.wait()

    async def aclose(self) -> None:
        self.closed = True


class StepSource:
    """Yields its frames only as the test releases them (`release`), then stays open: each
    frame is shown before the next exists, however slow the machine (a paced source's next
    frame can arrive while a loaded test is still looking at the last)."""

    label = "test source"

    def __init__(self, frames: Sequence[Frame]) -> None:
        self._frames = list(frames)
        self._allowed = 0
        self._more = asyncio.Event()
        self.yielded = 0

    def release(self, n: int = 1) -> None:
        self._allowed += n
        self._more.set()

    async def frames(self) -> AsyncIterator[Frame]:
        for frame in self._frames:
            while self.yielded >= self._allowed:
                self._more.clear()
                await self._more.wait()
            self.yielded += 1
            yield frame
        await asyncio.Event().wait()

    async def aclose(self) -> None:
        return None


class HungSource:
    """A source whose first poll never returns (a hung vendor tool with no timeout)."""

    label = "live"

    async def frames(self) -> AsyncIterator[Frame]:
        await asyncio.Event().wait()
        yield Frame(t=T0)  # pragma: no cover - never reached

    async def aclose(self) -> None:
        return None


class FixedTracker:
    """Verdicts chosen by the test, so UI tests do not depend on the verdict thresholds."""

    def __init__(self, cards: dict[str, Verdict] | None = None, job: Verdict | None = None,
                 default: Verdict | None = None) -> None:
        self.cards = cards or {}
        self.job = job or Verdict()
        self.default = default or Verdict()
        self.pushed = 0
        self.resets = 0
        self.focus: list[Collection[str] | None] = []
        self.explained: list[str] = []

    def push(self, frame: Frame, *, focus: Collection[str] | None = None) -> Assessment:
        self.pushed += 1
        self.focus.append(focus)
        verdicts = {c.id: self.cards.get(c.id, self.default) for c in frame.cards}
        return Assessment(cards=verdicts, job=self.job)

    def explain(self, key: str) -> Verdict | None:
        self.explained.append(key)
        return self.cards.get(key, self.default)

    def reset(self) -> None:
        self.resets += 1


@pytest.fixture
def fixed_clock() -> Callable[[], float]:
    return lambda: T0 + 1.0


def screen_text(app: object) -> str:
    """What the terminal shows right now, as plain text (one line per row)."""
    strips = app.screen._compositor.render_strips()  # type: ignore[attr-defined]
    return "\n".join(strip.text for strip in strips)


async def settle(pilot: object, until: Callable[[], bool], timeout: float = 5.0) -> None:
    """Let the app run until ``until()`` holds (frames arrive via a worker), then one more pause."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not until():
        if loop.time() > deadline:
            raise AssertionError("app did not reach the expected state in time")
        await pilot.pause(0.02)  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
