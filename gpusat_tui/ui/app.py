"""The Textual dashboard: one exclusive worker reads the FrameSource, the UI never waits on I/O.

Data flow: the worker iterates ``source.frames()``, appends each frame to `DashboardState`
(bounded histories), asks the tracker for verdicts, and posts `FrameReceived` (replaceable, so a
slow terminal drops stale frames instead of lagging). The handler sets the app-level reactives
``frame`` / ``assessment``; the watchers push them down into thin widgets, which skip any update
whose text did not change. Only the selected card is drawn in full.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import work
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
from gpusat_tui.model import Assessment, Frame, ProbeSample, Verdict
from gpusat_tui.sources import FrameSource, Replayable, replay_controls
from gpusat_tui.text import clean
from gpusat_tui.ui.fleet_state import FleetState
from gpusat_tui.ui.followed_job import JobFollower, ended_panel_text
from gpusat_tui.ui.messages import FrameReceived, SourceEnded
from gpusat_tui.ui.self_cost import FREEZE_HEAP_AFTER, process_cpu_sampler, settle_heap
from gpusat_tui.ui.state import DashboardState
from gpusat_tui.ui.tracking import Tracker, default_tracker
from gpusat_tui.ui.widgets.cards import VENDOR_TAGS, CachedStatic, CardList
from gpusat_tui.ui.widgets.fleet_list import FleetList, FleetSearch
from gpusat_tui.ui.widgets.job_line import JobLine, job_summary
from gpusat_tui.ui.widgets.job_picker import JobPicker
from gpusat_tui.ui.widgets.overview import (
    Block,
    CardGrid,
    block_for,
    grid_layout,
    overview_fits,
)
from gpusat_tui.ui.widgets.panel import CardDetail
from gpusat_tui.ui.widgets.processes import (
    ProcessPanel,
    card_processes,
    probe_summary,
    windowed,
)
from gpusat_tui.ui.widgets.screens import HelpScreen, NoToolScreen
from gpusat_tui.ui.widgets.status import StatusInfo, status_from_frame, status_text

if TYPE_CHECKING:
    from gpusat_tui.analysis.probe_ranks import Rank

#: Seconds of steady running the first own-CPU figure is measured over.
CPU_FIRST_FIGURE_S = 2.0

#: Seconds a signal-triggered exit may take to restore the terminal before the process ends
#: anyway (see `GpusatApp._exit_on_signal`).
_SIGNAL_EXIT_GRACE_S = 3.0
_REPLAY_ACTIONS = {"faster", "slower", "seek", "jump_start", "jump_end"}
#: Keys of the open why view.
_WHY_ACTIONS = {"why_page"}

#: Panes shorter than this give the open why view the process panel's rows.
WHY_ROOM_ROWS = 28

#: The key of the job's verdict in a tracker's focus (analysis.job.JOB_KEY).
JOB_KEY = "job"


def _mmss(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


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
        Binding("plus,equals_sign", "faster", "Speed", key_display="+-"),
        Binding("minus", "slower", "Slower", show=False),
        Binding("left_square_bracket", "seek(-10)", "±10s", key_display="[]"),
        Binding("right_square_bracket", "seek(10)", "+10s", show=False),
        Binding("home", "jump_start", "Start", show=False),
        Binding("end", "jump_end", "End", show=False),
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
        pane's size choose until the user does (`overview_fits`). ``freeze_heap``: freeze the
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
        self.tracker: Tracker = tracker if tracker is not None else default_tracker()
        self.interval = interval
        self.clock = clock
        self._own_cpu = own_cpu
        #: Whether the own-CPU figure's interval has started (`_start_cpu_figure`); an
        #: injected sampler (tests) starts at once.
        self._cpu_interval_started = True
        self.cpu_sample_s = cpu_sample_s
        self.banner = banner
        self.no_tool = no_tool
        # The fleet view: its list puts the worst first and folds the healthy (`FleetList`),
        # and chart history is kept for the cards on screen only (`FleetState`).
        fleet = isinstance(self.tracker, FleetTracker)
        self.state = FleetState() if fleet else DashboardState()
        self.frames_shown = 0
        #: Jobs on the newest frame shown besides the followed one: `j` picks one of them.
        self._other_jobs = 0
        self.ended: str | None = None
        self._pending: tuple[Frame, Assessment] | None = None
        self._render_scheduled = False
        self._last_arrival: float | None = None
        self._started_at = clock()
        self._generation: object = None
        #: False when the last push raised: the tracker's state is older than the screen's.
        self._tracker_ok = False
        self.job_bar = JobLine()
        self.follower = JobFollower(pids)
        self.card_list = (
            FleetList(id="cards", state=self.state) if isinstance(self.state, FleetState)
            else CardList(id="cards")
        )
        self.detail = CardDetail(id="detail")
        self.grid = CardGrid(id="grid")
        #: Set once the user picks a view (o, Enter, Escape): the pane's size no longer does.
        self.view_chosen = view is not None or fleet  # the fleet opens on its worst-first list
        self._initial_overview = view == "overview"
        self.processes = ProcessPanel("", id="processes")
        #: Hidden in a short pane (``.-short``): then its panel is not updated either.
        self.processes_box = Vertical(id="processes-box")
        self.status = CachedStatic("", id="status")

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
        self._exit_on_hangup()
        self.job_bar.display = False
        self.grid.display = False
        if self._initial_overview:
            self.overview = True
        self.detail.set_why_open(False)
        self.detail.show(None, None, None)
        if self.no_tool is not None:
            # With a source, it polls for a probed job behind the screen (`_job_arrived`).
            self.push_screen(NoToolScreen(self.no_tool, waiting=self.source is not None))
            if self.source is None:
                return
        self.set_interval(self.cpu_sample_s, self._tick)
        if self._own_cpu is None:
            # The figure shown is the steady cost: its first interval starts once start-up is
            # behind (`_start_cpu_figure`); until then the status line shows "…". Measured from
            # launch, the first figure read 7 % for a dashboard that then costs 0.5-1 %.
            self._own_cpu = process_cpu_sampler()
            self._cpu_interval_started = False
            self._update_status()
        else:
            self._tick()  # an injected sampler (tests) answers at once
        if self.source is not None:
            self._poll()

    def _exit_on_hangup(self) -> None:
        """Closing the tmux pane (SIGHUP) or a plain ``kill`` (SIGTERM) must exit like ``q``.

        Python's default for both is to die on the spot, skipping ``on_unmount``: a tool the
        live source is waiting on runs in its own session and would be left behind (a hung
        tool for good). Exiting through the app closes the source, which kills it.
        """
        loop = asyncio.get_running_loop()
        # SIGINT too: a ``kill -INT`` (the terminal's Ctrl-C is a key here) exits with 130.
        for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._exit_on_signal, sig)

    def _exit_on_signal(self, sig: int) -> None:
        from gpusat_tui.sources.polling.procs import kill_running_tools

        kill_running_tools()  # first, and synchronously: nothing below may be reached
        # Textual's shutdown writes to the terminal, which a closed pane no longer drains:
        # it can block for good. Give it a moment to restore a live terminal, then go.
        watchdog = threading.Timer(_SIGNAL_EXIT_GRACE_S, os._exit, (128 + sig,))
        watchdog.daemon = True
        watchdog.start()
        self.call_later(self.exit, None, 128 + sig)

    # --- the one worker that owns the source ---------------------------------------------------

    @work(exclusive=True, group="source", exit_on_error=False)
    async def _poll(self) -> None:
        assert self.source is not None
        try:
            async for frame in self.source.frames():
                # A replay seek bumps ``generation``: old points and verdict windows would lie
                # about the new position, so both restart with the first frame after it.
                generation = getattr(self.source, "generation", None)
                if generation != self._generation:
                    if self._generation is not None:
                        self.state.reset()
                        self.tracker.reset()
                        self.follower = JobFollower(self.follower.pids, self.follower.picked)
                    self._generation = generation
                # History and verdicts first: a repaint may be dropped, a frame never is.
                self.state.push(frame)
                assessment = self._judge(frame)
                self.follower.update(frame, assessment.job)
                if self.on_verdict is not None:
                    self._tell(frame, assessment)
                self._last_arrival = self.clock()
                self.post_message(FrameReceived(frame, assessment))
        except Exception as exc:  # a source bug must end up on screen, not as a traceback
            self.post_message(SourceEnded(f"source failed: {type(exc).__name__}: {exc}"))
        else:
            self.post_message(SourceEnded("end of recording" if self._is_replay else "ended"))

    def _judge(self, frame: Frame) -> Assessment:
        """Verdicts for a frame; a verdict-engine bug shows as UNKNOWN with the error, and the
        figures keep flowing."""
        # Only the reasons on screen need the full evidence window's figures: the job's (its
        # line), and the selected card's in the card view; the overview and the card list
        # show kinds, which never depend on it. Opening a card asks for its reasons
        # (`_explain_selected`). Judging the selected card's window too cost ~15 % of a push.
        focus = (
            {JOB_KEY} if self.selected is None or self.overview
            else {JOB_KEY, self.selected}
        )
        self._tracker_ok = False
        try:
            assessment = self.tracker.push(frame, focus=focus)
            self._tracker_ok = True
            return assessment
        except Exception as exc:
            verdict = Verdict(kind="unknown", why=[f"verdict engine error: {exc!r}"])
            return Assessment(cards={c.id: verdict for c in frame.cards}, job=verdict)

    def _tell(self, frame: Frame, assessment: Assessment) -> None:
        assert self.on_verdict is not None
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

    async def on_unmount(self) -> None:
        if self.source is not None:
            # Closing is best effort at exit; the worker is cancelled anyway.
            with contextlib.suppress(Exception):
                await self.source.aclose()

    @property
    def _replay(self) -> Replayable | None:
        return replay_controls(self.source)

    @property
    def _is_replay(self) -> bool:
        return self._replay is not None

    def on_frame_received(self, message: FrameReceived) -> None:
        # No tool, waiting for a probed job: the first frame with one replaces the no-tool
        # screen (`_job_arrived`).
        if self.no_tool is not None and (message.frame.probes or message.frame.cards):
            self._job_arrived()
        # A live source keeps polling while paused (verdicts stay current); the screen holds
        # still. A paused replay sends nothing, except the frame a seek lands on: show that.
        if self.paused and not self._is_replay:
            self._pending = (message.frame, message.assessment)
            return
        self._show(message.frame, message.assessment)

    def _job_arrived(self) -> None:
        """Leave the no-tool screen (under the help, if that is open: on the next frame)."""
        if isinstance(self.screen, NoToolScreen):
            self.pop_screen()
            self.no_tool = None

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
        if (
            selected is None or self.overview or self._pending is not None
            or not self._tracker_ok
        ):
            return
        try:
            verdict = self.tracker.explain(selected)
        except Exception:  # a verdict-engine bug: keep the figures already shown
            return
        current = self.assessment.cards.get(selected)
        if verdict is None or current is None or verdict == current:
            return
        if (verdict.kind, verdict.cause) == (current.kind, current.cause):
            cards = {**self.assessment.cards, selected: verdict}
            self.set_reactive(
                GpusatApp.assessment, Assessment(cards=cards, job=self.assessment.job)
            )

    def watch_why_open(self, value: bool) -> None:
        # The open panel takes the sparklines' second rows: why and advice matter more then.
        self.detail.set_why_open(value)
        self._make_room_for_why()
        self.refresh_bindings()
        self._schedule_render()

    def _make_room_for_why(self, height: int | None = None) -> None:
        """In a pane under `WHY_ROOM_ROWS` rows, the open why view takes the process panel's
        rows but its first two (the summary and the probe's line)."""
        rows = self.size.height if height is None else height
        self.set_class(self.why_open and rows < WHY_ROOM_ROWS, "-why-cramped")

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
        verdicts = self.assessment.cards
        followed = self.follower.job
        others = len({j.key for j in frame.jobs} - {followed.key if followed else ""})
        others -= 1 if followed is None and frame.jobs else 0
        if others != self._other_jobs:  # `j` only where there is another job to pick
            self._other_jobs = others
            self.refresh_bindings()
        multi = len(frame.cards) > 1 or bool(frame.jobs) or followed is not None
        if self.job_bar.display != multi:
            self.job_bar.display = multi
        probes = list(frame.probes)
        ended = followed.ended_line() if followed is not None else None
        if ended is not None:
            self.job_bar.show(len(frame.cards), self.assessment.job, None, "", "", ended=ended)
        elif multi:
            jobs_shown = self.follower.jobs_shown(frame.jobs)
            who, energy = job_summary(jobs_shown, self.state.energy)
            # One data-wait figure per screen: in the overview the one the job's why quotes,
            # named by its span; in the card view none on the job line: the selected card's
            # own (its window) stands in its title, and another card's would read as its.
            # With no probe at all the line says so in both ("" is "no probe").
            job_probes, job_span = windowed(probes, self._window_ranks(JOB_KEY))
            figure = probe_summary(job_probes, job_span) if self.overview or not probes \
                else None
            self.job_bar.show(len(frame.cards), self.assessment.job, figure, who, energy,
                              n_jobs=len(jobs_shown))
        # Only the view on screen is updated; the other catches up when the view changes
        # (``watch_overview`` renders again). A hidden widget's refresh would cost far more
        # than its lines: Textual then rebuilds its whole map of the screen's widgets.
        if self.overview:
            self.grid.show(self._blocks(frame), self.selected)
        else:
            self.card_list.sync(listed, verdicts, self.selected)
            card = frame.card(self.selected) if self.selected else None
            history = self.state.cards.get(self.selected) if self.selected else None
            driving = [p for p in probes if p.card_id is not None and p.card_id == self.selected]
            driving, span = windowed(driving, self._window_ranks(self.selected or ""))
            if not frame.cards and probes:  # no accelerator tool: the job, from its probes
                self._probe_only_layout()
                job_probes, job_span = windowed(probes, self._window_ranks(JOB_KEY))
                self.detail.show(None, None, None, self._interval(), job_probes,
                                 job=self.assessment.job, span_s=job_span)
            else:
                card_energy = self.state.energy.card(self.selected) if self.selected else None
                job_text = self.job_bar.full_text() if multi else ""
                self.detail.show(card, verdicts.get(self.selected or ""), history,
                                 self._interval(), driving, card_energy, job_text=job_text,
                                 span_s=span)
        if self.processes_box.display and followed is not None and ended is not None:
            # Other jobs' trainers under the ended job's line would read as its own.
            self.processes.show_text(Text(ended_panel_text(followed, frame.jobs)))
        elif self.processes_box.display:
            # The card view: the selected card's trainer(s); the overview: the whole host's.
            selected = None if self.overview else self.selected
            shown, shown_probes, tied = card_processes(list(frame.processes), probes, selected)
            key = selected if tied and selected else JOB_KEY
            window_ranks = self._window_ranks(key)
            shown_probes, span = windowed(shown_probes, window_ranks)
            self.processes.show_processes(shown, shown_probes, self._fragmenting,
                                          card_id=selected if tied and selected else "",
                                          span_s=span, ranks=window_ranks)
        self._update_status()

    def _probe_only_layout(self) -> None:
        """No accelerator tool: no card list (there is no card) and, once, the reasons open:
        with no chart to draw they are what the pane is for (``w`` still closes them)."""
        if not self.has_class("-probe-only"):
            self.add_class("-probe-only")
            self.why_open = True

    def _window_ranks(self, key: str) -> dict[int, Rank]:
        """The probed trainers over the window ``key``'s why quotes (by PID); none from a
        tracker that does not say (tests' fixed verdicts) or fails."""
        ranks = getattr(self.tracker, "window_ranks", None)
        if ranks is None or not self._tracker_ok:
            return {}
        try:
            return {rank.pid: rank for rank in ranks(key)}
        except Exception:  # a verdict-engine bug: the probes' own figures
            return {}

    def _fragmenting(self, probe: ProbeSample) -> bool:
        """Whether a rank's allocator figures belong on screen: fragmenting is suspected on
        its card or for the job."""
        if self.assessment.job.kind == "fragmenting":
            return True
        verdict = self.assessment.cards.get(probe.card_id or "")
        return verdict is not None and verdict.kind == "fragmenting"

    def _blocks(self, frame: Frame) -> tuple[Block, ...]:
        verdicts = self.assessment.cards
        mixed = len({card.vendor for card in frame.cards}) > 1
        return tuple(
            block_for(card, verdicts.get(card.id), self.state.cards.get(card.id),
                      tag=VENDOR_TAGS.get(card.vendor, card.vendor[:2]) if mixed else "")
            for card in frame.cards
        )

    # --- the two views -----------------------------------------------------------------------

    def _grid_size_estimate(self, size: Size | None = None) -> tuple[int, int]:
        """The overview's size in this pane (before it is laid out): all but the job line,
        the status line, the footer, the banner and the (shortened) process panel."""
        width, height = size or self.size
        processes = 9 if height >= 40 else 5 if height >= 20 else 0
        return width, height - 3 - (1 if self.banner else 0) - processes

    def _auto_view(self, n_cards: int, size: Size | None = None) -> None:
        """Until the user picks a view, the overview is shown where it fits usefully."""
        if not self.view_chosen:
            want = overview_fits(n_cards, *self._grid_size_estimate(size))
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

    def _source_label(self) -> str:
        if self.source is None:
            return "no source"
        label = clean(getattr(self.source, "label", "source"), 80)
        replay = self._replay
        if replay is not None:
            label += f" {_mmss(replay.position)}/{_mmss(replay.duration)} at {replay.speed:g}x"
        if self.paused:
            label += " PAUSED"
        return label

    def _interval(self) -> float | None:
        if self.interval is not None:
            return self.interval
        header = getattr(self.source, "header", None)
        return getattr(header, "interval_s", None) or getattr(self.source, "interval", None)

    def _replay_end(self) -> str | None:
        """What a replay at the end of its file says (a wait there is not a hang)."""
        if getattr(self.source, "at_end", False) is not True:
            return None
        if getattr(self.source, "follow", False):
            return "caught up: waiting for the recorder's next frame"
        return "end of recording"

    def _quiet_s(self) -> float | None:
        """Seconds without a frame, when that is far longer than the interval (a hung source)."""
        if self.paused or self.ended or self.source is None or self._replay_end():
            return None
        interval = self._interval() or 1.0
        since = self._last_arrival
        if since is None:
            since = self._started_at
        quiet = self.clock() - since
        return quiet if quiet > max(3 * interval, 3.0) else None

    def _update_status(self) -> None:
        stale, errors = status_from_frame(self.frame)
        info = StatusInfo(
            source=self._source_label(),
            interval_s=self._interval(),
            own_cpu_pct=self.own_cpu_pct,
            quiet_s=self._quiet_s(),
            stale=stale,
            errors=errors,
            skipped=int(getattr(self.source, "skipped", 0) or 0),
            ended=self.ended or self._replay_end(),
        )
        if info != self.status.key:  # most frames change nothing on it: skip building it
            self.status.show(info, status_text(info))

    def _tick(self) -> None:
        if not self._cpu_interval_started:
            self._start_cpu_figure()  # no frame yet (a tool still starting): start it anyway
        elif self._own_cpu is not None:
            self.own_cpu_pct = self._own_cpu()
        self._update_status()

    def _start_cpu_figure(self) -> None:
        """Start the own-CPU figure's first interval now (start-up done: the first frames are
        drawn and the heap frozen), and show it `CPU_FIRST_FIGURE_S` later."""
        if self._cpu_interval_started or self._own_cpu is None:
            return
        self._cpu_interval_started = True
        self._own_cpu()  # the share since launch: start-up, not what the dashboard costs
        self.set_timer(min(CPU_FIRST_FIGURE_S, self.cpu_sample_s), self._tick)

    # --- actions -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Replay keys exist only on a replay; hidden from the footer otherwise.
        if self.no_tool is not None:
            return action in {"quit", "help", "command_palette"}
        # o switches views (one binding each, so the footer names the other view); Enter
        # opens a card from the overview and toggles the reasons in a card's full view.
        if action == "overview":
            return not self.overview
        if action in {"card_view", "open_card"}:
            return self.overview
        if action in _WHY_ACTIONS:
            return self.why_open and not self.overview
        if action == "search":
            return isinstance(self.card_list, FleetList)
        if action == "pick_job":  # the fleet view's jobs are its filter's (``/``)
            return not isinstance(self.card_list, FleetList) and self._other_jobs > 0
        return self._is_replay or action not in _REPLAY_ACTIONS

    def action_card(self, step: int) -> None:
        frame = self.frame
        if frame is None or not frame.cards:
            return
        verdicts = self.assessment.cards
        cards = frame.cards if self.overview else self.card_list.listed_cards(frame, verdicts)
        ids = [c.id for c in cards]
        if not ids:
            return
        index = ids.index(self.selected) if self.selected in ids else 0
        self.selected = ids[(index + step) % len(ids)]

    def action_move(self, dx: int, dy: int) -> None:
        """Arrows: in the list, each one steps a card; in the overview, up and down step a
        row of blocks (and stop at the edges), left and right a card."""
        frame = self.frame
        if not self.overview or not dy or frame is None or not frame.cards:
            self.action_card(dx + dy)
            return
        ids = [c.id for c in frame.cards]
        index = ids.index(self.selected) if self.selected in ids else 0
        cols = grid_layout(len(ids), *self.grid.size).cols
        target = index + dy * cols
        if 0 <= target < len(ids):
            self.selected = ids[target]

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

    def action_pick_job(self) -> None:
        """``j``: the jobs running now; the one chosen is followed from this frame on."""
        frame = self.frame
        jobs = list(frame.jobs) if frame is not None else []
        followed = self.follower.job

        def follow(key: str | None) -> None:
            chosen = next((j for j in jobs if j.key == key), None)
            if chosen is not None and frame is not None:
                self.follower.follow(chosen, (self.frame or frame).t)
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

    def _set_speed(self, step: int) -> None:
        replay = self._replay
        if replay is not None and step > 0:
            replay.speed_up()
        elif replay is not None:
            replay.slow_down()
        self._update_status()

    def action_faster(self) -> None:
        self._set_speed(1)

    def action_slower(self) -> None:
        self._set_speed(-1)

    def action_seek(self, delta: float) -> None:
        replay = self._replay
        if replay is not None:
            replay.seek(float(delta))
        self._update_status()

    def action_jump_start(self) -> None:
        replay = self._replay
        if replay is not None:
            replay.jump_start()
        self._update_status()

    def action_jump_end(self) -> None:
        replay = self._replay
        if replay is not None:
            replay.jump_end()
        self._update_status()


