"""A stalled trainer with no probe, on hand-built windows: the place of its stack dump read from
outside (py-spy) named as a probe's would be, labelled as such; a dump that could not be taken
says why and what allows it."""

from __future__ import annotations

from gpusat_tui.analysis.outside_stacks.outside_stack import dump_place, unchanged
from gpusat_tui.analysis.verdicts.verdict import judge
from gpusat_tui.model import CardReading, CodeLine, Frame, ProcessSample, StackDump

#: 40 polls a second apart: the window is 39 s, past the stall time (20 s).
N = 40
T0 = 1000.0
SITE = "/venv/lib/python3.11/site-packages"


def card() -> CardReading:
    return CardReading(vendor="nvidia", index=0, util_pct=0.0, power_w=80.0,
                       power_cap_w=400.0, mem_used_mib=50000.0, mem_total_mib=80000.0)


def all_reduce_stack() -> tuple[CodeLine, ...]:
    """A rank waiting in all_reduce, outermost first (as py-spy's frames are kept)."""
    return (
        CodeLine(function="<module>", file="/home/u/train.py", line=120),
        CodeLine(function="main", file="/home/u/train.py", line=88),
        CodeLine(module="torch.distributed.c10d_logger", function="wrapper",
                 file=f"{SITE}/torch/distributed/c10d_logger.py", line=81),
        CodeLine(module="torch.distributed.distributed_c10d", function="all_reduce",
                 file=f"{SITE}/torch/distributed/distributed_c10d.py", line=2806),
    )


def window(dump: StackDump | None, *, rank: int | None = 0,
           syscalls_per_s: float = 0.0) -> list[Frame]:
    proc = ProcessSample(pid=100, role="trainer", name="python", cpu_pct=0.5, rank=rank,
                         world_size=2 if rank is not None else None,
                         syscalls_per_s=syscalls_per_s,
                         rchar_per_s=0.0, wchar_per_s=0.0, ctx_switches_per_s=0.0,
                         stack_dump=dump)
    return [Frame(t=T0 + i, seq=i, cards=[card()], processes=[proc]) for i in range(N)]


def test_the_place_of_a_dumped_stack() -> None:
    place = dump_place(all_reduce_stack())
    assert place is not None
    assert (place.phase, place.where, place.line) == (
        "collective", "torch.distributed.all_reduce", "train.py:88")
    assert dump_place(()) is None


def test_a_stall_names_where_the_unprobed_rank_waits_sampled_from_outside() -> None:
    dump = StackDump(t=T0 + 12.0, thread="MainThread", frames=all_reduce_stack())
    v = judge(window(dump)).cards["nvidia:0"]
    assert v.kind == "stalled", v
    line = next(w for w in v.why if w.startswith("rank 0 has waited"))
    assert line.startswith("rank 0 has waited 39 s in torch.distributed.all_reduce "
                           "(train.py:88) (sampled from outside by py-spy 27 s ago"), line
    assert not any("Install py-spy" in a for a in v.advice)


def test_a_dump_from_before_the_stall_is_not_where_it_stands() -> None:
    dump = StackDump(t=T0 - 30.0, thread="MainThread", frames=all_reduce_stack())
    v = judge(window(dump)).cards["nvidia:0"]
    assert v.kind == "stalled", v
    assert not any("has waited" in w for w in v.why), v.why


def test_without_py_spy_the_advice_names_the_extra() -> None:
    dump = StackDump(t=T0 + 12.0, error="missing", message="py-spy not found on PATH")
    v = judge(window(dump)).cards["nvidia:0"]
    assert v.kind == "stalled", v
    assert any("pip install 'gpusat-tui[pyspy]'" in a for a in v.advice), v.advice
    assert not any("has waited" in w for w in v.why)


def test_refused_ptrace_says_so_and_how_to_allow_it() -> None:
    dump = StackDump(t=T0 + 12.0, error="denied",
                     message="Permission Denied: \x1b[31mTry running again\x1b[0m")
    v = judge(window(dump, rank=None)).cards["nvidia:0"]
    assert v.kind == "stalled", v
    why = next(w for w in v.why if "could not read the stack of PID 100" in w)
    assert "refused ptrace" in why and "\x1b" not in why and "Try running again" in why
    advice = " ".join(v.advice)
    assert "sysctl kernel.yama.ptrace_scope=0" in advice and "--cap-add SYS_PTRACE" in advice


