"""Worst first (`analysis.fleet_triage`): the summary, problem jobs then problem hosts by
severity and waste, the healthy kept apart for the list to fold, and the filters."""

from __future__ import annotations

from gpusat_tui.analysis.fleet_triage import FleetFilter, parse_filter, summary_triage, triage
from gpusat_tui.model import CardReading, FleetItem, FleetSummary, JobContext


def card(host: str, index: int, util: float | None = 95.0,
         stale: float | None = None) -> CardReading:
    return CardReading(vendor="nvidia", index=index, host=host, util_pct=util, stale_s=stale)


def fleet() -> tuple[list[CardReading], dict[str, str], list[JobContext]]:
    """12 hosts x 4 cards: a starving 2-host job, a stalled 1-host job, an imbalanced job,
    a starving host with no job, a host down, the rest saturated or idle."""
    cards: list[CardReading] = []
    kinds: dict[str, str] = {}
    for h in range(12):
        host = f"gpu-{h:02d}"
        for i in range(4):
            c = card(host, i, stale=30.0 if h == 11 else None)
            cards.append(c)
            kinds[c.id] = "idle" if h == 10 else "saturated"
    def mark(host: str, kind: str, util: float, indices: range = range(4)) -> None:
        for i in indices:
            c = card(host, i, util)
            cards[[x.id for x in cards].index(c.id)] = c
            kinds[c.id] = kind
    mark("gpu-01", "starving", 40.0)
    mark("gpu-02", "starving", 40.0)
    mark("gpu-03", "stalled", 0.0, range(1))
    mark("gpu-05", "imbalanced", 60.0, range(1))
    mark("gpu-07", "starving", 10.0)  # no job known here: a host row; wastes the most
    kinds.pop("gpu-11/nvidia:0")  # a host down: its tracker says unknown, or nothing
    jobs = [
        JobContext(scheduler="slurm", job_id="100", user="alice",
                   card_ids=[f"gpu-0{h}/nvidia:{i}" for h in (1, 2) for i in range(4)]),
        JobContext(scheduler="slurm", job_id="200", user="bob",
                   card_ids=[f"gpu-03/nvidia:{i}" for i in range(4)]),
        JobContext(scheduler="kubernetes", job_id="pod-9", user="carol",
                   card_ids=[f"gpu-05/nvidia:{i}" for i in range(4)]),
        JobContext(scheduler="slurm", job_id="300", user="dave",
                   card_ids=[f"gpu-04/nvidia:{i}" for i in range(4)]),  # healthy: no row
    ]
    return cards, kinds, jobs


def test_the_summary_counts_the_whole_fleet() -> None:
    cards, kinds, jobs = fleet()
    result = triage(cards, kinds, jobs)
    assert result.summary == (
        "12 hosts · 48 cards: 1 stalled in 1 job, 1 imbalanced job, 12 starving in 1 job, "
        "1 host down, the rest saturated or idle"
    )
    healthy = triage([card("a", 0)], {"a/nvidia:0": "saturated"})
    assert healthy.summary == "1 host · 1 card: all saturated or idle"


def test_problem_jobs_come_first_then_hosts_by_severity_and_waste() -> None:
    cards, kinds, jobs = fleet()
    result = triage(cards, kinds, jobs)
    assert [(g.label, g.worst) for g in result.groups] == [
        ("slurm 200 bob", "stalled"),
        ("kubernetes pod-9 carol", "imbalanced"),
        ("slurm 100 alice", "starving"),
        ("gpu-07", "starving"),  # hosts after every job, however much they waste
        ("gpu-11", "down"),
    ]
    starving_job = result.groups[2]
    assert starving_job.card_ids[0] == "gpu-01/nvidia:0" and len(starving_job.card_ids) == 8
    assert starving_job.waste == 8 * 0.6 and starving_job.cards == 8
    assert result.groups[0].card_ids == ("gpu-03/nvidia:0",) and result.groups[0].cards == 4
    # Healthy cards stay apart (the list folds them), in the frame's order.
    assert len(result.healthy) == 48 - 8 - 1 - 1 - 4 - 4
    assert result.healthy[0] == "gpu-00/nvidia:0"
    assert "gpu-03/nvidia:1" in result.healthy  # the stalled job's other cards are healthy


