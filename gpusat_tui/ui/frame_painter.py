"""Attributes down: one frame and its verdicts pushed into the widgets on screen.

Only the view on screen is updated; the other catches up when the view changes (the app
paints again). A hidden widget's refresh would cost far more than its lines: Textual then
rebuilds its whole map of the screen's widgets. Cost: a view switch paints once more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual.containers import Vertical

from gpusat_tui.model import Assessment, CardReading, Frame, ProbeSample
from gpusat_tui.ui.fleet_state import cards_in
from gpusat_tui.ui.followed_job import FollowedJob, JobFollower, ended_panel_text
from gpusat_tui.ui.guarded_tracker import JOB_KEY, GuardedTracker
from gpusat_tui.ui.state import DashboardState
from gpusat_tui.ui.widgets.cards import VENDOR_TAGS, CardList
from gpusat_tui.ui.widgets.fleet_list import FleetList
from gpusat_tui.ui.widgets.job_line import JobLine, job_summary
from gpusat_tui.ui.widgets.overview import Block, CardGrid, block_for
from gpusat_tui.ui.widgets.panel import CardDetail
from gpusat_tui.ui.widgets.processes import (
    ProcessPanel,
    card_processes,
    probe_summary,
    windowed,
)


def jobs_besides(frame: Frame, followed: FollowedJob | None) -> int:
    """Jobs on ``frame`` besides the followed one (else besides the first): what ``j`` picks."""
    others = len({j.key for j in frame.jobs} - {followed.key if followed else ""})
    return others - (1 if followed is None and frame.jobs else 0)


@dataclass(frozen=True)
class Shown:
    """What goes on screen: the frame, its verdicts, the cards listed (in the list's order),
    the card selected, the view, and the seconds between frames."""

    frame: Frame
    assessment: Assessment
    listed: list[CardReading]
    selected: str | None
    overview: bool
    interval: float | None


class FramePainter:
    """Pushes a `Shown` into the widgets. ``probe_only``: called where there is no card, only
    probed trainers (no accelerator tool): the app lays itself out for that."""

    def __init__(
        self,
        *,
        job_bar: JobLine,
        card_list: CardList | FleetList,
        detail: CardDetail,
        grid: CardGrid,
        processes: ProcessPanel,
        processes_box: Vertical,
        state: DashboardState,
        follower: JobFollower,
        tracker: GuardedTracker,
        probe_only: Callable[[], None],
    ) -> None:
        self.job_bar = job_bar
        self.card_list = card_list
        self.detail = detail
        self.grid = grid
        self.processes = processes
        self.processes_box = processes_box
        self.state = state
        self.follower = follower
        self.tracker = tracker
        self.probe_only = probe_only

    def paint(self, shown: Shown) -> None:
        frame = shown.frame
        followed = self.follower.job
        multi = len(frame.cards) > 1 or bool(frame.jobs) or followed is not None
        if self.job_bar.display != multi:
            self.job_bar.display = multi
        ended = followed.ended_line() if followed is not None else None
        self._job_line(shown, multi, ended)
        if shown.overview:
            self.grid.show(self._blocks(shown), shown.selected)
        else:
            self._card_view(shown, multi)
        if self.processes_box.display and followed is not None and ended is not None:
            # Other jobs' trainers under the ended job's line would read as its own.
            self.processes.show_text(Text(ended_panel_text(followed, frame.jobs)))
        elif self.processes_box.display:
            self._processes(shown)

    def _job_line(self, shown: Shown, multi: bool, ended: str | None) -> None:
        frame, job = shown.frame, shown.assessment.job
        if ended is not None:
            self.job_bar.show(cards_in(frame), job, None, "", "", ended=ended)
        elif multi:
            jobs_shown = self.follower.jobs_shown(frame.jobs)
            who, energy = job_summary(jobs_shown, self.state.energy)
            # One data-wait figure per screen: in the overview the one the job's why quotes,
            # named by its span; in the card view none on the job line: the selected card's
            # own (its window) stands in its title, and another card's would read as its.
            # With no probe at all the line says so in both ("" is "no probe").
            probes = list(frame.probes)
            job_probes, job_span = windowed(probes, self.tracker.window_ranks(JOB_KEY))
            figure = probe_summary(job_probes, job_span) if shown.overview or not probes \
                else None
            self.job_bar.show(cards_in(frame), job, figure, who, energy,
                              n_jobs=len(jobs_shown))

    def _card_view(self, shown: Shown, multi: bool) -> None:
        frame, selected, verdicts = shown.frame, shown.selected, shown.assessment.cards
        probes = list(frame.probes)
        self.card_list.sync(shown.listed, verdicts, selected)
        card = frame.card(selected) if selected else None
        history = self.state.cards.get(selected) if selected else None
        driving = [p for p in probes if p.card_id is not None and p.card_id == selected]
        driving, span = windowed(driving, self.tracker.window_ranks(selected or ""))
        if not frame.cards and probes:  # no accelerator tool: the job, from its probes
            self.probe_only()
            job_probes, job_span = windowed(probes, self.tracker.window_ranks(JOB_KEY))
            self.detail.show(None, None, None, shown.interval, job_probes,
                             job=shown.assessment.job, span_s=job_span)
        else:
            card_energy = self.state.energy.card(selected) if selected else None
            job_text = self.job_bar.full_text() if multi else ""
            self.detail.show(card, verdicts.get(selected or ""), history, shown.interval,
                             driving, card_energy, job_text=job_text, span_s=span)

    def _processes(self, shown: Shown) -> None:
        """The card view: the selected card's trainer(s); the overview: the whole host's."""
        frame = shown.frame
        selected = None if shown.overview else shown.selected
        listed, probes, tied = card_processes(list(frame.processes), list(frame.probes),
                                              selected)
        key = selected if tied and selected else JOB_KEY
        ranks = self.tracker.window_ranks(key)
        probes, span = windowed(probes, ranks)

        def fragmenting(probe: ProbeSample) -> bool:
            """A rank's allocator figures belong on screen: fragmenting is suspected on its
            card or for the job."""
            if shown.assessment.job.kind == "fragmenting":
                return True
            verdict = shown.assessment.cards.get(probe.card_id or "")
            return verdict is not None and verdict.kind == "fragmenting"

        self.processes.show_processes(listed, probes, fragmenting,
                                      card_id=selected if tied and selected else "",
                                      span_s=span, ranks=ranks)

    def _blocks(self, shown: Shown) -> tuple[Block, ...]:
        verdicts, cards = shown.assessment.cards, shown.frame.cards
        mixed = len({card.vendor for card in cards}) > 1
        return tuple(
            block_for(card, verdicts.get(card.id), self.state.cards.get(card.id),
                      tag=VENDOR_TAGS.get(card.vendor, card.vendor[:2]) if mixed else "")
            for card in cards
        )