def test_a_dump_is_additive_to_the_recording_format() -> None:
    """Frames with a dump survive a JSON round trip; frames without one read as before."""
    dump = StackDump(t=T0, thread="MainThread", frames=all_reduce_stack())
    frame = window(dump)[0]
    again = Frame.model_validate_json(frame.model_dump_json())
    assert again.processes[0].stack_dump == dump
    old = frame.model_dump(mode="json")
    del old["processes"][0]["stack_dump"]
    assert Frame.model_validate(old).processes[0].stack_dump is None


def test_a_pegged_unprobed_trainer_says_where_it_stood_when_host_bound() -> None:
    """A card at 40 % beside a trainer pegged at 99 % with no workers: host-bound, and the
    dump read from outside says where the trainer stood."""
    stack = (
        CodeLine(function="<module>", file="/home/u/train.py", line=120),
        CodeLine(function="log_metrics", file="/home/u/train.py", line=40),
        CodeLine(module="json.encoder", function="JSONEncoder.encode",
                 file="/usr/lib/python3.11/json/encoder.py", line=200),
    )
    dump = StackDump(t=T0 + 30.0, thread="MainThread", frames=stack)

    def busy_window(with_dump: StackDump | None) -> list[Frame]:
        proc = ProcessSample(pid=100, role="trainer", name="python", cpu_pct=99.0,
                             card_ids=["nvidia:0"], stack_dump=with_dump)
        reading = card().model_copy(update={"util_pct": 40.0})
        return [Frame(t=T0 + i, seq=i, cards=[reading], processes=[proc]) for i in range(N)]

    v = judge(busy_window(dump)).cards["nvidia:0"]
    assert (v.kind, v.cause) == ("starving", "host-bound"), v
    assert ("the trainer (PID 100) was at train.py:40 when sampled from outside by py-spy "
            "9 s ago (one dump: where it stood then, not a share of its time)") in v.why, v.why
    plain = judge(busy_window(None)).cards["nvidia:0"]
    assert not any("sampled from outside" in w for w in plain.why)
    old = judge(busy_window(dump.model_copy(update={"t": T0 - 5.0}))).cards["nvidia:0"]
    assert not any("sampled from outside" in w for w in old.why)  # older than the window


def test_two_dumps_tell_a_main_thread_that_stood_still() -> None:
    first = StackDump(t=T0, thread="MainThread", frames=all_reduce_stack(), main_cpu_s=3.0)
    later = first.model_copy(update={"t": T0 + 20.0, "main_cpu_s": 3.02})  # 0.1 % of a core
    assert unchanged(first, later, cpu_pct=10.0)
    moved = (*all_reduce_stack()[:-1], all_reduce_stack()[-1].model_copy(update={"line": 2807}))
    assert not unchanged(first, later.model_copy(update={"frames": moved}), cpu_pct=10.0)
    # the main thread ran in between (a loop back on the same line at each dump)
    assert not unchanged(first, later.model_copy(update={"main_cpu_s": 13.0}), cpu_pct=10.0)
    assert not unchanged(first, later.model_copy(update={"main_cpu_s": None}), cpu_pct=10.0)
    assert not unchanged(later, first, cpu_pct=10.0)  # out of order
    assert not unchanged(first, StackDump(t=T0 + 20.0, error="denied"), cpu_pct=10.0)


def test_a_heartbeat_thread_writing_does_not_hide_a_still_main_thread() -> None:
    """12 read/write calls a second (a heartbeat appending to a log) are progress to the host
    counters; a dump that saw the main thread still since 29 s before the last poll outranks
    them."""
    first = StackDump(t=T0 + 10.0, thread="MainThread", frames=all_reduce_stack())
    assert judge(window(first, syscalls_per_s=12.0)).cards["nvidia:0"].kind != "stalled"
    # The second dump, read at 30 s, is on the polls from 31 s on.
    still = first.model_copy(update={"t": T0 + 30.0, "still_since": T0 + 10.0})
    frames = [f if f.t < T0 + 31.0 else g for f, g in zip(
        window(first, syscalls_per_s=12.0), window(still, syscalls_per_s=12.0), strict=True)]
    v = judge(frames).cards["nvidia:0"]
    assert v.kind == "stalled", v
    line = next(w for w in v.why if w.startswith("rank 0 has waited"))
    assert line.startswith("rank 0 has waited 29 s in torch.distributed.all_reduce "
                           "(train.py:88) (sampled from outside by py-spy"), line
    # a still dump read longer ago than the next one was due says nothing of now
    old = still.model_copy(update={"t": T0 - 30.0, "still_since": T0 - 50.0})
    assert judge(window(old, syscalls_per_s=12.0)).cards["nvidia:0"].kind != "stalled"
