"""The tracker's shortcuts give exactly the verdicts of judging every window from scratch.

`VerdictTracker` reads each frame once and lets later windows and pushes reuse what it found
(a frame's kept evidence, histories shared between windows, cards judged one at a time, a
window's starving cause found once for the cards that share its evidence). ``reference=True``
judges every window anew, as the tracker's definition reads. Both are fed the same streams,
random ones (cards vanishing and coming back, readings without figures, readings carried over
from failed polls, gaps that empty the window, time going backwards, processes and probes
coming and going) and every recorded session in samples/sessions/, and must agree on every
field of every verdict (kind, cause, why, advice, confidence), with and without focus, and on
what `explain` and `window_ranks` give.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusat_tui.analysis.verdicts.job import JOB_KEY
from gpusat_tui.analysis.verdicts.tracker import VerdictTracker
from gpusat_tui.model import CardReading, Frame, HostSample, ProbeSample, ProcessSample
from gpusat_tui.sources.recording.reader import read_recording

SESSIONS = Path(__file__).resolve().parents[2] / "samples" / "sessions"

T0 = 1_767_225_600.0

figure = st.one_of(st.none(), st.sampled_from([0.0, 3.0, 50.0, 97.0, 100.0]),
                   st.integers(0, 100).map(float))


@st.composite
def card(draw: st.DrawFn, index: int) -> CardReading:
    extras: dict[str, object] = {}
    if draw(st.integers(0, 5)) == 0:
        extras["sm_active_pct"] = draw(st.floats(0.0, 100.0))
    if draw(st.integers(0, 5)) == 0:
        extras["throttle"] = draw(st.sampled_from(["power-cap", "thermal,sw-thermal", "idle"]))
    return CardReading(
        vendor="amd" if index == 3 else "nvidia",
        index=index,
        util_pct=draw(figure),
        mem_used_mib=draw(st.one_of(st.none(), st.sampled_from([0.0, 512.0, 70000.0, 80000.0]),
                                    st.floats(0.0, 81920.0))),
        mem_total_mib=draw(st.sampled_from([81920.0, 81920.0, None])),
        power_w=draw(st.one_of(st.none(), st.floats(40.0, 700.0))),
        power_cap_w=draw(st.sampled_from([700.0, 700.0, None])),
        stale_s=draw(st.sampled_from([None] * 6 + [2.0])),
        extras=extras,
    )


@st.composite
def processes(draw: st.DrawFn, cards: list[str]) -> list[ProcessSample]:
    out: list[ProcessSample] = []
    for rank in range(draw(st.integers(0, 2))):
        pid = 100 + 10 * rank
        tied = draw(st.lists(st.sampled_from(cards), max_size=2, unique=True)) if cards else []
        state = st.sampled_from([None, "running", "sleeping", "disk-sleep"])
        cpu = st.one_of(st.none(), st.sampled_from([0.0, 2.0, 99.0]), st.floats(0.0, 400.0))
        out.append(ProcessSample(pid=pid, role="trainer", name="python", cpu_pct=draw(cpu),
                                 state=draw(state), card_ids=tied,
                                 world_size=draw(st.sampled_from([None, 2])),
                                 rank=rank))
        for worker in range(draw(st.integers(0, 2))):
            out.append(ProcessSample(pid=pid + 1 + worker, role="dataloader_worker",
                                     name="pt_data_worker", cpu_pct=draw(cpu),
                                     state=draw(state), trainer_pid=pid))
    return out


@st.composite
def probes(draw: st.DrawFn, t: float) -> list[ProbeSample]:
    out = []
    for rank in range(draw(st.integers(0, 2))):
        out.append(ProbeSample(
            pid=100 + 10 * rank, rank=rank, world_size=2,
            card_id=draw(st.sampled_from([None, f"nvidia:{rank}"])),
            tie=draw(st.sampled_from(["device", "guess"])),
            data_wait_pct=draw(st.one_of(st.none(), st.floats(0.0, 100.0))),
            step_ms=draw(st.one_of(st.none(), st.floats(10.0, 500.0))),
            batches=int(t - T0) * 3, steps=int(t - T0) * 3,
            data_wait_s=draw(st.floats(0.0, 1.0)) * (t - T0), elapsed_s=t - T0,
        ))
    return out


@st.composite
def stream(draw: st.DrawFn) -> list[Frame]:
    """Polls mostly 1 s apart; some gaps that empty the 30 s window, some steps back."""
    indices = list(range(draw(st.integers(1, 4))))
    frames = []
    t = T0 + 100.0
    for seq in range(draw(st.integers(3, 45))):
        t += draw(st.sampled_from([1.0] * 12 + [0.5, 2.0, 12.0, 40.0, -5.0]))
        present = [i for i in indices if draw(st.integers(0, 9)) > 0]
        cards = [draw(card(i)) for i in present]
        frames.append(Frame(
            t=t, seq=seq, cards=cards,
            processes=draw(processes([c.id for c in cards])),
            host=draw(st.one_of(st.none(), st.builds(
                HostSample, cpu_pct=st.floats(0.0, 100.0), iowait_pct=st.floats(0.0, 60.0),
                cpu_count=st.just(8),
            ))),
            probes=draw(probes(t)) if draw(st.booleans()) else [],
        ))
    return frames


def assert_same(frames: list[Frame], focus_card: str | None) -> int:
    """Push ``frames`` through the plain and the reference tracker; every assessment, every
    `explain` and every `window_ranks` must match. Returns the verdicts compared."""
    compared = 0
    for focus in (None, {JOB_KEY, focus_card or "nvidia:0"}):
        fast = VerdictTracker(hold_cause=focus is not None)
        slow = VerdictTracker(hold_cause=focus is not None, reference=True)
        for n, frame in enumerate(frames):
            got = fast.push(frame, focus=focus)
            want = slow.push(frame, focus=focus)
            assert got == want, (n, focus)
            compared += len(want.cards) + 1
            for key in (JOB_KEY, *want.cards):
                assert fast.window_ranks(key) == slow.window_ranks(key), (n, key)
            if focus is not None and n % 3 == 2:
                # The dashboard's select: a key out of focus gets its evidence figures.
                for key in want.cards:
                    assert fast.explain(key) == slow.explain(key), (n, key)
                assert fast.assessment == slow.assessment
    return compared


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream())
def test_the_tracker_judges_as_from_scratch_on_random_streams(frames: list[Frame]) -> None:
    assert_same(frames, "nvidia:1")


@pytest.mark.parametrize("path", sorted(SESSIONS.glob("*.jsonl")), ids=lambda p: p.stem)
def test_the_tracker_judges_as_from_scratch_on_every_recorded_session(path: Path) -> None:
    _, reader = read_recording(path)
    with reader:
        frames = list(reader)
    assert frames
    focus = next((f.cards[1].id for f in frames if len(f.cards) > 1), None)
    assert assert_same(frames, focus) > len(frames)



def test_a_starving_cause_kept_with_its_evidence_is_the_one_found_anew() -> None:
    # The cards of a window that share one host evidence share its starving cause: whatever
    # order they ask in, each gets what a fresh evidence of the same figures gives.
    from dataclasses import replace

    from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
    from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS
    from gpusat_tui.analysis.verdicts.causes import starving_cause

    amd = DEFAULT_THRESHOLDS.for_vendor("amd")
    asks = [
        (th, light, label, busy, size)
        for th in (DEFAULT_THRESHOLDS, amd)
        for light in (False, True)
        for label in ("GPU-Util", "util")
        for busy in (False, True)
        for size in (None, 4)
    ]
    evidences = [
        HostEvidence(),
        HostEvidence(n_process_samples=3, trainer_cpu=99.0, n_workers=0, host_cpu=40.0,
                     cpu_count=8, iowait=1.0),
        HostEvidence(n_process_samples=9, trainer_cpu=20.0, n_workers=4, worker_cpu=97.0,
                     worker_sum=390.0, host_cpu=90.0, cpu_count=8, iowait=2.0),
        HostEvidence(n_process_samples=9, trainer_cpu=99.0, n_workers=2, worker_cpu=3.0,
                     worker_sum=6.0, host_cpu=30.0, cpu_count=8, world_size=4, rank=1),
    ]
    found = set()
    for ev in evidences:
        for order in (asks, asks[::-1]):
            shared = replace(ev)
            for th, light, label, busy, size in order:
                kept = starving_cause(shared, th, light=light, label=label, busy=busy,
                                      probe_world_size=size)
                anew = starving_cause(replace(ev), th, light=light, label=label, busy=busy,
                                      probe_world_size=size)
                assert kept == anew
                found.add(kept[0])
    assert len(found) >= 3  # the asks do reach different causes
