"""The rules for one card: idle, fragmenting, saturated, stalled, starving (see `verdict` for the
order).

`judge_card` reads one card's fresh readings in a window into `CardFigures` (`card_figures`) and
`decide` applies the rules; the host evidence is asked for only when the card is starving, and
how long it has been stalled only when it holds memory with nothing running.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
from gpusat_tui.analysis.facts import CardFacts, FrameFacts
from gpusat_tui.analysis.outside_stacks.outside_words import busy_lines, outside_words, tied_dumps
from gpusat_tui.analysis.probe_reading.measured import RUN_ADVICE, Measured
from gpusat_tui.analysis.probe_reading.probe_words import frozen_lines
from gpusat_tui.analysis.thresholds import Thresholds
from gpusat_tui.analysis.verdicts.card_figures import (
    CardFigures,
    fresh_readings,
    make_verdict,
    unknown_verdict,
    window_figures,
)
from gpusat_tui.analysis.verdicts.causes import starving_cause
from gpusat_tui.analysis.verdicts.stall import Stall
from gpusat_tui.analysis.window import interval_s
from gpusat_tui.analysis.wording import (
    ALLOC_CONF_VARS,
    duration,
    gib,
    pct,
    plural,
    stall_span,
    stalled_advice,
    util_nature,
)
from gpusat_tui.model import UTIL_LABELS, Frame, Verdict

# `CardFigures`, `light_figures`, `make_verdict` and `unknown_verdict` live in `card_figures`;
# they are named here too, where they were imported from before.
__all__ = [
    "decide",
    "is_idle",
    "judge_card",
]


def is_idle(f: CardFigures, th: Thresholds) -> bool:
    """Whether `decide` says ``idle`` (its step 1, the same two tests)."""
    u = f.util
    held = f.held(th)
    pfrac = f.pfrac
    near_floor = pfrac is not None and pfrac < th.idle_power_frac
    if held is False and (u.median <= th.idle_util_pct or near_floor):
        return True
    return held is None and u.median <= th.idle_util_pct and (pfrac is None or near_floor)


def judge_card(
    frames: Sequence[Frame],
    facts: Sequence[FrameFacts],
    card_id: str,
    thresholds: Thresholds,
    evidence: Callable[[str], HostEvidence],
    stall: Callable[[str, Thresholds], Stall | None] | None = None,
    measured: Callable[[str], Measured | None] | None = None,
    fresh_maps: Sequence[dict[str, CardFacts]] | None = None,
    words: bool = True,
) -> tuple[Verdict, CardFigures | None]:
    """The card's verdict in the window, and its figures (None when it is unknown).
    ``stall(card_id, th)`` gives how long the card has been stalled, looking back beyond the
    window where the caller has the history (see `verdict.judge_prepared`); ``fresh_maps`` as
    for `card_figures.fresh_readings`; ``words=False``: a verdict without ``why`` (see
    `CardFigures.words`)."""
    fresh, vendor, th = fresh_readings(facts, card_id, thresholds, fresh_maps)
    label = UTIL_LABELS.get(vendor, "util")
    n = len(fresh)
    if n < th.min_samples:
        why = [f"{plural(n, 'fresh sample')} of {card_id}; need at least {th.min_samples}"]
        step = interval_s(frames)
        if step:
            why[0] += f" (about {th.min_samples * step:.0f} s at this poll interval)"
        stale = [
            c.stale_s for ff in facts
            if (c := ff.cards.get(card_id)) is not None and not c.fresh
        ]
        if stale:
            oldest = max((s for s in stale if s is not None), default=None)
            why.append(
                f"{plural(len(stale), 'reading')} carried over from failed polls"
                + (f" (up to {oldest:.0f} s old)" if oldest is not None else "")
                + " are not counted"
            )
        advice = [f"Wait for {plural(th.min_samples - n, 'more poll')}"]
        if stale:
            advice.append("The tool is failing: see the errors in the status line")
        return unknown_verdict(why, advice), None

    figs, with_util = window_figures(fresh, card_id, vendor, th, words)
    if figs is None:
        why = [
            f"{label} given in {with_util} of {n} fresh samples of {card_id}; "
            f"need at least {th.min_samples}"
        ]
        advice = ["Check the tool errors; another tool may report it (--tool)"]
        return unknown_verdict(why, advice), None
    stalled = (lambda: stall(card_id, th)) if stall is not None else None
    meas = measured(card_id) if measured is not None else None
    verdict = decide(figs, th, lambda: evidence(card_id), stalled, meas)
    if verdict.cause == "host-bound" and meas is None and words:
        # where the pegged trainer stood, read from outside (py-spy), where it was
        busy = busy_lines(tied_dumps(facts, card_id))
        if busy:
            verdict = verdict.model_copy(update={"why": [*verdict.why, *busy]})
    return verdict, figs


def decide(
    f: CardFigures,
    th: Thresholds,
    evidence: Callable[[], HostEvidence],
    stall: Callable[[], Stall | None] | None = None,
    measured: Measured | None = None,
) -> Verdict:
    """The card's verdict; ``evidence`` (the host figures) is only read for ``starving``, and
    ``stall`` only for a card holding memory with no utilisation.

    ``measured`` (the probe in the trainer that drives the card) goes first where it
    decides: a data wait at or above ``data_wait_starving_pct`` is starving whatever the
    utilisation says; allocator figures replace the fragmenting heuristic; a low data wait
    rules out an input-side cause. Without it the verdict is inferred from outside only and an
    unsure one says how to measure (`RUN_ADVICE`).
    """
    verdict = _decide(f, th, evidence, stall, measured)
    if measured is not None:
        from gpusat_tui.analysis.verdicts.probe_rules import with_measurement

        return with_measurement(verdict, f, th, evidence, measured)
    unsure = verdict.kind == "fragmenting" or (
        verdict.kind == "starving" and verdict.cause in ("unknown", "light-kernels")
    )
    if unsure and RUN_ADVICE not in verdict.advice:
        # Not reached from `_decide`'s own verdicts (each adds it as it builds one).
        return verdict.model_copy(update={"advice": [*verdict.advice, RUN_ADVICE]})
    return verdict


def _decide(
    f: CardFigures,
    th: Thresholds,
    evidence: Callable[[], HostEvidence],
    stall: Callable[[], Stall | None] | None,
    measured: Measured | None,
) -> Verdict:
    u = f.util
    held = f.held(th)
    pfrac = f.pfrac
    util_line = f.util_line(th)
    power_line = f.power_line()
    vram_line = f.vram_line(th)

    # 1. idle
    near_floor = pfrac is not None and pfrac < th.idle_power_frac
    if held is False and (u.median <= th.idle_util_pct or near_floor):
        why = [vram_line or "", util_line, power_line]
        conf = 0.9
        if u.median > th.idle_util_pct:
            why.append(
                f"{f.label} reads busy, but power is at the idle floor and no memory is "
                f"held: a utilisation reading that power does not back (a known quirk of "
                f"some tools), not work"
            )
            conf = 0.7
        return make_verdict("idle", None, why, ["Nothing runs on this card"], conf, f)
    if held is None and u.median <= th.idle_util_pct and (pfrac is None or near_floor):
        why = ["VRAM not reported", util_line, power_line]
        return make_verdict("idle", None, why, ["Nothing seems to run on this card"], 0.5, f)

    # 1b. a training thread that stopped (no batch, its sampled stack still) in a wait that
    # spins the card: stalled whatever the utilisation says
    if stall is not None and held and measured is not None and u.median > th.idle_util_pct:
        found = stall()
        if (found is not None and found.frozen and found.frozen_polls == found.polls
                and found.seconds >= th.stall_min_s):
            return _stalled(f, th, found, power_line)

    # 1c. what the probe measured, where it decides (data wait, allocator)
    if measured is not None:
        from gpusat_tui.analysis.verdicts.probe_rules import measured_verdict

        decided = measured_verdict(f, th, evidence, measured)
        if decided is not None:
            return decided

    # 2. fragmenting (heuristic; replaced by the allocator figures where a probe gives them)
    m = f.mem_pct
    if (
        (measured is None or not measured.has_alloc())
        and m is not None
        and m.max >= th.fragment_vram_pct
        and u.median <= th.fragment_util_pct
        and m.span >= th.fragment_swing_pct
    ):
        moved = ""
        if f.mem_total:
            moved = f", {gib(m.span * f.mem_total / 100)} back and forth"
        why = [
            f"heuristic: VRAM up to {pct(m.max)} full while {f.label} median is {pct(u.median)}",
            f"used memory moving {m.min:.0f}–{m.max:.0f} % "
            f"({plural(f.mem_reversals, 'change')} of direction{moved}): "
            "allocator churn (frees and re-allocations), not compute",
            power_line,
        ]
        var = ALLOC_CONF_VARS.get(f.vendor)
        alloc = (
            f"Set {var}=expandable_segments:True so freed blocks can be reused"
            if var
            else "Enable the vendor PyTorch build's expandable segments (its equivalent of "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)"
        )
        advice = [
            alloc,
            "Free and re-allocate less: pre-allocate buffers, keep tensor shapes static "
            "(pad or bucket variable lengths), no empty_cache() in the loop",
            "A smaller batch leaves the allocator headroom",
            "Confirm with torch.cuda.memory_stats(): a growing num_alloc_retries means the "
            "allocator keeps flushing its cache to find room",
        ]
        if measured is None:
            advice.append(RUN_ADVICE)  # what `decide` adds to an unsure verdict, added here once
        return make_verdict("fragmenting", None, why, advice, 0.5, f)

    # 3. saturated
    vram_note = vram_line
    busy = u.median >= th.busy_util_pct
    light = False
    saturated_advice = [
        "The card is the bottleneck: gains now come from the model side (AMP/bf16, "
        "torch.compile, fused optimizers, a larger batch if memory allows)"
    ]
    # NVIDIA GPM: the share of SMs busy decides where the card gives it (GPU-Util only says
    # a kernel was resident). Throttling is quoted whatever the verdict.
    sm = f.sm_active.median if f.sm_active is not None else None
    gpm_line = f.gpm_line()
    throttle_line = f.throttle_line(th) or ""
    if busy and sm is not None:
        if sm >= th.sm_active_busy_pct:
            why = [
                util_line,
                f"{gpm_line}: at or above the {pct(th.sm_active_busy_pct)} of SMs busy that "
                "saturation needs",
                power_line, vram_note or "", throttle_line,
            ]
            conf = 0.95 if pfrac is None or pfrac >= th.low_power_frac else 0.8
            return make_verdict("saturated", None, why, saturated_advice, conf, f)
        # Busy by the duty cycle, not by the SMs: starving (step 4), light kernels unless the
        # host evidence says otherwise.
        light = True
    elif busy:
        if pfrac is None:
            why = [
                util_line,
                f"{power_line}: judged on {f.label} alone, {util_nature(f.vendor)}, so this "
                "may overstate the work done",
                vram_note or "",
            ]
            why.append(throttle_line)
            return make_verdict("saturated", None, why, saturated_advice, 0.55, f)
        if pfrac >= th.saturated_power_frac:
            return make_verdict(
                "saturated", None, [util_line, power_line, vram_note or "", throttle_line],
                saturated_advice, 0.9, f,
            )
        if pfrac >= th.low_power_frac:
            why = [
                util_line,
                f"{power_line}: below the {pct(100 * th.saturated_power_frac)} full compute "
                "usually draws, so the kernels are light or memory-bound; counted as saturated "
                "with that caveat",
                vram_note or "",
            ]
            advice = [
                "Busy but not drawing full power: more work per kernel (larger batch, "
                "AMP/bf16, torch.compile, fused ops) can still speed it up"
            ]
            why.append(throttle_line)
            return make_verdict("saturated", None, why, advice, 0.5, f)
        light = u.span < th.swing_util_pct
    elif (
        pfrac is not None
        and pfrac >= th.saturated_power_frac
        and u.median >= th.busy_util_pct - th.swing_util_pct
        and (sm is None or sm >= th.sm_active_busy_pct)
    ):
        why = [
            util_line,
            f"{power_line}: {f.label} is under {pct(th.busy_util_pct)}, but the power draw says "
            "the card is working hard",
            vram_note or "",
        ]
        why.append(throttle_line)
        return make_verdict("saturated", None, why, saturated_advice, 0.6, f)

    # 4. stalled: memory held, nothing running on the card or on its host side, for long;
    # before that, paused (unknown): nothing runs, but not for long enough to call it
    short_stall: str | None = None
    if stall is not None and held and u.median <= th.idle_util_pct:
        found = stall()
        if found is not None and found.seconds >= th.stall_min_s:
            return _stalled(f, th, found, power_line)
        if found is not None and found.polls >= 2 and (found.polls >= f.n or found.after_blank):
            return paused_verdict(f, th, found, power_line)
        if found is not None and found.polls >= 2:
            short_stall = (
                f"nothing has run on the card or its processes for {duration(found.seconds)}: "
                f"not yet a stall (called after {duration(th.stall_min_s)}; a pause between "
                "epochs is shorter)"
            )

    # 5. starving
    why = [util_line]
    if busy and sm is not None:
        verdict_on_sm = (
            "likely ineffective use"
            if sm < th.sm_active_low_pct
            else f"below the {pct(th.sm_active_busy_pct)} saturation needs"
        )
        why.append(
            f"{f.label} reads {pct(u.median)} but {gpm_line}: {verdict_on_sm}. A kernel is "
            "resident most of the time while few SMs work: small kernels, or in a multi-card "
            "job a rank waiting in a collective (GPU-Util counts a spinning all-reduce)"
        )
        why.append(power_line)
    elif busy:
        why.append(
            f"{f.label} reads {pct(u.median)} while power is only {pct(100 * (pfrac or 0.0))} of "
            f"the {f.cap or 0:.0f} W cap: {f.label} is {util_nature(f.vendor)}, so this is "
            "not saturation"
        )
    else:
        far = pfrac is not None and pfrac < th.saturated_power_frac
        why.append(power_line + (", far below it" if far else ""))
    if held is False and f.mem_pct is not None:
        why.append(f"holds only {pct(f.mem_pct.median)} of its VRAM")
    elif vram_line:
        why.append(vram_line)
    if gpm_line and not busy:
        why.append(gpm_line)
    cause, cwhy, cadvice, conf = starving_cause(
        evidence(), th, light=light, label=f.label,
        busy=busy or (sm is not None and sm >= th.sm_active_busy_pct),
        probe_world_size=measured.world_size if measured is not None else None,
    )
    if short_stall:
        cwhy.append(short_stall)
    if measured is None and cause in ("unknown", "light-kernels") and RUN_ADVICE not in cadvice:
        cadvice.append(RUN_ADVICE)  # what `decide` adds to an unsure verdict, added here once
    return make_verdict("starving", cause, why + cwhy + [throttle_line], cadvice, conf, f)


def _stalled(f: CardFigures, th: Thresholds, found: Stall, power_line: str) -> Verdict:
    span = stall_span(found.seconds, found.open_start)
    mem = f" ({pct(found.mem_pct)} used)" if found.mem_pct is not None else ""
    if found.frozen and found.frozen_polls == found.polls:
        first = (f"stalled for {span}: no batch, and the training thread's stack has not "
                 f"changed (sampled by the probe); the card holds its VRAM{mem}")
        if f.util.median > th.idle_util_pct:
            first += (f" while {f.label} reads {pct(f.util.median)}: a wait that spins, "
                      "not work")
    else:
        first = (f"stalled for {span}: {f.label} at or below {pct(th.idle_util_pct)} in every "
                 f"poll while the card holds its VRAM{mem}")
    out_why, out_advice = outside_words(found.outside) if not found.frozen else ([], [])
    why = [
        first,
        *frozen_lines(found.frozen),
        *out_why,
        *_nothing_moves(found),
        power_line,
        f"a stall is called after {duration(th.stall_min_s)} of this: a pause between epochs "
        "or for an evaluation is shorter, and an evaluation counts batches",
    ]
    if found.trainer_states and set(found.trainer_states) & {"stopped", "tracing-stop"}:
        why.insert(1, "the trainer is stopped (state T)")
    advice = stalled_advice(f.vendor, found.trainer_pids, found.trainer_states)
    advice[1:1] = out_advice
    if found.stuck_io:
        advice.insert(0, "A process waits on storage and writes nothing: a checkpoint or log "
                         "write stuck on storage (a hung network file system, a full disk). "
                         "Check the mount (df, dmesg) and where it writes")
    conf = 0.85 if found.counter_polls or found.probe_polls else 0.75
    return make_verdict("stalled", None, why, advice, conf, f)


def _nothing_moves(found: Stall) -> list[str]:
    """What shows that nothing runs on the host side, and which evidence that was."""
    who = plural(len(found.trainer_pids) or 1, "trainer")
    if found.n_workers:
        who += f" and {plural(found.n_workers, 'DataLoader worker')}"
    lines = [f"the {who} at most {pct(found.max_cpu)} CPU all that time"]
    if found.busy_threads:
        lines.append("other threads of the trainer read and write (a heartbeat, a logger, a "
                     "watchdog), but its training thread has not moved: that is no progress")
    if found.probe_polls:
        lines.append("the probe in the trainer counted no batch: the loop makes no progress")
    if found.counter_polls:
        lines.append(
            "their progress counters are flat (no reads, writes or wake-ups: /proc/<pid>/io "
            "and schedstat)"
            + (", one of them waiting on storage (D state) without writing a byte: stuck, "
               "not saving" if found.stuck_io else "")
            + ": nothing runs on the host side either, so this is not waiting for input"
        )
    else:
        host = "no process in disk wait"
        if found.iowait is not None:
            host += f", host iowait {pct(found.iowait)}"
        lines[0] += (f", {host}: nothing runs on the host side either, so this is not "
                     "waiting for input")
    return lines


def paused_verdict(f: CardFigures, th: Thresholds, found: Stall, power_line: str) -> Verdict:
    """``unknown`` (``paused``): nothing has run for less than the stall time. Not starving:
    nothing waits on an input pipeline; not yet stalled: a pause between epochs or before an
    evaluation looks the same for a while."""
    left = max(0.0, th.stall_min_s - found.seconds)
    why = [
        f"nothing has run for {duration(found.seconds)}; a stall is called at "
        f"{duration(th.stall_min_s)} (in {duration(left)} if nothing moves)",
        f.util_line(th),
        *_nothing_moves(found),
        power_line,
    ]
    if not (found.counter_polls or found.probe_polls):
        why.append("no progress counters or probe here: a slow input that uses no CPU looks "
                   "the same until then")
    vram = f.vram_line(th)
    if vram:
        why.insert(2, vram)
    advice = [
        "A pause between epochs, before an evaluation or while a checkpoint starts is this "
        "short; if it lasts, it is a stall",
        stalled_advice(f.vendor, found.trainer_pids, found.trainer_states)[0],
    ]
    return make_verdict("unknown", "paused", why, advice, 0.5, f)
