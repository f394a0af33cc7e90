"""The job's verdict when no accelerator tool answers but trainers publish probe files.

A laptop, a CPU box or a container without the vendor's SMI tool has no card figures, yet the
probe inside the trainer measures what matters most: how much of the loop waits on
``next(dataloader)``. A measured wait at or above ``data_wait_starving_pct`` is ``starving``
whatever the card would say (the same rule as `probe_rules.measured_verdict`), its cause from
the host's figures (workers pegged, disk waits); the allocator's figures can show
fragmentation. What needs a card (saturated, idle, stalled, a straggler by utilisation) is not
claimed: below the line the verdict stays ``unknown`` (cause ``not-starving``) and says what was
measured. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
from gpusat_tui.analysis.probe_reading.measured import Measured
from gpusat_tui.analysis.probe_reading.probe_ranks import Rank
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.verdicts.probe_rules import waiting_cause
from gpusat_tui.model import Verdict

__all__ = ["NOT_STARVING", "NO_TOOL_LINE", "probe_only_jobs", "probe_only_verdict"]

#: The label of every verdict and screen that stands on the probe and the host alone.
NO_TOOL_LINE = "no accelerator tool: figures from the job and the host only"

#: The cause of an ``unknown`` verdict whose measured data wait is below the starving line: not
#: saturated (that needs the card), but not starving either (a notice says it recovered).
NOT_STARVING = "not-starving"

#: Which of several separate jobs' verdicts stands for the host: the most severe first (the
#: one an alert or a badge must not miss), ``unknown`` (nothing measured, or below the line)
#: last.
_JOB_ORDER = ("stalled", "fragmenting", "starving", "unknown")

_TOOL_ADVICE = (
    "Install or point at the vendor's tool (--tool VENDOR=PATH) to see the cards' own figures "
    "(utilisation, power, memory)"
)


def probe_only_verdict(
    ranks: Sequence[Rank], evidence: Callable[[], HostEvidence], th: Thresholds
) -> Verdict:
    """The job verdict from the probed trainers (``ranks``) and the host evidence alone."""
    measured = Measured(list(ranks))
    frag = measured.fragmenting(th)
    if frag is not None:
        return Verdict(
            kind="fragmenting", why=[NO_TOOL_LINE, *frag],
            advice=[
                "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (or the vendor's "
                "equivalent) so freed blocks can be reused",
                "Keep tensor shapes static (pad or bucket variable lengths); no empty_cache() "
                "in the loop",
            ],
            confidence=0.8,
        )
    wait = measured.wait_pct
    if wait is None:
        notes = measured.note_lines()
        return Verdict(
            kind="unknown",
            why=[NO_TOOL_LINE, *notes] if notes else [
                NO_TOOL_LINE, f"{len(ranks)} probed trainer(s), none took a batch from a "
                "DataLoader in this window: no data wait to judge"],
            advice=[_TOOL_ADVICE], confidence=0.0,
        )
    line = measured.wait_line(th)
    if wait >= th.data_wait_starving_pct:
        cause, cwhy, cadvice = waiting_cause(evidence(), th, "the card",
                                             measured.main.num_workers, measured.main.framework)
        return Verdict(kind="starving", cause=cause, why=[NO_TOOL_LINE, line, *cwhy],
                       advice=cadvice, confidence=0.8)
    return Verdict(
        kind="unknown", cause=NOT_STARVING,
        why=[NO_TOOL_LINE, line, "whether the card is busy between batches needs the vendor's "
             "tool"],
        advice=[_TOOL_ADVICE], confidence=0.0,
    )


def probe_only_jobs(
    ranks: Sequence[Rank], evidence: Callable[[], HostEvidence], th: Thresholds,
    job_of: Mapping[object, str] | None,
    job_evidence: Callable[[str], HostEvidence] | None = None,
) -> Verdict:
    """`probe_only_verdict` for each job apart (``job_of``: each trainer's job key): two
    separate jobs' trainers are never read as two ranks of one, and each job's cause comes
    from its own processes (``job_evidence``: a job key's evidence; without it, or for
    trainers of no known job, the host's).
    The verdict given is the most severe job's, named as such, with a line for each other
    job's own verdict and data wait."""
    groups: dict[str | None, list[Rank]] = {}
    for r in ranks:
        groups.setdefault(job_of.get(r.pid) if job_of else None, []).append(r)

    def own(key: str | None) -> Callable[[], HostEvidence]:
        if key is None or job_evidence is None:
            return evidence
        return lambda: job_evidence(key)

    if len(groups) < 2:
        # One job probed (a dashboard's followed job among others on the host, or the only
        # one): still its own processes' evidence, not what the host's other jobs do.
        return probe_only_verdict(ranks, own(next(iter(groups), None)), th)
    judged = {key: (probe_only_verdict(rs, own(key), th), Measured(rs).wait_pct)
              for key, rs in groups.items()}

    def order(key: str | None) -> tuple[int, float]:
        verdict, wait = judged[key]
        rank = _JOB_ORDER.index(verdict.kind) if verdict.kind in _JOB_ORDER else len(_JOB_ORDER)
        return rank, -(wait if wait is not None else -1.0)

    keys = sorted(groups, key=order)
    shown, _ = judged[keys[0]]
    others = []
    for key in keys[1:]:
        verdict, wait = judged[key]
        kind = verdict.kind + (f" ({verdict.cause})" if verdict.cause else "")
        measured = f", data wait {wait:.0f} %" if wait is not None else ""
        others.append(f"{key or 'a job with no key'}: {kind}{measured}")
    head = (f"{len(groups)} separate jobs on this host, each judged from its own probes alone; "
            f"this is {keys[0] or 'a job with no key'}'s verdict")
    why = [NO_TOOL_LINE, head, *shown.why[1:], "the other jobs, on their own: " + "; ".join(others)]
    return shown.model_copy(update={"why": why})
