"""The verdict engine's shortcuts give exactly what plain `judge` gives.

The tracker reads each frame once (`frame_facts`, which also keeps what the frame showed of a
card's host evidence or stall), judges evidence windows one card at a time (`PreparedWindow`,
`judge_card_prepared`) and shares what is found over one history between the windows of a push
(`History`): these tests pin those to `judge` itself, over every labelled scenario, windows of
several lengths and odd thresholds.
"""

from __future__ import annotations

import pytest

from gpusat_tui.analysis.facts import frame_facts
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS, Thresholds
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.analysis.verdicts.verdict import (
    History,
    PreparedWindow,
    judge,
    judge_card_prepared,
    judge_prepared,
)
from gpusat_tui.model import CardReading, Frame, ProcessSample, Verdict
from tests.scenarios import SCENARIOS


def widened(frames: list[Frame], cards: int) -> list[Frame]:
    """The scenario's cards repeated to ``cards`` cards (more cards, more job groupings)."""
    return [
        f.model_copy(update={"cards": [
            f.cards[i % len(f.cards)].model_copy(update={"index": i}) for i in range(cards)
        ]}) if f.cards else f
        for f in frames
    ]


def windows(frames: list[Frame]) -> list[list[Frame]]:
    return [
        frames[start:end]
        for end in range(1, len(frames) + 1, 4)
        for start in sorted({0, max(0, end - 3), max(0, end - 30)})
    ]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_card_by_card_equals_the_whole_judgement(name: str) -> None:
    compared = lagging = 0
    for frames in (SCENARIOS[name].frames(48), widened(SCENARIOS[name].frames(48), 6)):
        for window in windows(frames):
            facts = [frame_facts(f) for f in window]
            whole = judge(window)
            assert judge_prepared(window, facts) == whole
            prepared = PreparedWindow(window, facts)
            for cid, verdict in whole.cards.items():
                assert prepared.card(cid) == verdict
                assert judge_card_prepared(window, facts, cid) == verdict
                compared += 1
                lagging += verdict.kind == "imbalanced"
            assert prepared.card("nvidia:99") is None
    assert compared > 0
    if name == "imbalanced_4_cards":
        # The one line that depends on the other cards was compared too.
        assert lagging > 0


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_card_by_card_equals_the_whole_judgement_with_history(name: str) -> None:
    # The tracker's recent windows come with history (``context``) that only the duration
    # rules read (imbalance persistence, stall duration): the shortcut must agree there too.
    compared = changed = 0
    frames = widened(SCENARIOS[name].frames(40), 4)
    facts = [frame_facts(f) for f in frames]
    for end in range(4, len(frames) + 1, 3):
        for start in sorted({0, max(0, end - 21)}):
            for context in sorted({0, max(0, end - start - 3), max(0, end - start - 8)}):
                whole = judge_prepared(frames[start:end], facts[start:end], context=context)
                prepared = PreparedWindow(frames[start:end], facts[start:end], context=context)
                for cid, verdict in whole.cards.items():
                    assert prepared.card(cid) == verdict, (start, end, context, cid)
                    compared += 1
                if context:
                    plain = judge(frames[start + context:end])
                    changed += plain != whole
    assert compared > 0
    if name in {"stalled", "straggler_2_cards"}:
        assert changed > 0  # the history did change verdicts, and both paths agreed


def judged_alone(frames: list[Frame], context: int) -> object:
    """The window judged on facts of its own (nothing kept from other windows)."""
    return judge_prepared(frames, [frame_facts(f) for f in frames], context=context)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_windows_sharing_frames_and_a_history_judge_as_if_alone(name: str) -> None:
    # As in a tracker: one list of facts read by windows of many starts and ends (each frame
    # keeps what it showed of a card's host evidence and stall), and the windows that start
    # their history at the same frame share one History (its lags and stalls).
    frames = widened(SCENARIOS[name].frames(40), 4)
    facts = [frame_facts(f) for f in frames]
    compared = 0
    for end in range(4, len(frames) + 1, 5):
        for start in sorted({0, max(0, end - 21), max(0, end - 9)}):
            shared = History(facts[start:end], DEFAULT_THRESHOLDS)
            # Windows of 1 poll (every card unknown), 3 and 8 polls, and the whole: each finds
            # its own active cards, so its own lag over the shared history.
            contexts = {0, max(0, end - start - 1), max(0, end - start - 3), end - start - 8}
            for context in sorted(c for c in contexts if c >= 0):
                alone = judged_alone(frames[start:end], context)
                assert judge_prepared(
                    frames[start:end], facts[start:end], context=context, history=shared
                ) == alone, (start, end, context)
                prepared = PreparedWindow(
                    frames[start:end], facts[start:end], context=context, history=shared
                )
                for cid, verdict in alone.cards.items():  # type: ignore[attr-defined]
                    assert prepared.card(cid) == verdict, (start, end, context, cid)
                    compared += 1
    assert compared > 0


