"""The fleet tracker writes reasons only for the cards in focus (the dashboard's selected
card): the others get kind and cause alone, shared, and `explain` gives any card in full."""

from __future__ import annotations

from gpusat_tui.analysis.fleet import FleetTracker
from gpusat_tui.model import CardReading, Frame
from gpusat_tui.sources.fleet_view.fleet_answers import RemoteVerdict


def test_only_the_cards_in_focus_get_their_reasons() -> None:
    cards = [CardReading(vendor="nvidia", index=i, host=f"h{h}", util_pct=40.0 if h else 95.0)
             for h in range(50) for i in range(8)]
    cards[-1] = cards[-1].model_copy(update={"stale_s": 30.0})
    remote = {c.id: RemoteVerdict("starving", "input") if c.host != "h0"
              else RemoteVerdict("saturated") for c in cards}
    tracker = FleetTracker(lambda: remote, lambda: {})
    frame = Frame(t=1.0, cards=cards)
    full = tracker.push(frame)  # check: no focus, every card in full
    assert all(v.why for v in full.cards.values())
    focused = tracker.push(frame, focus={"job", "h3/nvidia:2"})
    assert focused.cards["h3/nvidia:2"] == full.cards["h3/nvidia:2"]
    others = [v for k, v in focused.cards.items() if k != "h3/nvidia:2"]
    assert not any(v.why for v in others)
    # Same kinds, causes and confidence as in full; one shared verdict per kind and cause.
    assert {k: (v.kind, v.cause, v.confidence) for k, v in focused.cards.items()} == {
        k: (v.kind, v.cause, v.confidence) for k, v in full.cards.items()}
    assert len({id(v) for v in others}) == 3  # saturated, starving (input), unknown (stale)
    assert (focused.job.kind, focused.job.cause) == (full.job.kind, full.job.cause)
    assert tracker.explain("h7/nvidia:5") == full.cards["h7/nvidia:5"]
    assert tracker.explain("h49/nvidia:7") == full.cards["h49/nvidia:7"]  # the stale one


def test_the_straggler_from_the_least_busy_hosts_counts_the_whole_fleet() -> None:
    """The server sent the 16 least busy hosts and the busiest, with how many busy hosts
    there are and their median: the job line counts them all and says more may lag."""
    from gpusat_tui.model import FleetSummary

    busy = {f"h{h:03d}": 0.30 for h in range(16)} | {"h999": 0.97}
    summary = FleetSummary(hosts=1000, cards=8000, kinds={"saturated": 7872, "starving": 128},
                           host_busy=busy, busy_hosts=1000, busy_median=0.96)
    tracker = FleetTracker(lambda: {}, lambda: {})
    job = tracker.push(Frame(t=1.0, fleet=summary)).job
    assert (job.kind, job.cause) == ("imbalanced", "straggler")
    assert "(the lowest asked; more may lag) while the other 984 hosts run at 96" in job.why[0]
    # All of them sent: no such words, the others counted from what came.
    whole = summary.model_copy(update={"busy_hosts": None, "busy_median": None})
    job = tracker.push(Frame(t=2.0, fleet=whole)).job
    assert "more may lag" not in job.why[0] and "the other 1 hosts" in job.why[0]
