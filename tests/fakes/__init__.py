"""Fake vendor tools for tests: real-format output whose numbers follow a scenario.

`FakeCard` / `FakeProcess` are what a test wants a fake tool to report on one call; each
vendor's renderer in `tests/fakes/formats/<collector module>.py` turns them into text in that
tool's real format (``render(cards, processes) -> str`` for its default view), checked by a
round-trip test through the real parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FakeProcess:
    pid: int
    name: str
    card_index: int
    mem_mib: float = 1024.0


@dataclass(frozen=True)
class FakeCard:
    index: int
    name: str = "Fake Card"
    util_pct: float | None = 0.0
    mem_used_mib: float | None = 0.0
    mem_total_mib: float | None = 65536.0
    power_w: float | None = 50.0
    power_cap_w: float | None = 300.0
    temp_c: float | None = 40.0
    extras: dict[str, float] = field(default_factory=dict)
