"""Power against its cap: the better saturation signal where a card reports a cap.

`gauge_text` is pure; `cards.CardPanel` draws it.
"""

from __future__ import annotations

from gpusat_tui.ui.text import fmt


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
