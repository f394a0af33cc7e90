"""Which view a pane gets before the user picks one, and how the open why view makes room.

Pure: a pane's size in, a choice out (the app applies it). The overview is estimated before it
is laid out, from the rows the other widgets take at each height. Cost: a change to those
widgets' heights in the stylesheet must be made here too, or the choice is a row off.
"""

from __future__ import annotations

from gpusat_tui.ui.widgets.overview import overview_fits

#: Panes shorter than this give the open why view the process panel's rows.
WHY_ROOM_ROWS = 28


def overview_wanted(n_cards: int, width: int, height: int, *, banner: bool) -> bool:
    """Whether the overview fits usefully in a ``width``×``height`` pane: its grid gets all
    but the job line, the status line, the footer, the banner and the (shortened) process
    panel."""
    processes = 9 if height >= 40 else 5 if height >= 20 else 0
    return overview_fits(n_cards, width, height - 3 - (1 if banner else 0) - processes)


def why_cramped(why_open: bool, rows: int) -> bool:
    """In a pane under `WHY_ROOM_ROWS` rows, the open why view takes the process panel's rows
    but its first two (the summary and the probe's line)."""
    return why_open and rows < WHY_ROOM_ROWS
