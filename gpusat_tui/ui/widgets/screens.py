"""Help, and the screen shown when no accelerator tool was found."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from gpusat_tui.ui.text import clean

HELP = """\
gpusat-tui: is my accelerator saturated, and if not, why?

Cards
  ← → ↑ ↓      previous / next card
  w, enter     why and advice for the selected card's verdict
Display
  p, space     pause / resume (a replay stops advancing)
  ctrl+p       command palette (themes, keys)
  ?            this help
  q            quit
Replay only
  + -          faster / slower
  [ ]          seek back / forward 10 s
  home end     jump to start / end

Verdicts
  SATURATED    the card is busy: compute-bound, nothing to fix on the input side
  STARVING     the card waits for input (DataLoader, I/O, host CPU): see why
  FRAGMENTING  busy in bursts: many small kernels, syncs or launches
  IMBALANCED   some cards of the job wait for the others
  IDLE         nothing running on the card
  UNKNOWN      not enough figures to say
"""


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


def no_tool_text(message: str) -> Text:
    """What was searched, and how to see the dashboard anyway."""
    text = Text()
    lines = message.splitlines() or [""]
    if not lines[0].lower().startswith("no accelerator tool found"):
        text.append("No accelerator tool found\n\n", style="bold")
    else:
        text.append(clean(lines.pop(0), 300) + "\n", style="bold")
    message = "\n".join(lines)
    # Keep the message's own lines (one place searched per line), each cleaned.
    text.append("\n".join(clean(line, 300) for line in message.splitlines()[:40]))
    text.append(
        "\n\nTry the dashboard on a bundled recording instead:\n"
        "  gpusat-tui --replay samples/sessions/demo.jsonl\n"
        "or start with --fallback-demo to do that automatically.\n"
        "To point at a tool in an unusual place: --tool VENDOR=/path/to/tool\n\n"
        "Press q to quit."
    )
    return text


class NoToolScreen(Screen[None]):
    """Shown instead of the dashboard when discovery found no vendor tool."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("q,escape", "app.quit", "Quit")]

    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="no-tool"):
            yield Static(no_tool_text(self.message), id="no-tool-text")
        yield Footer()
