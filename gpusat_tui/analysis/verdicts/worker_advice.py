"""One rule decides the worker count: an advice list never tells a job both more and fewer
DataLoader workers.

The rules that advise on workers each see part of the picture: a measured data wait says "more
in flight", CPU contention measured as run-queue wait (`causes.input_bound` on an
oversubscribed host) says "fewer workers, pinned", and a job's advice gathers its cards'. Where
both meet, the contention wins: it is measured on the job's own processes, and more workers on
cores that are already queued for only queue longer. The other lines of the list stay.

Classified by the sentences' own words (the rules that write them live beside this module and
their tests pin the words): a sentence that says "fewer workers" asks for fewer; one of
`MORE_WORDS` asks for more.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

__all__ = ["MORE_WORDS", "one_worker_count", "worker_direction"]

#: Words of the sentences that ask for more workers (`causes`, `probe_rules`,
#: `thread_pipelines`).
MORE_WORDS: tuple[str, ...] = (
    "more num_workers", "Raise DataLoader num_workers", "more DataLoader workers",
    "more workers and a larger", "a larger num_parallel_workers", "raise num_parallel_workers",
    "Set DataLoader num_workers > 0", "set num_workers > 0",
)


def worker_direction(line: str) -> Literal["more", "fewer"] | None:
    """Which way ``line`` moves the worker count (None: it does not)."""
    if "fewer workers" in line:
        return "fewer"
    if any(word in line for word in MORE_WORDS):
        return "more"
    return None


def one_worker_count(advice: Sequence[str]) -> list[str]:
    """``advice`` without the lines asking for more workers where one asks for fewer."""
    directions = [worker_direction(line) for line in advice]
    if "fewer" not in directions or "more" not in directions:
        return list(advice)
    return [line for line, d in zip(advice, directions, strict=True) if d != "more"]
