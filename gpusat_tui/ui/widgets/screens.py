"""Help, and the screen shown when no accelerator tool was found."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from gpusat_tui.model import VERDICT_KINDS
from gpusat_tui.text import clean

HELP_KEYS = """\
gpusat-tui: is my accelerator saturated, and if not, why?
(escape, q or ? closes this help)

Views
  o            every card at once (overview) / a list and one card in full
  enter        the selected card in full (overview; or double-click)
  escape       back to the overview
  j            the jobs on this host: pick the one to follow
Cards
  ← →          previous / next card
  ↑ ↓          the card above / below (overview), previous / next (list)
  w            why and advice for the selected card (enter: card view),
               and the job line in full
  pgdn pgup    scroll why and advice when they are longer than the box
  /            fleet view: filter by job: user: host: kind: or words
Display
  p, space     pause / resume (a replay stops advancing)
  ctrl+p       command palette (themes, keys)
  ?            this help
  q            quit
Replay only
  + -          faster / slower
  [ ]          seek back / forward 10 s
  home end     jump to start / end
"""

#: What each verdict means, for the help; a kind missing here still gets a line.
VERDICT_HELP: dict[str, str] = {
    "saturated": "the card is busy: compute-bound, no input problem to fix",
    "starving": "the card waits for input (DataLoader, I/O, host CPU)",
    "fragmenting": "VRAM nearly full and churning: the allocator (a heuristic)",
    "imbalanced": "some cards of the job wait for the others (a straggler)",
    "idle": "nothing running on the card",
    "stalled": "the job stopped making progress (no steps, no batches)",
    "unknown": "not enough figures to say",
}


#: The help box's width (`gpusat.tcss` ``#help``) less its border and padding: no help line is
#: longer, so none wraps to the box's edge in a pane of 80 columns or more.
HELP_TEXT_WIDTH = 74


def help_text() -> str:
    lines = [HELP_KEYS, "Verdicts"]
    for kind in VERDICT_KINDS:
        lines.append(f"  {kind.upper():<12} {VERDICT_HELP.get(kind, 'see why (w)')}")
    return "\n".join(lines) + "\n"


HELP = help_text()


class HelpScreen(ModalScreen[None]):
    """Keys and what each verdict means."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss", "Close"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text(HELP))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)


def no_tool_text(message: str, waiting: bool = False) -> Text:
    """What works without a tool first (a probed job, the demo), then what was searched.
    ``waiting``: the dashboard polls for a probed job behind this screen."""
    text = Text()
    lines = message.splitlines() or [""]
    first = lines.pop(0) if lines[0].lower().startswith("no accelerator tool found") else ""
    # "No accelerator tool found. Searched:": the title here, "Searched:" over its list below.
    title, searched, rest = first.partition("Searched:")
    text.append(clean(title.strip() or "No accelerator tool found", 300) + "\n\n",
                style="bold")
    if searched:
        lines.insert(0, (searched + rest).strip())
    if waiting:
        text.append(
            "Waiting for a probed job. Start one in another pane:\n"
            "  gpusat-tui run -- python train.py\n"
            "and it shows here, judged from its own data wait. A job already running\n"
            "without it: gpusat-tui --pid PID (the host's figures, and where it waits\n"
            "read from outside by py-spy when it stalls).\n"
        )
    else:
        text.append(
            "A job started as `gpusat-tui run -- python train.py` is judged from\n"
            "its probe even with no tool: start it, then gpusat-tui again. One\n"
            "already running without it: gpusat-tui --pid PID.\n"
        )
    text.append(
        "See the dashboard on the bundled demo recording:  gpusat-tui --fallback-demo\n"
        "Point at a tool in an unusual place:  --tool VENDOR=/path/to/tool\n"
        "Press q to quit.\n\n"
    )
    # Keep the message's own lines (one place searched per line), each cleaned.
    text.append("\n".join(clean(line, 300) for line in lines[:40]), style="dim")
    return text


class NoToolScreen(Screen[None]):
    """Shown instead of the dashboard when discovery found no vendor tool (and, ``waiting``,
    until a probed trainer publishes)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("q,escape", "app.quit", "Quit")]

    def __init__(self, message: str, waiting: bool = False) -> None:
        super().__init__()
        self.message = message
        self.waiting = waiting

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="no-tool"):
            yield Static(no_tool_text(self.message, self.waiting), id="no-tool-text")
        yield Footer()