def test_a_frame_keeps_its_evidence_only_while_the_tie_is_the_same() -> None:
    # Worker 11's trainer (10, on nvidia:0) shows up only from poll 15: a window of the first
    # polls ties the worker to no card, a window reaching poll 15 ties it to nvidia:0 at every
    # poll, the early ones included. The early frames' kept evidence must follow.
    def frame(i: int) -> Frame:
        procs = [
            ProcessSample(pid=20, role="trainer", name="python", cpu_pct=30.0,
                          card_ids=["nvidia:1"]),
            ProcessSample(pid=21, role="dataloader_worker", name="pt_data_worker",
                          cpu_pct=99.0, trainer_pid=20),
            ProcessSample(pid=11, role="dataloader_worker", name="pt_data_worker",
                          cpu_pct=99.0 if i < 15 else 20.0, trainer_pid=10,
                          state="disk-sleep" if i < 15 else "running"),
        ]
        if i >= 15:
            procs.append(ProcessSample(pid=10, role="trainer", name="python", cpu_pct=100.0,
                                       card_ids=["nvidia:0"]))
        cards = [
            CardReading(vendor="nvidia", index=j, util_pct=30.0 + i % 3, power_w=120.0,
                        power_cap_w=400.0, mem_used_mib=50000.0, mem_total_mib=80000.0)
            for j in range(2)
        ]
        return Frame(t=float(i), seq=i, cards=cards, processes=procs)

    frames = [frame(i) for i in range(30)]
    facts = [frame_facts(f) for f in frames]
    causes = set()
    for start, end in ((0, 10), (0, 30), (5, 12), (0, 20), (2, 8), (10, 30)):
        for context in (0, end - start - 3):
            shared = judge_prepared(frames[start:end], facts[start:end], context=context)
            assert shared == judged_alone(frames[start:end], context), (start, end, context)
            causes.add(shared.cards["nvidia:0"].cause)
    assert len(causes) > 1  # the tie did change what the early polls showed


def test_a_frame_keeps_what_it_showed_of_a_stall_only_while_the_tie_is_the_same() -> None:
    # nvidia:0 holds memory and runs nothing; its trainer 10 is idle. Worker 11 is pegged; its
    # trainer 30 (also on nvidia:0) is seen only in the first 6 polls: a window reaching back
    # to them ties the worker to the card (no stall), a later one does not (a stall so far).
    def frame(i: int) -> Frame:
        procs = [
            ProcessSample(pid=10, role="trainer", name="python", cpu_pct=0.0,
                          card_ids=["nvidia:0"]),
            ProcessSample(pid=11, role="dataloader_worker", name="pt_data_worker",
                          cpu_pct=99.0, trainer_pid=30),
        ]
        if i < 6:
            procs.append(ProcessSample(pid=30, role="trainer", name="python", cpu_pct=0.0,
                                       card_ids=["nvidia:0"]))
        card = CardReading(vendor="nvidia", index=0, util_pct=0.0, power_w=90.0,
                           power_cap_w=400.0, mem_used_mib=60000.0, mem_total_mib=80000.0)
        return Frame(t=float(i), seq=i, cards=[card], processes=procs)

    frames = [frame(i) for i in range(20)]
    facts = [frame_facts(f) for f in frames]
    seen = set()
    for start in (12, 0, 5, 8):
        for context in (0, 20 - start - 3):
            shared = judge_prepared(frames[start:], facts[start:], context=context)
            assert shared == judged_alone(frames[start:], context), (start, context)
            seen.add(tuple(shared.cards["nvidia:0"].why))
    assert len(seen) > 1  # the tie did change what the polls showed


