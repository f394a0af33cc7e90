"""The dashboard's verdicts feed the status file and the terminal notifications
(`commands.dashboard.watch_verdicts` through `GpusatApp.on_verdict`), and a failure there never
stops the polling."""

from __future__ import annotations

import json
from pathlib import Path

from gpusat_tui.commands import dashboard
from gpusat_tui.commands.options import DashboardOptions
from gpusat_tui.model import Assessment, CardReading, Frame, Verdict
from gpusat_tui.notify.options import NotifyOptions
from gpusat_tui.notify.status_file import read_fresh
from gpusat_tui.sources.build import DEMO_BANNER, NO_TOOL_BANNER, BuiltSource
from gpusat_tui.sources.options import SourceOptions
from gpusat_tui.ui.app import GpusatApp
from tests.recording_helpers import ListSource


def args(replay: tuple[str, ...] = (), prometheus: str | None = None) -> DashboardOptions:
    return DashboardOptions(
        source=SourceOptions(replay=replay, prometheus=prometheus),
        notify=NotifyOptions(terminal="all", hold_s=2.0, every_s=600.0),
    )


def frame(t: float) -> tuple[Frame, Assessment]:
    card = CardReading(vendor="nvidia", index=0, util_pct=5.0)
    stalled = Verdict(kind="stalled")
    return Frame(t=t, cards=[card]), Assessment(cards={card.id: stalled}, job=stalled)


def test_live_verdicts_write_the_status_file_and_ring_once(private_probe_dir: Path) -> None:
    app = GpusatApp(None)
    written: list[str] = []
    app.write_terminal = written.append  # type: ignore[method-assign]
    dashboard.watch_verdicts(app, args(), 1.0)
    assert app.on_verdict is not None
    import time

    now = time.time()
    for k in range(5):
        app.on_verdict(*frame(now - 4 + k))
    status = read_fresh()
    assert status is not None and status.kind == "stalled" and status.writer == "dashboard"
    assert len(written) == 1 and written[0].startswith("\a")
    files = list(private_probe_dir.glob("status-*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["writer"] == "dashboard"
    for close in app.closers:
        close()
    assert not list(private_probe_dir.glob("status-*.json"))


def test_a_replay_or_the_fleet_view_is_not_this_machine_s_job() -> None:
    live = BuiltSource(ListSource([]), live=True)
    assert dashboard.is_live(live)
    # The no-tool banner is live polling all the same (the probe files and the host).
    assert dashboard.is_live(BuiltSource(ListSource([]), live=True, banner=NO_TOOL_BANNER))
    assert not dashboard.is_live(BuiltSource(ListSource([]), banner=DEMO_BANNER))
    assert not dashboard.is_live(BuiltSource(ListSource([])))


async def test_a_failing_hook_turns_itself_off_not_the_polling() -> None:
    calls: list[int] = []

    def broken(frame: Frame, assessment: Assessment) -> None:
        calls.append(1)
        raise RuntimeError("boom")

    app = GpusatApp(None, on_verdict=broken)
    async with app.run_test():
        app._tell(*frame(1.0))
        assert app.on_verdict is None and calls == [1]
