"""The job's verdict is composed from its cards' verdicts as their badges show them.

The job line says "1 of 4 cards starving: nvidia:0": those are the cards whose badges read
starving on the same screen, not the cards that would read starving if each were judged again
over the job's longer evidence window (a card that recovered ten polls ago is saturated on its
badge and was still counted starving over the job's 30 s).
"""

from __future__ import annotations

from gpusat_tui.analysis.verdicts.job import JOB_KEY
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CardReading, Frame, HostSample
from tests.scenarios import T0

SATURATED = (97.0, 560.0)  # GPU-Util %, W of a 700 W cap: 80 %


def starving(i: int) -> tuple[float, float]:
    """Util swinging 15-55 %, power at 29 % of cap, memory held."""
    return (15.0 if i % 2 else 55.0), 200.0


def reading(index: int, util: float, power: float, used: int = 120_000) -> CardReading:
    return CardReading(vendor="nvidia", index=index, name="H200", tool="nvidia-smi",
                       util_pct=util, mem_used_mib=used, mem_total_mib=143_771,
                       power_w=power, power_cap_w=700.0, temp_c=50.0)


def frames(recovers_at: int, n: int = 41) -> list[Frame]:
    """4 cards: nvidia:0 starving throughout, nvidia:1 starving until ``recovers_at`` and
    saturated after, the others idle (so that no card lags another for the whole history:
    an imbalance would re-badge the starving card)."""
    out = []
    for i in range(n):
        one = SATURATED if i >= recovers_at else starving(i)
        cards = [reading(0, *starving(i)), reading(1, *one), reading(2, 0.0, 70.0, 0),
                 reading(3, 0.0, 70.0, 0)]
        out.append(Frame(t=T0 + i, seq=i, cards=cards,
                         host=HostSample(cpu_pct=20.0, iowait_pct=0.0, cpu_count=16)))
    return out


def test_the_job_line_counts_the_cards_whose_badges_say_so() -> None:
    stream = frames(recovers_at=30)
    for focus in (None, {JOB_KEY}, {JOB_KEY, "nvidia:2"}):
        tracker = VerdictTracker()
        for frame in stream:
            shown = tracker.push(frame, focus=focus)
        badges = {cid: v.kind for cid, v in shown.cards.items()}
        assert badges == {"nvidia:0": "starving", "nvidia:1": "saturated",
                          "nvidia:2": "idle", "nvidia:3": "idle"}, focus
        assert shown.job.kind == "starving"
        assert shown.job.why[0] == "1 of 4 cards starving: nvidia:0", focus
        # The whole window judged anew still counts nvidia:1 starving (20 of its 31 polls):
        # what the job line said before it was composed from the badges.
        again = judge(list(tracker.window)).job
        assert again.why[0].startswith("2 of 4 cards starving"), again.why


def test_the_job_follows_a_badge_once_it_turns() -> None:
    # The same recovery seen poll by poll: the job line drops nvidia:1 on the poll its badge
    # turns, not before and not later.
    tracker = VerdictTracker()
    turned = None
    for frame in frames(recovers_at=30):
        shown = tracker.push(frame, focus={JOB_KEY})
        counted = "nvidia:1" in shown.job.why[0]
        starving_badge = shown.cards["nvidia:1"].kind == "starving"
        if shown.job.kind == "starving" and shown.cards["nvidia:1"].kind != "unknown":
            assert counted == starving_badge, (frame.seq, shown.job.why[0])
        if not starving_badge and turned is None and frame.seq >= 30:
            turned = frame.seq
    assert turned is not None and 30 < turned <= 33


def test_cards_out_of_focus_carry_no_reasons_until_explained() -> None:
    tracker = VerdictTracker()
    for frame in frames(recovers_at=30):
        shown = tracker.push(frame, focus={JOB_KEY})
    assert shown.cards["nvidia:1"].why == []
    explained = tracker.explain("nvidia:1")
    assert explained is not None and explained.kind == "saturated"
    assert explained.why and "over" in explained.why[0]
    assert tracker.assessment.cards["nvidia:1"] == explained
