"""What the fleet view shows, told by the UI to the source: the one path from the screen to what
is asked of Prometheus.

The list (a widget, display only) writes the card ids on screen and the selected card, the
filter, how many problem groups it can show, and whether the healthy row is unfolded; the
source reads a copy once per refresh, in its own worker. A lock keeps the copy whole (the UI
thread writes while a request thread reads); nothing blocks longer than a tuple copy.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace

#: Problem groups of each sort (jobs, hosts) a page of the list asks for: a tall pane's rows
#: of 8-card hosts, and a margin.
GROUP_PAGE = 8

__all__ = ["GROUP_PAGE", "FleetView", "ViewRequest"]


@dataclass(frozen=True)
class ViewRequest:
    """One refresh's worth of what is on screen."""

    #: Card ids of the rows on screen and the selected card, in screen order.
    rows: tuple[str, ...] = ()
    #: ``host:`` pattern of the filter (``gpu-1*``: a glob, else a substring), "" for none.
    host: str = ""
    #: ``kind:`` of the filter ("" for none).
    kind: str = ""
    #: ``job:``, ``user:`` and bare words of the filter (they narrow the ranked groups).
    job: str = ""
    user: str = ""
    words: tuple[str, ...] = ()
    #: Problem jobs and problem hosts to rank, each: a page, more as the list scrolls down.
    groups: int = GROUP_PAGE
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

    def narrow(
        self, host: str, kind: str, job: str = "", user: str = "", words: tuple[str, ...] = ()
    ) -> None:
        with self._lock:
            self._request = replace(self._request, host=host, kind=kind, job=job, user=user,
                                    words=words, groups=GROUP_PAGE)

    def reach(self, groups: int) -> None:
        """The list can show ``groups`` problem groups of each sort (rounded up to pages)."""
        pages = max(1, -(-groups // GROUP_PAGE))
        with self._lock:
            self._request = replace(self._request, groups=pages * GROUP_PAGE)

    def unfold(self, unfolded: bool) -> None:
        with self._lock:
            self._request = replace(self._request, unfolded=unfolded)
