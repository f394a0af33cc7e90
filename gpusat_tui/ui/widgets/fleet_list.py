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
    summary_triage,
    triage,
)
from gpusat_tui.model import (
    VERDICT_KINDS,
    CardReading,
    FleetItem,
    Frame,
    Verdict,
    VerdictKind,
    is_vendor,
)
from gpusat_tui.text import clean
from gpusat_tui.ui.fleet_state import FleetState
from gpusat_tui.ui.widgets.cards import CachedStatic, CardList, card_row

__all__ = ["FleetList", "FleetSearch", "summary_text"]

#: Columns of a header row's label (the card rows' labels are as wide).
_LABEL = 17

Row = tuple[str, VerdictKind, bool]

#: What the folded healthy row selects where the healthy cards are counted, not listed (a
#: fleet summary): no card's, so the detail pane shows none.
FOLD_CARD = CardReading(vendor="nvidia", index=0, host="+healthy")


def _row_card(item: FleetItem) -> CardReading | None:
    """A row's card before its figures come (off screen, or on screen since this refresh):
    who it is, no figures; a down card marked stale."""
    _, _, card = item.id.partition("/")
    vendor_index, _, instance = card.partition("/")
    vendor, _, index = vendor_index.partition(":")
    if not is_vendor(vendor) or not index.isdigit():
        return None
    return CardReading.model_construct(
        vendor=vendor, index=int(index), instance=instance or None, host=item.host,
        tool="prometheus", stale_s=1.0 if item.kind == DOWN else None,
    )


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


_LIGHT: dict[str, Verdict] = {}


def _light(kind: str) -> Verdict:
    """One shared kind-only `Verdict` per kind (a down card: unknown)."""
    verdict = _LIGHT.get(kind)
    if verdict is None:
        shown: VerdictKind = kind if kind in VERDICT_KINDS else "unknown"
        verdict = _LIGHT[kind] = Verdict(kind=shown)
    return verdict


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
        #: Whether the healthy header stands for no card (`FOLD_CARD`): a fleet summary's.
        self.stand_in = False
        #: (id, kind) -> the row's card before its figures (kept while the row is listed).
        self._row_cards: dict[tuple[str, str], CardReading] = {}
        #: Kinds of the rows a fleet summary lists (their verdicts until their figures come).
        self.item_kinds: dict[str, str] = {}

    def set_filter(self, text: str) -> None:
        self.filter = parse_filter(text)
        view = self.state.view if self.state is not None else None
        if view is not None:  # the source narrows the healthy count the same way
            flt = self.filter
            view.narrow(flt.host, flt.kind, flt.job, flt.user, flt.words)

    def listed_cards(self, frame: Frame, verdicts: dict[str, Verdict]) -> list[CardReading]:
        by_id = {card.id: card for card in frame.cards}
        self.item_kinds = {}
        if frame.fleet is not None:  # the server's summary: rows without figures yet
            self.triage = summary_triage(frame.fleet, frame.jobs, self.filter)
            made, self._row_cards = self._row_cards, {}
            for item in frame.fleet.problems:
                self.item_kinds[item.id] = item.kind
                if item.id not in by_id:
                    card = made.get((item.id, item.kind)) or _row_card(item)
                    if card is not None:
                        by_id[item.id] = self._row_cards[(item.id, item.kind)] = card
            for card_id in frame.fleet.healthy_ids:
                self.item_kinds[card_id] = "saturated"
                if card_id not in by_id:
                    card = _row_card(FleetItem(id=card_id, host=card_id.partition("/")[0],
                                               kind="saturated"))
                    if card is not None:
                        by_id[card_id] = card
        else:
            kinds = {card_id: verdict.kind for card_id, verdict in verdicts.items()}
            self.triage = triage(frame.cards, kinds, frame.jobs, self.filter)
        listed = [by_id[i] for group in self.triage.groups for i in group.card_ids
                  if i in by_id]
        healthy = [i for i in self.triage.healthy if i in by_id]
        self.fold_id = None
        self.stand_in = frame.fleet is not None and bool(self.triage.healthy_count)
        if self.folded and self.triage.healthy_count:
            fold = by_id[healthy[0]] if healthy else FOLD_CARD
            self.fold_id = fold.id
            listed.append(fold)
        else:
            if self.stand_in:  # the healthy header is a stop: Enter kept the selection there
                listed.append(FOLD_CARD)
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
        view = self.state.view if self.state is not None else None
        if view is not None:  # the source lists the healthy from the next refresh on
            view.unfold(True)
        return True

    def sync(
        self, cards: list[CardReading], verdicts: dict[str, Verdict], selected: str | None
    ) -> None:
        by_id = {card.id: card for card in cards}
        kinds = self.item_kinds

        def verdict_of(card_id: str) -> Verdict | None:
            # A row whose figures have not come yet has the summary's kind.
            found = verdicts.get(card_id)
            if found is None and card_id in kinds:
                found = _light(kinds[card_id])
            return found

        rows: list[Row] = []
        ids: list[str] = []
        #: Row -> the ordinal of its problem group (the healthy rows: one past the last).
        ordinals: list[int] = []
        for n, group in enumerate(self.triage.groups):
            members = [by_id[i] for i in group.card_ids if i in by_id]
            if not members:
                continue
            rows.append(_header(_group_title(group), group.worst))
            ids.append(members[0].id)
            for card in members:
                rows.append(card_row(card, verdict_of(card.id), selected))
                ids.append(card.id)
            ordinals.extend([n] * (len(members) + 1))
        healthy = self.triage.healthy
        if self.fold_id is not None:
            marker = "▸" if self.fold_id == selected else " "
            label = f"{marker}+{self.triage.healthy_count:,} healthy ⏎"
            rows.append((label.ljust(_LABEL), "saturated", self.fold_id == selected))
            ids.append(self.fold_id)
        elif healthy or self.stand_in:
            header = _header(f"▾{self.triage.healthy_count:,} healthy", "saturated")
            if self.stand_in and selected == FOLD_CARD.id:
                header = ("▸" + header[0][1:], "saturated", True)
            rows.append(header)
            ids.append(FOLD_CARD.id if self.stand_in else healthy[0])
            for card_id in healthy:
                if card_id in by_id:
                    rows.append(card_row(by_id[card_id], verdict_of(card_id), selected))
                    ids.append(card_id)
        if not rows and self.filter.active:
            rows.append(_header("no card matches", "unknown"))
            ids.append("")
        self.show_rows(rows, ids)
        if self.state is not None:
            window = self._window(max(self.content_size.height, 1))
            self.state.show([*(ids[i] for i in window), *([selected] if selected else [])])
            view = self.state.view
            if view is not None and window:
                # The groups down to the window's last row and one more: scrolling near the
                # end of a page asks the server for the next page of groups by rank.
                last = window[-1]
                shown = ordinals[last] if last < len(ordinals) else len(self.triage.groups)
                view.reach(shown + 2)


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