def test_within_a_severity_the_larger_waste_comes_first() -> None:
    cards = [card("small", 0, 50.0), card("big", 0, 5.0), card("big", 1, 5.0)]
    kinds = {c.id: "starving" for c in cards}
    assert [g.key for g in triage(cards, kinds).groups] == ["big", "small"]


def test_filters_by_job_user_host_pattern_kind_and_words() -> None:
    cards, kinds, jobs = fleet()

    def shown(text: str) -> tuple[list[str], int]:
        result = triage(cards, kinds, jobs, parse_filter(text))
        return [g.label for g in result.groups], len(result.healthy)

    assert shown("job:100") == (["slurm 100 alice"], 0)
    assert shown("user:dave") == ([], 4)  # a healthy job: its cards, folded
    assert shown("host:gpu-0[67]") == (["gpu-07"], 4)
    assert shown("host:gpu-1*") == (["gpu-11"], 4)
    assert shown("kind:down") == (["gpu-11"], 0)
    assert shown("kind:starv") == (["slurm 100 alice", "gpu-07"], 0)
    assert shown("carol") == (["kubernetes pod-9 carol"], 3)
    assert shown("kind:starving host:gpu-02") == (["slurm 100 alice"], 0)
    result = triage(cards, kinds, jobs, parse_filter("user:nobody"))
    assert result.groups == () and result.healthy == () and result.matched == 0
    assert result.summary.startswith("12 hosts · 48 cards")  # the summary stays whole


def test_parse_filter_reads_keys_and_words() -> None:
    assert parse_filter("  JOB:42 host:gpu-1*  Alice size:big ") == FleetFilter(
        job="42", host="gpu-1*", words=("alice", "size:big"))
    assert parse_filter("").active is False
    assert parse_filter("kind:stalled gpu").text() == "kind:stalled gpu"


def summary_of(cards: list[CardReading], kinds: dict[str, str],
               jobs: list[JobContext]) -> FleetSummary:
    """What the server's answers say of ``fleet()``: the counts, the problem cards."""
    job_of = {i: job.key for job in jobs for i in job.card_ids}
    counts: dict[str, int] = {}
    problems = []
    healthy = 0
    for c in cards:
        kind = "down" if c.stale_s is not None else kinds.get(c.id, "unknown")
        counts[kind] = counts.get(kind, 0) + 1
        if kind in ("saturated", "idle"):
            healthy += 1
            continue
        problems.append(FleetItem(id=c.id, host=c.host or "", kind=kind,
                                  job=job_of.get(c.id), util_pct=c.util_pct))
    return FleetSummary(hosts=12, cards=len(cards), kinds=counts, down_hosts=1,
                        problems=problems, healthy=healthy,
                        job_cards={job.key: len(job.card_ids) for job in jobs})


def test_the_summary_answer_gives_the_same_order_and_summary_as_every_card() -> None:
    cards, kinds, jobs = fleet()
    whole = triage(cards, kinds, jobs)
    from_server = summary_triage(summary_of(cards, kinds, jobs), jobs)
    assert from_server.summary == whole.summary
    assert [(g.label, g.card_ids, g.cards) for g in from_server.groups if g.job] == [
        (g.label, g.card_ids, g.cards) for g in whole.groups if g.job]
    assert [g.card_ids for g in from_server.groups] == [g.card_ids for g in whole.groups]
    assert from_server.healthy_count == len(whole.healthy) == 30
    assert from_server.healthy == ()  # counted, not listed: the list folds them


def test_filters_on_the_summary_answer() -> None:
    cards, kinds, jobs = fleet()
    summary = summary_of(cards, kinds, jobs)
    starving = summary_triage(summary, jobs, parse_filter("kind:starving"))
    assert [g.label for g in starving.groups] == ["slurm 100 alice", "gpu-07"]
    assert starving.healthy_count == 0  # no healthy card is starving
    by_user = summary_triage(summary, jobs, parse_filter("user:bob"))
    assert [g.label for g in by_user.groups] == ["slurm 200 bob"]
    assert by_user.healthy_count == 0  # which healthy card is whose is not asked
    by_host = summary_triage(summary, jobs, parse_filter("host:gpu-0[12]"))
    assert [g.label for g in by_host.groups] == ["slurm 100 alice"]
    # The healthy count under a host filter is the server's (asked with host=~).
    assert by_host.healthy_count == summary.healthy
