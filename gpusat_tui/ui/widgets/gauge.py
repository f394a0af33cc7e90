"""Power against its cap: the better saturation signal where a card reports a cap."""

from __future__ import annotations

from rich.style import Style
from textual.reactive import reactive
from textual.strip import Strip

from gpusat_tui.ui.text import fmt
from gpusat_tui.ui.widgets.lines import LineWidget

_BOLD = Style(bold=True)
_DIM = Style(dim=True)


def gauge_text(power_w: float | None, cap_w: float | None, width: int) -> tuple[str, str, str]:
    """(label, filled bar, empty bar) for a power gauge ``width`` columns wide; pure, for tests."""
    if power_w is None:
        label = "Power n/a"
    elif not cap_w:
        label = f"Power {fmt(power_w, ' W')} (no cap)"
    else:
        label = f"Power {power_w:.0f}/{cap_w:.0f} W {100 * power_w / cap_w:3.0f}%"
    bar_width = max(width - len(label) - 1, 0)
    if power_w is None or not cap_w or bar_width < 4:
        return label, "", ""
    filled = round(min(max(power_w / cap_w, 0.0), 1.0) * bar_width)
    return label, "█" * filled, "░" * (bar_width - filled)


class PowerGauge(LineWidget):
    """``Power 245/300 W  82% ████████░░``: watts of cap, percent, bar."""

    DEFAULT_CSS = """
    PowerGauge { height: 1; }
    """

    reading: reactive[tuple[float | None, float | None]] = reactive((None, None))

    def render_line(self, y: int) -> Strip:
        if y:
            return self.blank()
        label, filled, empty = gauge_text(*self.reading, self.content_size.width)
        return self.strip([
            (label, None),
            (" " if filled or empty else "", None),
            (filled, self.base_style + _BOLD),
            (empty, self.base_style + _DIM),
        ])
