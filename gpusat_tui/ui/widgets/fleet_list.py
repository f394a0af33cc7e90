"""The fleet's card list, worst first: problem jobs, then problem hosts, each under a header
row, then the healthy cards folded into one row that Enter opens; ``/`` filters it.

The order, the summary and the filter are `analysis.fleet_triage` (pure); this widget only
lays them out as `CardList` rows (one widget, rows repainted only where they changed) and keeps
the summary line above the cards up to date. A header row is not a stop of the arrow keys: a
click on it picks its group's worst card.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from gpusat_tui.analysis.fleet_triage import (
    DOWN,
    FleetFilter,
    Group,
    Triage,
    parse_filter,
    triage,
)
from gpusat_tui.model import VERDICT_KINDS, CardReading, Frame, Verdict, VerdictKind
from gpusat_tui.text import clean
from gpusat_tui.ui.fleet_state import FleetState
from gpusat_tui.ui.widgets.cards import CachedStatic, CardList, card_row

__all__ = ["FleetList", "FleetSearch", "summary_text"]

#: Columns of a header row's label (the card rows' labels are as wide).
_LABEL = 17

Row = tuple[str, VerdictKind, bool]


def _header(text: str, kind: str) -> Row:
    shown: VerdictKind = "unknown" if kind == DOWN or kind not in VERDICT_KINDS else kind
    label = clean(text, 64)
    label = label if len(label) <= _LABEL else label[: _LABEL - 1] + "…"
    return label.ljust(_LABEL), shown, False


def _group_title(group: Group) -> str:
    return f"▾{group.label} {len(group.card_ids)}/{group.cards}"


def summary_text(result: Triage) -> Text:
    """``1,000 hosts · 7,976 cards: 852 starving in 14 jobs, ... · / filter``."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(clean(result.summary, 300), style="bold")
    if result.filter.active:
        text.append(f" · filter {clean(result.filter.text(), 60)}: {result.matched:,} cards",
                    style="reverse")
    text.append(" · / filter")
    return text


class FleetList(CardList):
    """`CardList` for the fleet view (see the module docstring)."""

    def __init__(self, id: str | None = None, state: FleetState | None = None) -> None:
        """``state``: told which cards are on screen after each sync (their charts' history
        is kept, `FleetState.show`)."""
        super().__init__(id=id)
        self.state = state
        self.filter = FleetFilter()
        #: Whether the healthy cards are folded into one row.
        self.folded = True
        self.triage = Triage(summary="")
        #: The one-line summary above the cards (the app places it).
        self.summary_bar = CachedStatic("", id="fleet-summary")
        #: The healthy card that stands for the folded row (it is what that row selects).
        self.fold_id: str | None = None

    def set_filter(self, text: str) -> None:
        self.filter = parse_filter(text)

    def listed_cards(self, frame: Frame, verdicts: dict[str, Verdict]) -> list[CardReading]:
        kinds = {card_id: verdict.kind for card_id, verdict in verdicts.items()}
        self.triage = triage(frame.cards, kinds, frame.jobs, self.filter)
        by_id = {card.id: card for card in frame.cards}
        listed = [by_id[i] for group in self.triage.groups for i in group.card_ids]
        healthy = self.triage.healthy
        self.fold_id = healthy[0] if healthy and self.folded else None
        if self.fold_id is not None:
            listed.append(by_id[self.fold_id])
        else:
            listed.extend(by_id[i] for i in healthy)
        self.summary_bar.show(
            (self.triage.summary, self.triage.filter, self.triage.matched),
            summary_text(self.triage),
        )
        return listed

    def unfold(self, selected: str | None) -> bool:
        if selected is None or selected != self.fold_id:
            return False
        self.folded = False
        return True

    def sync(
        self, cards: list[CardReading], verdicts: dict[str, Verdict], selected: str | None
    ) -> None:
        by_id = {card.id: card for card in cards}
        rows: list[Row] = []
        ids: list[str] = []
        for group in self.triage.groups:
            members = [by_id[i] for i in group.card_ids if i in by_id]
            if not members:
                continue
            rows.append(_header(_group_title(group), group.worst))
            ids.append(members[0].id)
            for card in members:
                rows.append(card_row(card, verdicts.get(card.id), selected))
                ids.append(card.id)
        healthy = self.triage.healthy
        if self.fold_id is not None:
            marker = "▸" if self.fold_id == selected else " "
            label = f"{marker}+{len(healthy):,} healthy ⏎"
            rows.append((label.ljust(_LABEL), "saturated", self.fold_id == selected))
            ids.append(self.fold_id)
        elif healthy:
            rows.append(_header(f"▾{len(healthy):,} healthy", "saturated"))
            ids.append(healthy[0])
            for card_id in healthy:
                if card_id in by_id:
                    rows.append(card_row(by_id[card_id], verdicts.get(card_id), selected))
                    ids.append(card_id)
        if not rows and self.filter.active:
            rows.append(_header("no card matches", "unknown"))
            ids.append("")
        self.show_rows(rows, ids)
        if self.state is not None:
            window = self._window(max(self.content_size.height, 1))
            self.state.show([*(ids[i] for i in window), *([selected] if selected else [])])


class FleetSearch(ModalScreen[str | None]):
    """``/``: what to narrow the fleet's list to. Enter applies (empty: everything), Escape
    leaves the filter as it was."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    FleetSearch { align: center top; }
    FleetSearch > Vertical { width: 80%; height: auto; margin-top: 2; background: $panel; }
    """

    def __init__(self, current: str = "") -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(
                "Filter: job:ID user:NAME host:PATTERN (gpu-1*) kind:starving|stalled|"
                "imbalanced|down; other words match any of them. Enter applies, Escape cancels."
            ))
            yield Input(value=self.current, placeholder="job:4242 kind:starving",
                        id="fleet-filter")

    def on_input_submitted(self, message: Input.Submitted) -> None:
        self.dismiss(message.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
