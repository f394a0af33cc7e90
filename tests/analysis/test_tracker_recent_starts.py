"""`recent_starts` stops reading older polls once nothing there can change its answer; it must
answer exactly what a read of the whole window answers, for any mix of fresh, stale and
missing cards."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from gpusat_tui.analysis.facts import frame_facts
from gpusat_tui.analysis.verdicts.tracker import recent_starts
from gpusat_tui.model import CardReading, Frame


def full_scan(frames: Sequence[Frame], wanted: int, short: int) -> dict[str, int]:
    """The rule read over every poll of the window (no early stop)."""
    counts: dict[str, int] = {}
    starts: dict[str, int] = {}
    for offset in range(len(frames) - 1, -1, -1):
        if offset == short - 1:
            counts = {cid: n for cid, n in counts.items() if n > 0}
        for card in frames[offset].cards:
            cid = card.id
            if cid in starts or (offset < short and cid not in counts):
                continue
            if card.stale_s is not None:
                counts.setdefault(cid, 0)
                continue
            counts[cid] = counts.get(cid, 0) + 1
            if counts[cid] >= wanted:
                starts[cid] = min(offset, short)
    return starts


# Per poll, per card index 0..2: absent, fresh or stale.
POLLS = st.lists(
    st.lists(st.sampled_from(["absent", "fresh", "stale"]), min_size=3, max_size=3),
    min_size=0,
    max_size=12,
)


def frames_from(polls: list[list[str]]) -> list[Frame]:
    return [
        Frame(
            t=float(i),
            cards=[
                CardReading(vendor="nvidia", index=j, stale_s=2.0 if what == "stale" else None)
                for j, what in enumerate(poll)
                if what != "absent"
            ],
        )
        for i, poll in enumerate(polls)
    ]


@settings(max_examples=300, deadline=None)
@given(polls=POLLS, wanted=st.integers(1, 4))
def test_recent_starts_matches_a_full_scan(polls: list[list[str]], wanted: int) -> None:
    frames = frames_from(polls)
    short = max(0, len(frames) - wanted)
    facts = [frame_facts(f) for f in frames]
    assert recent_starts(facts, wanted, short) == full_scan(frames, wanted, short)


def test_a_card_fresh_only_further_back_is_still_found() -> None:
    # Cards 0 and 2 are fresh in the last 3 polls (start: short); card 1 is fresh once there,
    # so the search goes on for it alone, and its third fresh reading is at poll 2.
    polls = [["fresh", "fresh", "fresh"]] * 4 + [
        ["fresh", "stale", "fresh"],
        ["fresh", "fresh", "fresh"],
        ["fresh", "stale", "fresh"],
    ]
    facts = [frame_facts(f) for f in frames_from(polls)]
    assert recent_starts(facts, 3, 4) == {"nvidia:0": 4, "nvidia:2": 4, "nvidia:1": 2}
