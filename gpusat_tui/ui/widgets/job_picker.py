"""``j``: the jobs running on the host, to follow another one than the dashboard's.

The dashboard follows one job and never adopts another by itself (`followed_job`); this list
is how the user switches. One row per job: its key, whose and what (`job_label`), its cards.
Enter follows the highlighted job, Escape leaves the followed one as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from gpusat_tui.host.scheduler.jobs import job_label
from gpusat_tui.model import JobContext
from gpusat_tui.text import clean

__all__ = ["JobPicker", "job_row"]


def job_row(job: JobContext, followed: str | None) -> str:
    """``▸ plain:100  alice: python train.py  cards nvidia:0,nvidia:1`` (▸: followed now)."""
    cards = ",".join(clean(c, 40) for c in job.card_ids[:8]) or "none"
    if len(job.card_ids) > 8:
        cards += f" +{len(job.card_ids) - 8}"
    mark = "▸" if job.key == followed else " "
    return f"{mark} {clean(job.key, 60)}  {job_label(job, 80)}  cards {cards}"


class JobPicker(ModalScreen[str | None]):
    """The jobs seen on the host (their keys come back); Enter follows one, Escape cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,j,q", "cancel", "Cancel")]

    DEFAULT_CSS = """
    JobPicker { align: center top; }
    JobPicker > Vertical { width: 90%; height: auto; max-height: 80%; margin-top: 2;
                           background: $panel; }
    JobPicker OptionList { height: auto; max-height: 20; }
    """

    def __init__(self, jobs: Sequence[JobContext], followed: str | None) -> None:
        super().__init__()
        self.jobs = list(jobs)
        self.followed = followed

    def compose(self) -> ComposeResult:
        with Vertical():
            if self.jobs:
                yield Static(Text("Jobs on this host: Enter follows the highlighted one, "
                                  "Escape keeps the one followed now (▸)."))
                yield OptionList(*(Option(Text(job_row(j, self.followed)), id=j.key)
                                   for j in self.jobs), id="job-list")
            else:
                yield Static(Text("No job runs on this host now (Escape closes)."))

    def on_mount(self) -> None:
        keys = [j.key for j in self.jobs]
        if self.followed in keys:
            self.query_one(OptionList).highlighted = keys.index(self.followed)

    def on_option_list_option_selected(self, message: OptionList.OptionSelected) -> None:
        self.dismiss(message.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
