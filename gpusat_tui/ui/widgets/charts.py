"""Pure text for the charts: the time axis, min/max over the span shown, the extra figures.

No Textual here: `cards.CardPanel` and `overview.CardGrid` lay these out; tests check them
alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpusat_tui.text import clean

#: NVIDIA's profiling counters (GPM) as CardReading.extras carries them, and their short names,
#: in the order shown beside the utilisation label. They say what the duty cycle cannot: how
#: much of the SMs (and the tensor cores) the kernels actually keep busy.
GPM_FIELDS: tuple[tuple[str, str], ...] = (
    ("sm_active_pct", "SM"),
    ("tensor_active_pct", "tensor"),
    ("sm_occupancy_pct", "occupancy"),
    ("dram_active_pct", "DRAM"),
    ("fp16_active_pct", "fp16"),
    ("fp32_active_pct", "fp32"),
    ("fp64_active_pct", "fp64"),
)

#: Tick spacings for the time axis, in seconds: the finest that leaves room between labels.
_TICKS_S = (10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600)
#: The fewest columns between two age ticks of a sweep axis (a label and room around it).
MIN_TICK_COLUMNS = 12


def duration(seconds: float) -> str:
    """``45s``, ``2m``, ``2m30s``, ``1h``, ``1h05m``: short, for axis labels."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        m, rest = divmod(s, 60)
        return f"{m}m{rest:02d}s" if rest else f"{m}m"
    h, rest = divmod(s // 60, 60)
    return f"{h}h{rest:02d}m" if rest else f"{h}h"


def time_axis(width: int, interval_s: float | None) -> str:
    """``-2m        -1m30s       -1m  …  now``: one column per poll, ``now`` at the right.

    Exactly ``width`` characters. The left end is the whole span the chart can show (its
    width times the poll interval); ticks in between at round times that leave labels apart.
    Without a known interval only ``now`` and the span in polls are given.
    """
    if width <= 0:
        return ""
    now = "now"
    if width < len(now):
        return " " * width
    cells = [" "] * width

    def put(col: int, label: str) -> bool:
        if col < 0 or col + len(label) > width or any(c != " " for c in
                                                       cells[max(col - 1, 0):col + len(label) + 1]):
            return False
        cells[col:col + len(label)] = label
        return True

    put(width - len(now), now)
    if not interval_s or interval_s <= 0:
        put(0, f"-{width - 1} polls")
        return "".join(cells)
    span = (width - 1) * interval_s
    put(0, f"-{duration(span)}")
    tick = next((t for t in _TICKS_S if t / interval_s >= 12), None)
    if tick is not None:
        k = tick
        while k < span:
            col = width - 1 - round(k / interval_s)
            label = f"-{duration(k)}"
            put(col - len(label) // 2, label)
            k += tick
    return "".join(cells)


def sweep_axis(width: int, interval_s: float | None, pushed: int, ticks: bool = True) -> str:
    """The time axis of a sweep chart (`spark.sweep_rows`): ``now`` ending under the newest
    point, after the blank column ahead of it the age of the oldest point shown (``-2m38s``,
    or ``-158 polls`` without a known interval), and between them evenly spaced age ticks
    (``-15s``, ``-30s``...: the finest of `_TICKS_S` at least `MIN_TICK_COLUMNS` apart),
    each centred under the point of that age. Exactly ``width`` characters.

    Every label moves one column a poll with the sweep: the cells of each label to send, not
    the row (a label standing still under the sweep would say a different age each poll).
    Still, the ticks of one 135-column axis are ~120 cells a poll: ``ticks=False`` leaves
    them out (a panel puts them under its last chart only).
    """
    if width <= 0:
        return ""
    cells = [" "] * width
    newest = (pushed - 1) % width if pushed > 0 else -1
    if newest < 0:
        return "".join(cells)

    def put(col: int, label: str) -> None:
        if col >= 0 and col + len(label) <= width and all(
                c == " " for c in cells[max(col - 1, 0):col + len(label) + 1]):
            cells[col:col + len(label)] = label

    now = "now"
    put(max(newest + 1 - len(now), 0), now)
    shown = min(pushed, width - 1)
    if shown < 2:
        return "".join(cells)
    age = shown - 1
    label = (f"-{duration(age * interval_s)}" if interval_s and interval_s > 0
             else f"-{age} polls")
    # The oldest point shown: after the blank column, or column 0 before the first wrap.
    put((newest + 2) % width if pushed >= width else 0, label)
    if not ticks or not interval_s or interval_s <= 0:
        return "".join(cells)
    tick = next((t for t in _TICKS_S if t / interval_s >= MIN_TICK_COLUMNS), None)
    if tick is None:
        return "".join(cells)
    k = tick
    while round(k / interval_s) < age:
        col = newest - round(k / interval_s)
        if col < 0:
            col += width  # the older points, right of the blank column
        text = f"-{duration(k)}"
        start = col - len(text) // 2
        # A label across the blank column would sit under points of two sweeps.
        gap = (newest + 1) % width
        if not start <= gap < start + len(text):
            put(start, text)
        k += tick
    return "".join(cells)


def span_min_max(values: Sequence[float | None], width: int) -> tuple[float, float] | None:
    """Min and max of the last ``width`` figures (those a chart ``width`` wide shows)."""
    if width <= 0:
        return None
    n = len(values)
    shown = [v for v in (list(values)[-width:] if n > width else values) if v is not None]
    if not shown:
        return None
    return min(shown), max(shown)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if value == value and abs(value) != float("inf") else None


def gpm_text(extras: Mapping[str, object], limit: int = 3) -> str:
    """``SM 38% · tensor 22%`` from the GPM figures present (at most ``limit``); else "".
    Written as the utilisation beside it (``GPU-Util 87%``)."""
    parts = []
    for key, name in GPM_FIELDS:
        value = _number(extras.get(key))
        if value is not None:
            parts.append(f"{name} {value:.0f}%")
        if len(parts) >= limit:
            break
    return " · ".join(parts)


def throttle_reasons(extras: Mapping[str, object]) -> list[str]:
    """The throttle reasons a tool gave (``power-cap``, ``thermal``...), shown literally."""
    raw = extras.get("throttle")
    if not isinstance(raw, str):
        return []
    return [clean(name.strip(), 24) for name in raw.split(",") if name.strip()][:6]
