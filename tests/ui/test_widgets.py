"""Pure pieces of the UI: sparkline rows, literal text, process and status lines."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusat_tui.analysis.probe_reading.probe_words import allocator_detail
from gpusat_tui.model import Frame, ProbeAlloc, ProbeSample, ProcessSample
from gpusat_tui.text import clean
from gpusat_tui.ui.state import HISTORY_POINTS, DashboardState
from gpusat_tui.ui.text import fmt, literal
from gpusat_tui.ui.widgets.badge import badge_word
from gpusat_tui.ui.widgets.processes import (
    NO_PROBE,
    probe_row,
    probe_summary,
    process_summary,
    process_text,
)
from gpusat_tui.ui.widgets.spark import spark_rows
from gpusat_tui.ui.widgets.status import StatusInfo, status_text
from tests.ui.conftest import T0, card


def test_spark_rows_fixed_scale_gaps_and_padding() -> None:
    # Zero is blank like the padding before the first point; 1 % still shows the lowest block.
    assert spark_rows([0.0, 50.0, 100.0, None, 1.0], 7, 1, 100.0) == ["   ▄█·▁"]
    # Two rows: 50 % fills the bottom row exactly, 100 % both.
    assert spark_rows([50.0, 100.0, 25.0], 3, 2, 100.0) == [" █ ", "██▄"]
    # Only the last ``width`` points are drawn; values above the top clip.
    assert spark_rows([100.0, 0.0, 250.0], 2, 1, 100.0) == [" █"]
    assert spark_rows([10.0], 0, 1, 100.0) == []
    assert spark_rows([10.0], 3, 0, 100.0) == []


def test_clean_and_literal_never_interpret_data() -> None:
    assert clean("a\x1b[31mred\x1b[0m\x07b\nc") == "ared?b c"
    assert clean("\x1b]8;;http://x\x07link\x1b]8;;\x07") == "link"
    assert clean("x" * 300, limit=10) == "xxxxxxxxx…"
    assert clean(None) == ""
    assert clean("a\u202eb\u2028c\u00a0d\u200be") == "a?b?c d?e"
    text = literal("[bold]x[/]")
    assert text.plain == "[bold]x[/]" and text.spans == []
    assert fmt(None, "%") == "n/a" and fmt(0.0, "%") == "0%" and fmt(1.25, " W", 1) == "1.2 W"


def test_badge_words() -> None:
    assert badge_word("starving", "io-bound") == "STARVING (io-bound)"
    assert badge_word("starving", "io-bound", short=True) == "STARVING"
    assert badge_word("saturated", "x") == "SATURATED"
    assert badge_word("nonsense") == "UNKNOWN"


def test_process_summary_and_rows() -> None:
    procs = [
        ProcessSample(pid=10, role="trainer", name="python train.py", cpu_pct=101.0,
                      state="running", pin_cpu_pct=33.0),
        ProcessSample(pid=11, role="dataloader_worker", name="w", cpu_pct=99.0,
                      state="running", trainer_pid=10),
        ProcessSample(pid=12, role="dataloader_worker", name="w", cpu_pct=None,
                      state="disk-sleep", trainer_pid=10),
    ]
    assert process_summary(procs) == (
        "1 trainer · 2 workers (1 disk-sleep, 1 running) · workers 99% CPU"
    )
    lines = process_text(procs).plain.splitlines()
    assert lines[1] == NO_PROBE
    assert lines[2] == "trainer      10   101% running    python train.py  pin-memory 33%"
    assert lines[3] == " worker      11    99% running    w"
    assert lines[4] == " worker      12    n/a disk-sleep w"
    assert process_summary([]).startswith("No training process found")
    many = [ProcessSample(pid=i, role="dataloader_worker", name="w", trainer_pid=1)
            for i in range(2, 20)]
    assert process_text(many, max_rows=5).plain.splitlines()[-1] == "… 13 more"


def test_status_text() -> None:
    info = StatusInfo(
        source="live · recording to run.jsonl", interval_s=1.0, own_cpu_pct=0.37,
        stale=(("amd:1", 12.4),), errors=(("rocm-smi", "timeout", "killed after 2 s"),),
    )
    assert status_text(info).plain == (
        "live · recording to run.jsonl · every 1 s · stale amd:1 12 s"
        " · rocm-smi hung: killed after 2 s · monitor 0.4% CPU"
    )
    assert status_text(StatusInfo(source="live", quiet_s=9.0)).plain == (
        "live · no frame for 9 s · monitor … CPU"
    )


def test_state_history_is_bounded_and_resets() -> None:
    state = DashboardState()
    for i in range(HISTORY_POINTS + 30):
        state.push(Frame(t=T0 + i, cards=[card(0, float(i % 100), power=350.0, cap=700.0),
                                           card(1, None, power=80.0, cap=None)]))
    util = state.cards["nvidia:0"].util
    assert len(util) == HISTORY_POINTS and util[-1] == float((HISTORY_POINTS + 29) % 100)
    assert state.cards["nvidia:0"].power[-1] == 50.0  # % of cap
    assert state.cards["nvidia:1"].power[-1] == 80.0  # watts when no cap is known
    assert state.cards["nvidia:1"].util[-1] is None
    assert state.cards["nvidia:0"].mem[-1] == 50.0
    state.reset()
    assert state.cards == {} and state.frames_seen == 0


@given(st.text(max_size=300))
def test_clean_output_is_always_printable_single_line(raw: str) -> None:
    out = clean(raw)
    assert "\n" not in out and "\x1b" not in out
    assert all(ch.isprintable() for ch in out)
    assert len(out) <= 200
    assert literal(raw).plain == out


@given(
    st.lists(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False,
                                            min_value=-1e6, max_value=1e6)), max_size=50),
    st.integers(min_value=-2, max_value=80),
    st.integers(min_value=-1, max_value=4),
)
def test_spark_rows_shape_for_any_data(values: list[float | None], width: int,
                                       height: int) -> None:
    rows = spark_rows(values, width, height, 100.0)
    if width <= 0 or height <= 0:
        assert rows == []
    else:
        assert len(rows) == height and all(len(r) == width for r in rows)


def reference_spark_rows(values: list[float | None], width: int, height: int,
                         top: float) -> list[str]:
    """The plain definition: one character per (row, column), computed directly."""
    if width <= 0 or height <= 0:
        return []
    tail = list(values)[-width:]
    rows = []
    for row in range(height):
        base = (height - 1 - row) * 8
        chars = []
        for value in tail:
            if value is None:
                chars.append("·" if row == height - 1 else " ")
                continue
            frac = min(max(value / top, 0.0), 1.0) if top > 0 else 0.0
            level = max(round(frac * height * 8), 1) if value > 0 else 0
            chars.append(" ▁▂▃▄▅▆▇█"[min(max(level - base, 0), 8)])
        rows.append(" " * (width - len(tail)) + "".join(chars))
    return rows


@given(
    st.lists(st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False,
                                            min_value=-1e3, max_value=1e3)), max_size=130),
    st.integers(min_value=-2, max_value=130),
    st.integers(min_value=-1, max_value=12),
    st.sampled_from([100.0, 1.0, 700.0, 0.0]),
)
def test_spark_rows_match_the_plain_definition(values: list[float | None], width: int,
                                               height: int, top: float) -> None:
    assert spark_rows(values, width, height, top) == reference_spark_rows(values, width,
                                                                          height, top)


def test_own_cpu_sampler_is_the_cpu_share_since_the_last_call() -> None:
    from gpusat_tui.ui.self_cost import process_cpu_sampler

    cpu, wall = [10.0], [100.0]
    sample = process_cpu_sampler(lambda: cpu[0], lambda: wall[0])
    cpu[0], wall[0] = 10.05, 105.0  # 50 ms of CPU over 5 s
    assert sample() == pytest.approx(1.0)
    cpu[0], wall[0] = 10.05, 110.0  # idle
    assert sample() == 0.0
    assert sample() is None  # no time passed: no figure, never a division by zero
    real = process_cpu_sampler()
    sum(i * i for i in range(200_000))
    figure = real()
    assert figure is not None and figure > 0.0


GIB = 1024**3


def probe(pid: int, rank: int, **kw: object) -> ProbeSample:
    figures: dict[str, object] = dict(card_id=f"nvidia:{rank}", data_wait_pct=30.0 + rank,
                                      step_ms=210.0 + rank, batches_per_s=4.0,
                                      samples_per_s=512.0, age_s=0.4)
    figures.update(kw)
    return ProbeSample(pid=pid, rank=rank, world_size=2, **figures)  # type: ignore[arg-type]


def test_probe_figures_per_rank_and_for_the_job() -> None:
    ranks = [probe(10, 0), probe(20, 1, data_wait_pct=4.0, step_ms=210.0)]
    assert probe_summary(ranks) == "data wait 4–30% · step 210 ms · 1,024 samples/s (2 ranks)"
    assert probe_summary([probe(10, 0)]) == "data wait 30% · step 210 ms · 512 samples/s"
    assert probe_summary([]) == ""
    # No samples/s (batch size unknown): batches/s; a silent probe says so.
    quiet = probe(10, 0, samples_per_s=None, age_s=12.0)
    assert probe_row(quiet) == (
        "rank 0 nvidia:0 · wait 30% · step 210 ms · 4.0 batches/s · silent 12 s")
    assert probe_summary([quiet]).endswith("· probe silent 12 s")
    assert probe_summary([ProbeSample(pid=5)]) == "probe: no batch yet"
    alloc = ProbeAlloc(allocated_bytes=61 * GIB, reserved_bytes=70 * GIB,
                       inactive_split_bytes=3 * GIB, alloc_retries=4, ooms=0)
    assert allocator_detail(probe(1, 0, alloc=alloc).alloc) == (
        "alloc 61.0 GiB · reserved 70.0 GiB · split 3.0 GiB · 4 retries · 0 OOMs")
    assert allocator_detail(probe(1, 0).alloc) == "allocator: no figures"


def test_process_text_puts_each_ranks_figures_on_its_trainer_row() -> None:
    procs = [
        ProcessSample(pid=10, role="trainer", name="python train.py", cpu_pct=101.0,
                      state="running"),
        ProcessSample(pid=11, role="dataloader_worker", name="w", cpu_pct=99.0,
                      state="running", trainer_pid=10),
    ]
    alloc = ProbeAlloc(allocated_bytes=2 * GIB, reserved_bytes=4 * GIB)
    ranks = [probe(10, 0, alloc=alloc), probe(99, 1, card_id="[red]x[/]", alloc=alloc)]
    lines = process_text(procs, probes=ranks).plain.splitlines()
    assert lines[1] == "probe data wait 30–31% · step 210–211 ms · 1,024 samples/s (2 ranks)"
    # A rank whose process the scan did not find still shows (first), its card id literal.
    assert lines[2] == ("probed       99 rank 1 [red]x[/] · wait 31% · step 211 ms · "
                        "512 samples/s")
    assert lines[3].endswith("python train.py  rank 0 nvidia:0 · wait 30% · step 210 ms · "
                             "512 samples/s")
    # Allocator figures only where fragmenting is suspected (the caller decides per rank).
    lines = process_text(procs, probes=ranks,
                         allocator_for=lambda p: p.rank == 1).plain.splitlines()
    assert "alloc" not in lines[3]
    assert lines[2].endswith("· alloc 2.0 GiB · reserved 4.0 GiB")
