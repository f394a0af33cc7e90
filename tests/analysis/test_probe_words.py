"""The probe's figures in words: one vocabulary, two registers (tight rows, prose lines)."""

from __future__ import annotations

from dataclasses import dataclass

from gpusat_tui.analysis.probe_reading.probe_words import (
    NOT_MEASURED,
    allocator_detail,
    allocator_words,
    figures,
    framework_words,
    note_line,
    percent,
    rate,
    silent_words,
    span_words,
    step_words,
    throughput_words,
    wait_sentence,
    wait_words,
)
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.model import ProbeAlloc

GIB = 1024**3


def test_a_wait_reads_the_same_in_both_registers_but_for_the_percent_sign() -> None:
    assert percent(34.4) == "34 %" and percent(34.6, tight=True) == "35%"
    assert wait_words(43.2) == "data wait 43 %"
    assert wait_words(43.2, tight=True, label="wait") == "wait 43%"
    # Several ranks: a range; equal after rounding: one figure.
    assert wait_words([12.0, 34.4], tight=True) == "data wait 12–34%"
    assert wait_words([30.2, 29.8], tight=True) == "data wait 30%"
    assert wait_words([]) is None and wait_words(None) is None


def test_a_windowed_figure_names_its_span_and_a_latest_one_claims_none() -> None:
    assert span_words(11.4) == " over the last 11 s"
    assert span_words(None) == "" and span_words(0.0) == ""
    assert wait_words(51.0, span_s=11.0) == "data wait 51 % over the last 11 s"
    assert wait_words(51.0, span_s=11.0, tight=True) == "data wait 51% over the last 11 s"


def test_a_wait_the_probe_cannot_measure_says_why_in_prose_and_briefly_in_a_row() -> None:
    note = "data sink mode: the wait is on the device queue, not measured"
    assert wait_words(None, note=note) == note
    assert wait_words(None, note=note, tight=True) == NOT_MEASURED
    # A figure present is the figure: the caller decides whether its note outranks it.
    assert wait_words(20.0, note=note, tight=True) == "data wait 20%"
    # A note from a probe file is shown, never interpreted.
    assert wait_words(None, note="x\x1b[31mred\x07") == "xred?"
    assert note_line(note, "PID 7, rank 1") == (
        f"{note}, said by the probe in the trainer (PID 7, rank 1)")


def test_step_and_throughput_group_thousands_and_shorten_only_in_a_row() -> None:
    assert step_words(7000.0) == "step 7,000 ms"
    assert step_words([205.0, 1230.0]) == "step 205–1,230 ms"
    assert step_words(None) is None and step_words([]) is None
    assert throughput_words(1240.0, 9.0) == "1,240 samples/s"
    assert throughput_words(None, 1.46) == "1.5 batches/s"
    assert throughput_words(None, None) is None
    assert rate(12_345.0) == "12,345" and rate(12_345.0, tight=True) == "12.3k"
    assert rate(9_999.0, tight=True) == "9,999"


def test_allocator_framework_and_silence() -> None:
    assert allocator_words(61 * GIB, 70 * GIB, 4) == "allocator 61.0/70.0 GiB · 4 alloc retries"
    assert allocator_words(None, 70 * GIB) == "reserved 70.0 GiB"
    assert allocator_words(61 * GIB, None) is None
    alloc = ProbeAlloc(allocated_bytes=61 * GIB, reserved_bytes=70 * GIB, alloc_retries=0)
    assert allocator_detail(alloc) == "alloc 61.0 GiB · reserved 70.0 GiB · 0 retries"
    assert allocator_detail(None) == "allocator: no figures"
    assert framework_words("torch") == " (torch)" and framework_words(None) == ""
    assert silent_words(12.0) == "silent 12 s" and silent_words(2.0) is None
    assert silent_words(None) is None
    assert figures(("a", None, "", "b")) == "a · b"


@dataclass
class _Rank:
    wait_pct: float | None
    span_s: float
    step_ms: float | None
    samples_per_s: float | None
    batches_per_s: float | None
    who: str = "PID 100"


def test_the_why_line_quotes_wait_span_meaning_and_figures() -> None:
    th = Thresholds()
    line = wait_sentence(_Rank(43.0, 11.0, 1234.0, 1240.0, 9.0), th)
    assert line.startswith("data wait 43 % over the last 11 s, measured in the trainer "
                           "(PID 100): ")
    assert line.endswith("; step 1,234 ms · 1,240 samples/s")
    low = wait_sentence(_Rank(2.0, 11.0, None, None, 3.0), th, phase="evaluation",
                        guess=True)
    assert "the wait is low" in low and "; 3.0 batches/s; phase: evaluation" in low
    assert low.endswith("(which card this trainer drives is a guess: local rank order)")