@pytest.mark.parametrize("ratio", [-0.5, 0.0, 0.6, 1.0, 1.5])
@pytest.mark.parametrize("gap", [-10.0, 0.0, 35.0, 120.0])
def test_card_by_card_equals_the_whole_judgement_with_odd_imbalance_lines(
    ratio: float, gap: float
) -> None:
    th = Thresholds(imbalance_ratio=ratio, imbalance_gap_pct=gap)
    frames = widened(SCENARIOS["imbalanced_4_cards"].frames(24), 6)
    for window in (frames[:10], frames[4:24], frames):
        facts = [frame_facts(f) for f in window]
        whole = judge(window, th)
        assert len(whole.cards) == 6
        for cid, verdict in whole.cards.items():
            assert judge_card_prepared(window, facts, cid, th) == verdict


def test_the_verdicts_built_by_the_rules_are_valid_verdicts() -> None:
    seen = 0
    for scenario in SCENARIOS.values():
        frames = scenario.frames(20)
        for assessment in (judge(frames), judge(frames[-3:]), judge(frames[:1])):
            for verdict in [*assessment.cards.values(), assessment.job]:
                assert Verdict.model_validate(verdict.model_dump()) == verdict
                assert all(isinstance(line, str) for line in verdict.why + verdict.advice)
                assert isinstance(verdict.confidence, float)
                seen += 1
    assert seen > 50


def test_tracker_evidence_is_the_judgement_of_the_window_since_the_verdict() -> None:
    # The badge shows, once it holds, the evidence window's verdict: all polls since it was
    # adopted (here the whole 30 s window of a steady scenario).
    frames = SCENARIOS["starving_input_bound"].frames(40)
    tracker = VerdictTracker()
    for frame in frames:
        shown = tracker.push(frame)
    window = list(tracker.window)
    assert len(window) == 31
    reference = judge(window)
    assert shown.cards["nvidia:0"].kind == "starving"
    assert shown.cards["nvidia:0"] == reference.cards["nvidia:0"]


# --- focus: only the keys on screen get the evidence window's figures -----------------------


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_focus_changes_figures_only_never_kinds_or_causes(name: str) -> None:
    frames = widened(SCENARIOS[name].frames(), 4)
    full, focused = VerdictTracker(), VerdictTracker()
    focus = {"job", frames[-1].cards[1].id if frames[-1].cards else "none"}
    brief_figures = 0
    for frame in frames:
        everything = full.push(frame)
        some = focused.push(frame, focus=focus)
        assert set(some.cards) == set(everything.cards)
        assert (some.job.kind, some.job.cause) == (everything.job.kind, everything.job.cause)
        # The job's line (its first reason) is the same; its confidence and advice are its
        # cards' as shown, and out of focus they carry the recent window's.
        assert some.job.why[:1] == everything.job.why[:1]
        for key, verdict in everything.cards.items():
            other = some.cards[key]
            assert (other.kind, other.cause) == (verdict.kind, verdict.cause), key
            if key in focus:
                assert other == verdict, key
            else:
                # Out of focus: no reasons written (only a cause still held back says so).
                assert all(w.startswith("cause not named yet") for w in other.why), key
                brief_figures += other != verdict
    if name in {"saturated_steady", "starving_input_bound", "imbalanced_4_cards"}:
        # The scenarios do hold a verdict long enough for the windows to differ.
        assert brief_figures > 0


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_explain_gives_the_evidence_figures_of_a_key_out_of_focus(name: str) -> None:
    frames = widened(SCENARIOS[name].frames(), 3)
    full, focused = VerdictTracker(), VerdictTracker()
    compared = 0
    for frame in frames:
        everything = full.push(frame)
        focused.push(frame, focus={"job"})
        for key, verdict in everything.cards.items():
            explained = focused.explain(key)
            assert explained is not None
            assert (explained.kind, explained.cause) == (verdict.kind, verdict.cause)
            assert focused.assessment.cards[key] == explained
            state = full.badges.shown[key]
            if state.candidate is None and state.cause_candidate is None:
                # Settled: exactly what the tracker without focus shows.
                assert explained == verdict, key
                compared += 1
    assert compared > len(frames)
    assert focused.explain("nvidia:99") is None
