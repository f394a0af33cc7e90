"""The Textual dashboard: its widgets, its keys, and the wiring between them and the source.

One exclusive worker reads the source (`FrameFeed`): history, verdicts, then `FrameReceived`
up (replaceable, so a slow terminal drops stale frames instead of lagging). The handler sets
the app's reactives ``frame`` / ``assessment``; their watchers push them down
(`FramePainter`) into thin widgets, which skip any update whose text did not change. Only the
selected card is drawn in full.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver
from textual.events import Resize
from textual.geometry import Size
from textual.reactive import var
from textual.widgets import Footer, Static

from gpusat_tui.analysis.fleet import FleetTracker
from gpusat_tui.host.scheduler.job_reader import user_name
from gpusat_tui.model import Assessment, Frame
from gpusat_tui.sources import FrameSource, Replayable, replay_controls
from gpusat_tui.ui.card_moves import card_after, card_below
from gpusat_tui.ui.fleet_state import FleetState
from gpusat_tui.ui.followed_job import JobFollower
from gpusat_tui.ui.frame_feed import FrameFeed
from gpusat_tui.ui.frame_painter import FramePainter, Shown, jobs_besides
from gpusat_tui.ui.guarded_tracker import JOB_KEY, GuardedTracker
from gpusat_tui.ui.key_availability import KeyState, key_live
from gpusat_tui.ui.messages import FrameReceived, SourceEnded
from gpusat_tui.ui.replay_keys import steer
from gpusat_tui.ui.self_cost import (
    CPU_FIRST_FIGURE_S,
    FREEZE_HEAP_AFTER,
    OwnCpuFigure,
    process_cpu_sampler,
    settle_heap,
)
from gpusat_tui.ui.signal_exit import exit_on_signals
from gpusat_tui.ui.state import DashboardState
from gpusat_tui.ui.status_facts import SourceWatch, source_interval, status_info
from gpusat_tui.ui.tracking import Tracker, default_tracker
from gpusat_tui.ui.view_choice import overview_wanted, why_cramped
from gpusat_tui.ui.widgets.cards import CachedStatic, CardList
from gpusat_tui.ui.widgets.fleet_list import FleetList, FleetSearch
from gpusat_tui.ui.widgets.job_line import JobLine
from gpusat_tui.ui.widgets.job_picker import JobPicker
from gpusat_tui.ui.widgets.overview import CardGrid, grid_layout
from gpusat_tui.ui.widgets.panel import CardDetail
from gpusat_tui.ui.widgets.processes import ProcessPanel
from gpusat_tui.ui.widgets.screens import HelpScreen, NoToolScreen
from gpusat_tui.ui.widgets.status import status_text


class GpusatApp(App[int]):
    """The dashboard. ``no_tool`` shows the no-tool screen instead: for good with no
    ``source``, else until the source's first frame with a probed trainer or a card."""

    CSS_PATH = "gpusat.tcss"
    TITLE = "gpusat-tui"
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [  # type: ignore[misc]  # Textual's "ClassVar | None" reads as an instance variable
        (0, "-narrow"), (80, "-wide"),
    ]
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [  # type: ignore[misc]  # Textual's "ClassVar | None" reads as an instance variable
        (0, "-short"), (20, "-tall"), (40, "-roomy"),
    ]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("p,space", "toggle_pause", "Pause", key_display="p"),
        Binding("left", "move(-1, 0)", "Prev card", key_display="←", show=False),
        Binding("right", "move(1, 0)", "Cards", key_display="←→"),
        Binding("up", "move(0, -1)", "Card above", key_display="↑", show=False),
        Binding("down", "move(0, 1)", "Card below", key_display="↓", show=False),
        Binding("o,escape", "overview", "Overview", key_display="o"),
        Binding("o", "card_view", "One card"),
        # Enter opens the card too ("o One card" says so in the footer; the help has Enter).
        Binding("enter", "open_card", "Open", show=False),
        Binding("slash", "search", "Filter", key_display="/"),
        Binding("j", "pick_job", "Jobs"),
        Binding("w,enter", "toggle_why", "Why"),
        Binding("pagedown", "why_page(1)", "More", key_display="PgDn"),
        Binding("pageup", "why_page(-1)", "Back", key_display="PgUp", show=False),
        # One footer entry per pair (speed, seek): a replay's footer fits 80 columns.
        Binding("plus,equals_sign", "replay('faster')", "Speed", key_display="+-"),
        Binding("minus", "replay('slower')", "Slower", show=False),
        Binding("left_square_bracket", "replay('seek', -10)", "±10s", key_display="[]"),
        Binding("right_square_bracket", "replay('seek', 10)", "+10s", show=False),
        Binding("home", "replay('jump_start')", "Start", show=False),
        Binding("end", "replay('jump_end')", "End", show=False),
    ]

    # ``var``, not ``reactive``: a reactive on the App repaints the whole screen on every
    # change (~15 ms per frame with 8 cards); the watchers below repaint only what changed.
    frame: var[Frame | None] = var(None, init=False)
    assessment: var[Assessment] = var(Assessment, init=False)
    selected: var[str | None] = var(None, init=False)
    paused: var[bool] = var(False, init=False)
    why_open: var[bool] = var(False, init=False)
    own_cpu_pct: var[float | None] = var(None, init=False)
    #: Every card's block (`CardGrid`) instead of the list and the selected card in full.
    overview: var[bool] = var(False, init=False)

    def __init__(
        self,
        source: FrameSource | None,
        *,
        tracker: Tracker | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.time,
        own_cpu: Callable[[], float | None] | None = None,
        cpu_sample_s: float = 5.0,
        banner: str | None = None,
        no_tool: str | None = None,
        view: str | None = None,
        freeze_heap: bool = False,
        on_verdict: Callable[[Frame, Assessment], None] | None = None,
        pids: Sequence[int] = (),
    ) -> None:
        """``view``: "overview" or "card" to start in (and keep) that view; None lets the
        pane's size choose until the user does (`overview_wanted`). ``freeze_heap``: freeze the
        start-up heap after the first frames (`settle_heap`): for the process that runs only
        this app (the command line), never for one that runs many (tests, embedding).
        ``on_verdict``: told every frame's verdicts as they are judged (the status file and
        the notifications, `ui.entry`); an error in it turns it off, never the polling.
        ``pids``: the trainers given with ``--pid``: the job line follows their job (else the
        first job found) and says when it ended (`followed_job`)."""
        super().__init__()
        self.source = source
        self.freeze_heap = freeze_heap
        self.on_verdict = on_verdict
        #: Called by the command line after the app ends (the status file, the webhooks).
        self.closers: list[Callable[[], None]] = []
        tracker = tracker if tracker is not None else default_tracker()
        self.tracker = GuardedTracker(tracker)
        self.interval = interval
        self.clock = clock
        self.cpu = OwnCpuFigure(own_cpu)
        self.cpu_sample_s = cpu_sample_s
        self.banner = banner
        self.no_tool = no_tool
        fleet = isinstance(tracker, FleetTracker)
        self.state, self.card_list = self._fleet_or_host(fleet, tracker)
        self.frames_shown = 0
        #: Jobs on the newest frame shown besides the followed one: `j` picks one of them.
        self._other_jobs = 0
        self.ended: str | None = None
        self._pending: tuple[Frame, Assessment] | None = None
        self._render_scheduled = False
        self._started_at = clock()
        self.job_bar = JobLine()
        self.follower = JobFollower(pids, user=user_name(os.getuid()))
        self.detail = CardDetail(id="detail")
        self.grid = CardGrid(id="grid")
        #: Set once the user picks a view (o, Enter, Escape): the pane's size no longer does.
        self.view_chosen = view is not None or fleet  # the fleet opens on its worst-first list
        self._initial_overview = view == "overview"
        self.processes = ProcessPanel("", id="processes")
        #: Hidden in a short pane (``.-short``): then its panel is not updated either.
        self.processes_box = Vertical(id="processes-box")
        self.status = CachedStatic("", id="status")
        self.painter = FramePainter(
            job_bar=self.job_bar, card_list=self.card_list, detail=self.detail, grid=self.grid,
            processes=self.processes, processes_box=self.processes_box, state=self.state,
            follower=self.follower, tracker=self.tracker, probe_only=self._probe_only_layout,
        )
        self.feed = None if source is None else FrameFeed(
            source, state=self.state, tracker=self.tracker, follower=self.follower,
            focus=self._focus, tell=self._tell, clock=lambda: self.clock(),
            replay=self._replay is not None,
        )

    # --- layout ------------------------------------------------------------------------------

    def get_driver_class(self) -> type[Driver]:
        """Textual's choice, except its Linux terminal driver becomes `QuietLinuxDriver` (no
        input-thread wake-ups while nobody types: 1.3 ms CPU/s less)."""
        from gpusat_tui.ui.partial_update import send_changed_cells_only

        send_changed_cells_only()  # repaints send the changed cells, not whole lines
        driver = super().get_driver_class()
        if driver is LinuxDriver:
            from gpusat_tui.ui.driver import QuietLinuxDriver

            return QuietLinuxDriver
        return driver

    def compose(self) -> ComposeResult:
        if self.banner:
            yield Static(Text(self.banner), id="banner")
        if isinstance(self.card_list, FleetList):
            yield self.card_list.summary_bar
        yield self.job_bar
        with Horizontal(id="main"):
            yield self.card_list
            yield self.detail
            yield self.grid
        with self.processes_box:
            yield self.processes
        yield self.status
        # The palette (ctrl+p) is in the help, not the footer: a replay's keys fit 80 columns.
        yield Footer(show_command_palette=False)

    def on_mount(self) -> None:
        exit_on_signals(self)
        self.job_bar.display = False
        self.grid.display = False
        if self._initial_overview:
            self.overview = True
        self.detail.set_why_open(False)
        self.detail.show(None, None, None)
        if self.no_tool is not None:
            # With a source, it polls for a probed job behind the screen (`on_frame_received`).
            self.push_screen(NoToolScreen(self.no_tool, waiting=self.source is not None))
            if self.source is None:
                return
        self.set_interval(self.cpu_sample_s, self._tick)
        if self.cpu.injected:
            self._tick()  # an injected sampler (tests) answers at once
        else:
            self.cpu.measure_steady(process_cpu_sampler())
            self._update_status()  # "…" until `_start_cpu_figure`
        if self.feed is not None:
            self.run_worker(self.feed.run(self.post_message), name="frames", group="source",
                            exclusive=True, exit_on_error=False)

    async def on_unmount(self) -> None:
        if self.source is not None:
            # Closing is best effort at exit; the worker is cancelled anyway.
            with contextlib.suppress(Exception):
                await self.source.aclose()

    # --- messages up: frames, the source's end, the notifications ---------------------------------

    def _focus(self) -> set[str]:
        """The verdicts whose full evidence window is on screen: the job's (its line), and the
        selected card's in the card view; the overview and the card list show kinds, which
        never depend on it. Opening a card asks for its reasons (`_explain_selected`).
        Judging the selected card's window too cost ~15 % of a push."""
        if self.selected is None or self.overview:
            return {JOB_KEY}
        return {JOB_KEY, self.selected}

    def _tell(self, frame: Frame, assessment: Assessment) -> None:
        if self.on_verdict is None:
            return
        try:
            self.on_verdict(frame, assessment)
        except Exception as exc:
            self.on_verdict = None
            self.notify(f"notifications off: {type(exc).__name__}", severity="warning")

    def write_terminal(self, data: str) -> None:
        """Write the bell or a notification's escape sequences straight to the terminal (what
        Textual's own ``bell()`` does); nothing in a headless run."""
        driver = getattr(self, "_driver", None)
        if data and driver is not None and not getattr(driver, "is_headless", True):
            driver.write(data)

    @property
    def _replay(self) -> Replayable | None:
        return replay_controls(self.source)

    def on_frame_received(self, message: FrameReceived) -> None:
        # No tool, waiting for a probed job: the first frame with one replaces the no-tool
        # screen (under the help, if that is open: on the next frame).
        waiting = self.no_tool is not None and isinstance(self.screen, NoToolScreen)
        if waiting and (message.frame.probes or message.frame.cards):
            self.pop_screen()
            self.no_tool = None
        # A live source keeps polling while paused (verdicts stay current); the screen holds
        # still. A paused replay sends nothing, except the frame a seek lands on: show that.
        if self.paused and self._replay is None:
            self._pending = (message.frame, message.assessment)
            return
        self._show(message.frame, message.assessment)

    def on_source_ended(self, message: SourceEnded) -> None:
        self.ended = message.error
        self._update_status()

    def _show(self, frame: Frame, assessment: Assessment) -> None:
        self.frames_shown += 1
        self.set_reactive(GpusatApp.assessment, assessment)
        self.frame = frame
        if self.frames_shown == FREEZE_HEAP_AFTER:
            if self.freeze_heap:
                settle_heap()
            self._start_cpu_figure()

    # --- attributes down ---------------------------------------------------------------------

    def watch_frame(self) -> None:
        # A new frame is the one change in its handler (`_show`): paint it now, not one
        # message later (a render already scheduled then finds nothing left to do).
        self._render_view()

    def watch_selected(self, selected: str | None) -> None:
        self._explain_selected(selected)
        self._schedule_render()

    def _explain_selected(self, selected: str | None) -> None:
        """The newly selected card was out of the tracker's focus: ask for its full reasons,
        unless the screen is held on an older frame (paused) than the tracker's, or shows no
        card's reasons (the overview)."""
        if selected is None or self.overview or self._pending is not None:
            return
        explained = self.tracker.explained(self.assessment, selected)
        if explained is not None:
            self.set_reactive(GpusatApp.assessment, explained)

    def watch_why_open(self, value: bool) -> None:
        # The open panel takes the sparklines' second rows: why and advice matter more then.
        self.detail.set_why_open(value)
        self._make_room_for_why()
        self.refresh_bindings()
        self._schedule_render()

    def _make_room_for_why(self, height: int | None = None) -> None:
        rows = self.size.height if height is None else height
        self.set_class(why_cramped(self.why_open, rows), "-why-cramped")

    def watch_paused(self) -> None:
        self._update_status()

    def watch_own_cpu_pct(self) -> None:
        self._update_status()

    def _schedule_render(self) -> None:
        # Several reactives may change in one handler: paint once, after they all did.
        if not self._render_scheduled:
            self._render_scheduled = True
            self.call_later(self._scheduled_render)

    def _scheduled_render(self) -> None:
        if self._render_scheduled:
            self._render_view()

    def _render_view(self) -> None:
        self._render_scheduled = False
        frame = self.frame
        if frame is None:
            return
        # The view first: the overview asks for no card's reasons (`_explain_selected`).
        self._auto_view(len(frame.cards))
        listed = self.card_list.listed_cards(frame, self.assessment.cards)
        ids = [c.id for c in listed]
        if ids and self.selected not in ids:
            self.set_reactive(GpusatApp.selected, ids[0])
            self._explain_selected(ids[0])
        others = jobs_besides(frame, self.follower.job)
        if others != self._other_jobs:  # `j` only where there is another job to pick
            self._other_jobs = others
            self.refresh_bindings()
        self.painter.paint(Shown(frame, self.assessment, listed, self.selected, self.overview,
                                 source_interval(self.source, self.interval)))
        self._update_status()

    def _probe_only_layout(self) -> None:
        """No accelerator tool: no card list (there is no card) and, once, the reasons open:
        with no chart to draw they are what the pane is for (``w`` still closes them)."""
        if not self.has_class("-probe-only"):
            self.add_class("-probe-only")
            self.why_open = True

    # --- the two views -----------------------------------------------------------------------

    def _auto_view(self, n_cards: int, size: Size | None = None) -> None:
        """Until the user picks a view, the overview is shown where it fits usefully."""
        if not self.view_chosen:
            want = overview_wanted(n_cards, *(size or self.size), banner=bool(self.banner))
            if want != self.overview:
                self.overview = want

    def on_resize(self, event: Resize) -> None:
        # Runs before Textual's own handler has stored the new size: use the event's.
        frame = self.frame
        if frame is not None and not self.view_chosen:
            self._auto_view(len(frame.cards), event.size)
        self._make_room_for_why(event.size.height)
        # A panel hidden in the smaller pane (not updated while hidden) shows up current.
        self._schedule_render()

    def watch_overview(self, value: bool) -> None:
        if not value:  # the card view shows the selected card's reasons: out of focus so far
            self._explain_selected(self.selected)
        self.set_class(value, "-overview")
        self.grid.display = value
        self.card_list.display = not value
        self.detail.display = not value
        self.refresh_bindings()
        self._schedule_render()

    # --- the status line and the own-CPU figure ---------------------------------------------

    def _update_status(self) -> None:
        since = self.feed.last_arrival if self.feed is not None else None
        watch = SourceWatch(self.source, self.interval, self.paused, self.ended,
                            self._started_at if since is None else since)
        info = status_info(watch, self.frame, self.own_cpu_pct, self.clock())
        if info != self.status.key:  # most frames change nothing on it: skip building it
            self.status.show(info, status_text(info))

    def _tick(self) -> None:
        if not self.cpu.started:
            self._start_cpu_figure()  # no frame yet (a tool still starting): start it anyway
        elif self.cpu.sampler is not None:
            self.own_cpu_pct = self.cpu.sampler()
        self._update_status()

    def _start_cpu_figure(self) -> None:
        """Start the own-CPU figure's first interval now and show it `CPU_FIRST_FIGURE_S`
        later (start-up done: the first frames are drawn and the heap frozen)."""
        if self.cpu.start():
            self.set_timer(min(CPU_FIRST_FIGURE_S, self.cpu_sample_s), self._tick)

    # --- keys --------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return key_live(action, KeyState(
            no_tool=self.no_tool is not None, overview=self.overview, why_open=self.why_open,
            fleet=isinstance(self.card_list, FleetList), other_jobs=self._other_jobs,
            replay=self._replay is not None,
        ))

    def action_move(self, dx: int, dy: int) -> None:
        """Arrows: in the list, each one steps a card; in the overview, up and down step a
        row of blocks (and stop at the edges), left and right a card."""
        frame = self.frame
        if frame is None or not frame.cards:
            return
        if self.overview and dy:
            cols = grid_layout(len(frame.cards), *self.grid.size).cols
            chosen = card_below([c.id for c in frame.cards], self.selected, dy, cols)
        else:
            cards = frame.cards if self.overview else self.card_list.listed_cards(
                frame, self.assessment.cards)
            chosen = card_after([c.id for c in cards], self.selected, dx + dy)
        if chosen is not None:
            self.selected = chosen

    def on_card_list_selected(self, message: CardList.Selected) -> None:
        self.selected = message.card_id

    def on_card_grid_selected(self, message: CardGrid.Selected) -> None:
        self.selected = message.card_id
        if message.open:
            self.action_open_card()

    def action_overview(self) -> None:
        self.view_chosen = True
        self.overview = True

    def action_card_view(self) -> None:
        self.view_chosen = True
        self.overview = False

    def action_open_card(self) -> None:
        """Enter in the overview: the selected card in full."""
        self.action_card_view()

    def action_toggle_why(self) -> None:
        if not self.overview and self.card_list.unfold(self.selected):  # the folded row
            self._schedule_render()
            return
        if self.overview:  # asking why is about one card: show it in full, reasons open
            self.action_card_view()
            self.why_open = True
            return
        self.why_open = not self.why_open

    def action_why_page(self, step: int) -> None:
        """PgDn/PgUp: the open why view a page on or back."""
        self.detail.why.page(int(step))

    def action_pick_job(self) -> None:
        """``j``: the jobs running now; the one chosen is followed from this frame on."""
        frame = self.frame
        jobs = list(frame.jobs) if frame is not None else []
        followed = self.follower.job

        def follow(key: str | None) -> None:
            chosen = next((j for j in jobs if j.key == key), None)
            if chosen is not None and frame is not None:
                self.follower.follow(chosen, (self.frame or frame).t)
                if not frame.cards:
                    # With no card the verdict's window held the other job's trainers alone
                    # (`JobFollower.own_frame`): judged anew from the next frame on.
                    self.tracker.reset()
                self._schedule_render()

        self.push_screen(JobPicker(jobs, followed.key if followed else None), follow)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_pause(self) -> None:
        replay = self._replay
        if replay is not None:
            replay.toggle_pause()
        self.paused = not self.paused
        if not self.paused and self._pending is not None:
            frame, assessment = self._pending
            self._pending = None
            self._show(frame, assessment)

    def action_replay(self, key: str, seconds: float = 0.0) -> None:
        """The replay keys (`replay_keys`); the status line says where the replay stands."""
        steer(self._replay, key, seconds)
        self._update_status()

    # --- the fleet view: its list (worst first, the healthy folded) and its filter -------------

    @staticmethod
    def _fleet_or_host(
        fleet: bool, tracker: object = None
    ) -> tuple[DashboardState, CardList | FleetList]:
        """The fleet view's list puts the worst first and folds the healthy (`FleetList`), and
        chart history is kept for the cards on screen only (`FleetState`)."""
        if not fleet:
            return DashboardState(), CardList(id="cards")
        state = FleetState.for_tracker(tracker)  # the source's view request, if it has one
        return state, FleetList(id="cards", state=state)

    def action_search(self) -> None:
        """``/`` in the fleet view: narrow the list (job, user, host pattern, kind)."""
        card_list = self.card_list
        if not isinstance(card_list, FleetList):
            return

        def apply(text: str | None) -> None:
            if text is not None:
                card_list.set_filter(text)
                self._schedule_render()

        self.push_screen(FleetSearch(card_list.filter.text()), apply)
