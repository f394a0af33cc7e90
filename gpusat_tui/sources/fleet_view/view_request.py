"""What the fleet view shows, told by the UI to the source: the one path from the screen to what
is asked of Prometheus.

The list (a widget, display only) writes the card ids on screen and the selected card, the
filter's host pattern and kind, and whether the healthy row is unfolded; the source reads a
copy once per refresh, in its own worker. A lock keeps the copy whole (the UI thread writes
while a request thread reads); nothing blocks longer than a tuple copy.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace

__all__ = ["FleetView", "ViewRequest"]


@dataclass(frozen=True)
class ViewRequest:
    """One refresh's worth of what is on screen."""

    #: Card ids of the rows on screen and the selected card, in screen order.
    rows: tuple[str, ...] = ()
    #: ``host:`` pattern of the filter (``gpu-1*``: a glob, else a substring), "" for none.
    host: str = ""
    #: ``kind:`` of the filter ("" for none).
    kind: str = ""
    #: Whether the healthy cards are listed (asked for) rather than folded into one row.
    unfolded: bool = False
    #: False until the list has told the source anything: the source then picks the rows
    #: the list opens on itself (the worst first), so the first screen needs no second ask.
    told: bool = False


class FleetView:
    """The shared, thread-safe `ViewRequest` (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._request = ViewRequest()

    def request(self) -> ViewRequest:
        with self._lock:
            return self._request

    def show(self, rows: Iterable[str]) -> None:
        shown = tuple(dict.fromkeys(r for r in rows if r))
        with self._lock:
            self._request = replace(self._request, rows=shown, told=True)

    def narrow(self, host: str, kind: str) -> None:
        with self._lock:
            self._request = replace(self._request, host=host, kind=kind)

    def unfold(self, unfolded: bool) -> None:
        with self._lock:
            self._request = replace(self._request, unfolded=unfolded)
