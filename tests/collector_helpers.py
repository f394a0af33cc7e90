"""Scaffolding the vendor collector tests share: sample files, "never crash" sweeps, figures.

Every vendor test file pins its own exact figures; what lives here is only the part that is the
same for every vendor: where the captured samples are, that each one is tested and has its
provenance in ``samples/smi/INDEX.md``, and that no cut or shuffle of a sample crashes a parser
(it parses, or it raises ParseError). ``VendorCase`` is one row of the table in
``tests/collectors/test_every_collector.py`` that runs all of it for each vendor.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from gpusat_tui.collectors.base import ToolReading
from gpusat_tui.errors import ParseError
from gpusat_tui.model import CardProcess, CardReading

#: ``samples/smi``: one folder per vendor, plus ``INDEX.md`` (provenance of every file).
SMI_SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "smi"

Parser = Callable[[str], ToolReading]
Row = tuple[Any, ...]


@dataclass(frozen=True)
class Truncation:
    """Each sample cut every 5 characters: ``parsers`` read cards of ``vendor``, or refuse."""

    vendor: str
    parsers: tuple[Parser, ...]


@dataclass(frozen=True)
class VendorCase:
    """One vendor's (or tool's) captured samples and the parsers that must survive them.

    ``folder`` is ``samples/smi/<folder>``; ``test_file`` (beside the table, with its
    ``<stem>_*.py`` companions) holds the exact-figure tests that name each sample; every cut
    and every shuffle of the samples goes through each of ``parsers``, and each of ``junk`` must
    be refused (ParseError) by all of them.
    """

    folder: str
    test_file: str
    parsers: tuple[Parser, ...]
    junk: tuple[str, ...] = ()
    truncation: Truncation | None = None


def samples_dir(vendor_folder: str) -> Path:
    """``samples/smi/<vendor_folder>``."""
    return SMI_SAMPLES / vendor_folder


def read_sample(folder: Path, name: str) -> str:
    """One captured output, as the tool printed it."""
    return (folder / name).read_text(encoding="utf-8")


def sample_reader(vendor_folder: str) -> Callable[[str], str]:
    """``read(name)``: one captured output of ``samples/smi/<vendor_folder>``."""
    folder = samples_dir(vendor_folder)
    return lambda name: read_sample(folder, name)


def card_figures(cards: Iterable[CardReading]) -> list[Row]:
    """(index, name, util, used MiB, total MiB, power, cap, temp) per card: what a fake renders."""
    return [
        (c.index, c.name, c.util_pct, c.mem_used_mib, c.mem_total_mib, c.power_w,
         c.power_cap_w, c.temp_c)
        for c in cards
    ]


def process_rows(processes: Iterable[CardProcess]) -> list[Row]:
    """(pid, card id, name, used MiB) per process a tool listed."""
    return [(p.pid, p.card_id, p.name, p.mem_used_mib) for p in processes]


# --- every sample is tested and indexed ------------------------------------------------------

def assert_every_sample_tested_and_indexed(folder: Path, test_file: str) -> None:
    """Each file in ``folder`` is named (quoted) in ``test_file`` and has an INDEX.md row.

    ``test_file`` is the calling test module's ``__file__``: a sample nobody asserts on, or one
    without provenance, fails here by name. Its companions (``<stem>_*.py`` beside it, such as
    ``test_collectors_nvidia_layouts.py``) count too.
    """
    path = Path(test_file)
    source = "\n".join(
        f.read_text(encoding="utf-8")
        for f in [path, *sorted(path.parent.glob(f"{path.stem}_*.py"))]
    )
    names = sorted(f.name for f in folder.iterdir())
    assert names, "no samples found"
    untested = [n for n in names if f'"{n}"' not in source]
    assert untested == [], f"samples no test in {path.name} names: {untested}"
    index = (folder.parent / "INDEX.md").read_text(encoding="utf-8")
    unindexed = [n for n in names if f"| {folder.name}/{n} |" not in index]
    assert unindexed == [], f"samples without a row in INDEX.md: {unindexed}"  # provenance


# --- no input crashes a parser ----------------------------------------------------------------

def parse_or_refuse(parse: Parser, text: str) -> None:
    """``parse(text)`` returns cards, or raises ParseError; any other exception fails the test."""
    try:
        reading = parse(text)
    except ParseError:
        return
    for card in reading.cards:
        assert isinstance(card, CardReading)


def assert_every_line_prefix_parses_or_is_refused(
    folder: Path, parsers: Sequence[Parser]
) -> None:
    """Every sample cut after each of its lines, through every parser."""
    for path in sorted(folder.iterdir()):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        for cut in range(len(lines) + 1):
            for parse in parsers:
                parse_or_refuse(parse, "".join(lines[:cut]))


#: Hypothesis budget of the shuffled-lines sweeps: 150 examples, no deadline (2-core CI).
SWEEP_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def sample_lines_and_noise(folder: Path) -> st.SearchStrategy[list[str]]:
    """Up to 12 lines, each a line of some sample in ``folder`` or up to 60 random characters."""
    return st.lists(
        st.sampled_from(
            [ln for f in sorted(folder.iterdir()) for ln in f.read_text("utf-8").splitlines()]
        )
        | st.text(max_size=60),
        max_size=12,
    )


def assert_every_truncation_parses_or_is_refused(
    text: str, parsers: Sequence[Parser], vendor: str
) -> None:
    """``text`` cut every 5 characters (and whole): each parser reads cards of ``vendor`` or raises
    ParseError.

    At least one cut must parse, so a parser that refuses everything fails too.
    """
    parsed = 0
    for end in dict.fromkeys([*range(0, len(text) + 1, 5), len(text)]):  # and the whole
        for parse in parsers:
            try:
                reading = parse(text[:end])
            except ParseError:
                continue
            parsed += 1
            assert all(card.vendor == vendor for card in reading.cards)
    assert parsed > 0
