"""LiveSource against fake executables of a toy tool (vendor formats are tested in test_check).

The toy tool prints one line per card, ``index util used total power cap temp``, so that these
tests exercise process handling (timeouts, kills, fallbacks, groups, staleness) and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from gpusat_tui.collectors.base import Query, ToolReading, ToolSpec
from gpusat_tui.errors import ParseError, ToolMissing
from gpusat_tui.model import CardProcess, CardReading, HostSample, ProcessSample, ToolError
from gpusat_tui.sources import FrameSource
from gpusat_tui.sources.options import DEFAULT_ENRICH_EVERY
from gpusat_tui.sources.polling import live, procs, tool_queries
from gpusat_tui.sources.polling.live import LiveSource
from tests.conftest import leftover_processes, zombie_children
from tests.fakes import FakeCard, FakeProcess
from tests.fakes.tool import FakeBin, Step

# --- the toy tool ----------------------------------------------------------------------------


def toy_render(
    args: Sequence[str], cards: Sequence[FakeCard], procs: Sequence[FakeProcess]
) -> str:
    if tuple(args) == ("--pids",):
        return "".join(f"PID {p.pid} {p.card_index} {p.name}\n" for p in procs)
    if tuple(args) == ("--legacy",):
        return "".join(f"legacy {c.index} {c.util_pct:g}\n" for c in cards)
    if args and args[0] == "--extra":
        card = next(c for c in cards if c.index == int(args[1]))
        return f"EXTRA {card.extras.get('aiv', 0):g}\n"
    lines = ["TOY-SMI v1.2"]
    for c in cards:
        lines.append(
            f"{c.index} {c.util_pct:g} {c.mem_used_mib:g} {c.mem_total_mib:g} {c.power_w:g}"
            f" {c.power_cap_w:g} {c.temp_c:g}"
        )
    return "\n".join(lines) + "\n"


def toy_parse(text: str, vendor: str = "hygon", tool: str = "toy-smi") -> ToolReading:
    lines = text.splitlines()
    if not lines or not lines[0].startswith("TOY-SMI"):
        raise ParseError(f"no TOY-SMI header: {lines[0][:40] if lines else '(empty)'!r}")
    cards = []
    for line in lines[1:]:
        i, util, used, total, power, cap, temp = line.split()
        cards.append(
            CardReading(
                vendor=vendor, index=int(i), util_pct=float(util), mem_used_mib=float(used),
                mem_total_mib=float(total), power_w=float(power), power_cap_w=float(cap),
                temp_c=float(temp), tool=tool,
            )
        )
    return ToolReading(cards=cards, version=lines[0].split()[1])


def toy_parse_legacy(text: str) -> ToolReading:
    cards = []
    for line in text.splitlines():
        _, i, util = line.split()
        cards.append(CardReading(vendor="hygon", index=int(i), util_pct=float(util)))
    if not cards:
        raise ParseError("no legacy lines")
    return ToolReading(cards=cards)


def toy_parse_pids(text: str) -> ToolReading:
    procs = []
    for line in text.splitlines():
        if not line.startswith("PID "):
            raise ParseError(f"not a PID line: {line[:40]!r}")
        _, pid, idx, name = line.split()
        procs.append(CardProcess(pid=int(pid), card_id=f"hygon:{idx}", name=name))
    return ToolReading(processes=procs)


def toy_parse_extra(text: str) -> ToolReading:
    if not text.startswith("EXTRA "):
        raise ParseError("no EXTRA line")
    return ToolReading(
        cards=[CardReading(vendor="hygon", index=-1, extras={"aiv": float(text.split()[1])})]
    )


MAIN = Query("main", (), toy_parse)


def toy_spec(
    tool: str = "toy-smi",
    queries: tuple[Query, ...] = (MAIN,),
    group: str = "",
    priority: int = 0,
    search_dirs: tuple[str, ...] = (),
    identify: object = None,
    vendor: str = "hygon",
) -> ToolSpec:
    return ToolSpec(
        tool=tool, vendor=vendor, names=(tool,), queries=queries, group=group,  # type: ignore[arg-type]
        priority=priority, search_dirs=search_dirs, identify=identify,  # type: ignore[arg-type]
    )


def card(index: int, util: float = 50.0, **kw: float) -> FakeCard:
    return FakeCard(index=index, util_pct=util, mem_used_mib=kw.get("used", 1024.0),
                    mem_total_mib=4096.0, power_w=kw.get("power", 100.0), power_cap_w=300.0,
                    temp_c=kw.get("temp", 50.0), extras={"aiv": kw.get("aiv", 0.0)})


@dataclass
class FakeReport:
    processes: list[ProcessSample] = field(default_factory=list)
    host: HostSample = field(default_factory=lambda: HostSample(cpu_pct=12.0))
    notes: list[str] = field(default_factory=list)
    errors: list[ToolError] = field(default_factory=list)


class FakeMonitor:
    """Stands in for processes.ProcessMonitor: records what the source passes it."""

    def __init__(self) -> None:
        self.calls: list[list[CardProcess]] = []

    def sample(self, card_processes: Sequence[CardProcess] = ()) -> FakeReport:
        self.calls.append(list(card_processes))
        return FakeReport(
            processes=[ProcessSample(pid=p.pid, role="trainer", name=p.name or "?", cpu_pct=99.0,
                                     card_ids=[p.card_id]) for p in card_processes],
            notes=["monitor note"],
        )


def source(fake_bin: FakeBin, *specs: ToolSpec, **kw: object) -> LiveSource:
    kw.setdefault("process_monitor", FakeMonitor())
    kw.setdefault("interval", 0.25)
    kw.setdefault("timeout", 1.0)
    return LiveSource(specs=list(specs), path=fake_bin.path, **kw)  # type: ignore[arg-type]


async def poll_n(src: LiveSource, n: int) -> list:
    return [await src.poll_once() for _ in range(n)]


# --- figures, processes, versions ------------------------------------------------------------


async def test_poll_reads_every_card_and_runs_the_process_monitor(fake_bin: FakeBin) -> None:
    pids = Query("pids", ("--pids",), toy_parse_pids, optional=True)
    spec = toy_spec(queries=(MAIN, pids))
    fake_bin.add("toy-smi", toy_render, [
        Step(cards=(card(0, 10, power=111), card(1, 90, temp=71)),
             processes=(FakeProcess(4242, "python", 1),)),
    ], arg_lists=[(), ("--pids",)])
    monitor = FakeMonitor()
    src = source(fake_bin, spec, process_monitor=monitor)
    assert src.discover() == {"toy-smi": str(fake_bin.dir / "toy-smi")}
    frame = await src.poll_once()
    assert [(c.id, c.util_pct, c.power_w, c.temp_c, c.mem_pct, c.tool, c.stale_s)
            for c in frame.cards] == [
        ("hygon:0", 10.0, 111.0, 50.0, 25.0, "toy-smi", None),
        ("hygon:1", 90.0, 100.0, 71.0, 25.0, "toy-smi", None),
    ]
    assert frame.card_processes == [CardProcess(pid=4242, card_id="hygon:1", name="python")]
    assert monitor.calls == [[CardProcess(pid=4242, card_id="hygon:1", name="python")]]
    assert [(p.pid, p.cpu_pct, p.card_ids) for p in frame.processes] == [
        (4242, 99.0, ["hygon:1"])
    ]
    assert frame.host == HostSample(cpu_pct=12.0)
    assert frame.notes == ["monitor note"]
    assert frame.errors == [] and frame.raw == {}
    assert src.versions == {"toy-smi": "v1.2"}
    assert isinstance(src, FrameSource)


async def test_monitor_cpu_is_measured_from_the_second_poll(fake_bin: FakeBin) -> None:
    fake_bin.add("toy-smi", toy_render, [[card(0)]])
    src = source(fake_bin, toy_spec())
    first = await src.poll_once()
    t0 = time.monotonic()
    burn_until = time.process_time() + 0.2
    while time.process_time() < burn_until:  # 0.2 s of our own CPU
        pass
    second = await src.poll_once()
    wall = time.monotonic() - t0
    assert first.monitor_cpu_pct is None
    # At least the 0.2 s burned here counts (the machine may be loaded: relative to wall time).
    assert second.monitor_cpu_pct is not None
    assert 100.0 * 0.19 / wall <= second.monitor_cpu_pct <= 200.0
    assert (first.seq, second.seq) == (0, 1)


# --- failures: timeout, exit, garbage, lost card ---------------------------------------------


async def test_hanging_tool_is_killed_and_its_cards_go_stale(fake_bin: FakeBin) -> None:
    fake_bin.add("toy-smi", toy_render, [[card(0, 40)], Step(mode="hang"), [card(0, 60)]])
    src = source(fake_bin, toy_spec(), timeout=0.5)
    t0 = time.monotonic()
    good, hung = await poll_n(src, 2)
    hang_s = time.monotonic() - t0
    assert good.errors == []
    assert hung.errors == [
        ToolError(tool="toy-smi", message="toy-smi did not answer within 0.5 s; killed",
                  kind="timeout")
    ]
    assert [(c.id, c.util_pct) for c in hung.cards] == [("hygon:0", 40.0)]
    assert hung.cards[0].stale_s is not None and 0.4 <= hung.cards[0].stale_s < 3.0
    assert hang_s < 3.0
    assert leftover_processes(fake_bin.dir, grace=1.0) == [] and zombie_children() == []
    recovered = await src.poll_once()
    assert [(c.util_pct, c.stale_s) for c in recovered.cards] == [(60.0, None)]


async def test_non_zero_exit_is_an_error_with_stderr(fake_bin: FakeBin) -> None:
    fake_bin.add("toy-smi", toy_render, [
        [card(0, 40)], Step(mode="fail", exit_code=7, stderr="HCU init failed"),
    ])
    _, failed = await poll_n(source(fake_bin, toy_spec()), 2)
    assert failed.errors == [
        ToolError(tool="toy-smi", message="toy-smi exited with status 7: HCU init failed",
                  kind="exit")
    ]
    assert [(c.util_pct, c.stale_s is not None) for c in failed.cards] == [(40.0, True)]
    assert "HCU init failed" in failed.raw["toy-smi"]


async def test_garbage_is_a_parse_error_and_raw_output_is_kept(fake_bin: FakeBin) -> None:
    fake_bin.add("toy-smi", toy_render, [[card(0, 40)], Step(mode="garbage")])
    good, bad = await poll_n(source(fake_bin, toy_spec()), 2)
    assert good.raw == {}
    assert len(bad.errors) == 1 and bad.errors[0].kind == "parse"
    assert bad.errors[0].message.startswith("toy-smi: no TOY-SMI header")
    assert 0 < len(bad.raw["toy-smi"]) <= tool_queries.RAW_KEEP_CHARS
    assert [(c.util_pct, c.stale_s is not None) for c in bad.cards] == [(40.0, True)]


async def test_crashing_tool_is_an_error_naming_the_signal(fake_bin: FakeBin) -> None:
    fake_bin.add("toy-smi", toy_render, [[card(0, 40)], Step(mode="crash")])
    _, crashed = await poll_n(source(fake_bin, toy_spec()), 2)
    assert [(e.kind, e.message) for e in crashed.errors] == [
        ("exit", "toy-smi was killed by signal 11")
    ]
    assert [(c.util_pct, c.stale_s is not None) for c in crashed.cards] == [(40.0, True)]


async def test_vanished_tool_is_an_error_and_its_cards_go_stale(fake_bin: FakeBin) -> None:
    tool = fake_bin.add("toy-smi", toy_render, [[card(0, 40)]])
    src = source(fake_bin, toy_spec())
    await src.poll_once()
    tool.path.unlink()  # uninstalled under our feet (driver upgrade)
    gone = await src.poll_once()
    assert [(e.kind, e.message) for e in gone.errors] == [
        ("missing", f"cannot run {tool.path}: No such file or directory")
    ]
    assert [(c.util_pct, c.stale_s is not None) for c in gone.cards] == [(40.0, True)]


async def test_a_card_missing_from_a_good_answer_is_reported_then_dropped(
    fake_bin: FakeBin,
) -> None:
    fake_bin.add("toy-smi", toy_render, [[card(0), card(1), card(3)], [card(0), card(1)]])
    first, second, third = await poll_n(source(fake_bin, toy_spec()), 3)
    assert [c.id for c in first.cards] == ["hygon:0", "hygon:1", "hygon:3"]
    assert [c.id for c in second.cards] == ["hygon:0", "hygon:1"]
    assert "card hygon:3 no longer listed by toy-smi" in second.notes
    assert not any("no longer" in n for n in third.notes)


async def test_output_flood_is_killed(fake_bin: FakeBin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool_queries, "MAX_OUTPUT_BYTES", 1000)
    fake_bin.add("toy-smi", toy_render, [[card(i) for i in range(100)]])
    frame = await source(fake_bin, toy_spec()).poll_once()
    assert frame.cards == []
    assert [(e.kind, e.message) for e in frame.errors] == [
        ("parse", "toy-smi printed more than 1000 bytes; killed")
    ]
    assert leftover_processes(fake_bin.dir, grace=1.0) == [] and zombie_children() == []


@pytest.mark.parametrize("cap", [1000, 100_000, 3_000_000])
async def test_run_tool_caps_output_and_returns_promptly(cap: int) -> None:
    # Past 128 KiB unread, asyncio pauses the pipe: reaping must still finish (no hang).
    t0 = time.monotonic()
    with pytest.raises(procs.OutputTooLarge):
        await procs.run_tool(["/bin/sh", "-c", "yes garbage"], timeout=5.0, cap=cap)
    assert time.monotonic() - t0 < 3.0


async def test_run_tool_timeout_after_a_big_output_returns_promptly() -> None:
    t0 = time.monotonic()
    with pytest.raises(procs.CallTimedOut):
        await procs.run_tool(
            ["/bin/sh", "-c", "head -c 500000 /dev/zero; sleep 30"], timeout=0.3, cap=1 << 20
        )
    assert time.monotonic() - t0 < 2.0


# --- optional queries, fallbacks, per-card ---------------------------------------------------


async def test_refused_optional_flag_is_dropped_once_and_no_card_is_lost(
    fake_bin: FakeBin,
) -> None:
    pids = Query("pids", ("--pids",), toy_parse_pids, optional=True)
    tool = fake_bin.add("toy-smi", toy_render, [[card(0), card(1)]],
                        arg_lists=[(), ("--pids",)], refuse=[("--pids",)])
    frames = await poll_n(source(fake_bin, toy_spec(queries=(MAIN, pids))), 3)
    assert [[c.id for c in f.cards] for f in frames] == [["hygon:0", "hygon:1"]] * 3
    assert all(f.errors == [] for f in frames)
    assert frames[0].notes[0].startswith("toy-smi refused pids (toy-smi --pids exited with")
    assert not any("refused" in n for f in frames[1:] for n in f.notes)
    assert tool.calls(("--pids",)) == 1
    assert tool.calls(()) == 3


async def test_refused_required_query_switches_to_its_fallback_for_the_session(
    fake_bin: FakeBin,
) -> None:
    legacy = Query("legacy", ("--legacy",), toy_parse_legacy)
    modern = Query("modern", ("--modern",), toy_parse, fallback=legacy)
    tool = fake_bin.add("toy-smi", toy_render, [[card(0, 33)]],
                        arg_lists=[("--modern",), ("--legacy",)], refuse=[("--modern",)])
    frames = await poll_n(source(fake_bin, toy_spec(queries=(modern,))), 3)
    assert [[(c.id, c.util_pct) for c in f.cards] for f in frames] == [[("hygon:0", 33.0)]] * 3
    assert any(n.startswith("toy-smi refused modern") for n in frames[0].notes)
    assert tool.calls(("--modern",)) == 1 and tool.calls(("--legacy",)) == 3


async def test_per_card_query_is_merged_by_the_index_it_was_asked_for(
    fake_bin: FakeBin,
) -> None:
    extra = Query("extra", ("--extra", "{index}"), toy_parse_extra, optional=True,
                  per_card=True)
    fake_bin.add("toy-smi", toy_render, [[card(0, aiv=7), card(2, aiv=9)]],
                 arg_lists=[(), ("--extra", "0"), ("--extra", "2")])
    frame = await source(fake_bin, toy_spec(queries=(MAIN, extra))).poll_once()
    assert [(c.index, c.extras) for c in frame.cards] == [(0, {"aiv": 7.0}), (2, {"aiv": 9.0})]



async def test_per_card_queries_run_every_nth_poll_and_their_figures_are_carried(
    fake_bin: FakeBin,
) -> None:
    extra = Query("extra", ("--extra", "{index}"), toy_parse_extra, optional=True,
                  per_card=True)
    # Step n: util n on both cards, AIVector 10n on card 0 and 10n + 1 on card 2.
    steps = [[card(0, n, aiv=10 * n), card(2, n, aiv=10 * n + 1)] for n in range(1, 8)]
    tool = fake_bin.add("toy-smi", toy_render, steps,
                        arg_lists=[(), ("--extra", "0"), ("--extra", "2")])
    src = source(fake_bin, toy_spec(queries=(MAIN, extra)), enrich_every=3)
    frames = await poll_n(src, 7)
    # The required view is fresh on every poll; the enrichment ran on polls 0, 3 and 6 (its
    # own steps 1, 2, 3) and its figures were merged again, not stale, in between.
    assert [[(c.index, c.util_pct, c.extras, c.stale_s) for c in f.cards] for f in frames] == [
        [(0, float(n), {"aiv": a}, None), (2, float(n), {"aiv": a + 1}, None)]
        for n, a in [(1, 10.0), (2, 10.0), (3, 10.0), (4, 20.0), (5, 20.0), (6, 20.0),
                     (7, 30.0)]
    ]
    assert tool.calls(()) == 7
    assert tool.calls(("--extra", "0")) == 3 and tool.calls(("--extra", "2")) == 3


async def test_process_list_queries_run_every_nth_poll_and_their_list_stands_in(
    fake_bin: FakeBin,
) -> None:
    pids = Query("pids", ("--pids",), toy_parse_pids, optional=True, process_list=True)
    # Step n: util n; the process on card 0 is pid 100 + n.
    steps = [Step(cards=(card(0, n), card(1, n)), processes=(FakeProcess(100 + n, "python", 0),))
             for n in range(1, 8)]
    tool = fake_bin.add("toy-smi", toy_render, steps, arg_lists=[(), ("--pids",)])
    frames = await poll_n(source(fake_bin, toy_spec(queries=(MAIN, pids)), enrich_every=3), 7)
    # The figures are fresh on every poll; the list was read on polls 0, 3 and 6 (the tool's
    # own steps 1, 2, 3) and the last one read stood in between.
    assert [f.cards[0].util_pct for f in frames] == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert [[p.pid for p in f.card_processes] for f in frames] == [
        [101], [101], [101], [102], [102], [102], [103]
    ]
    assert all(f.errors == [] for f in frames)
    assert tool.calls(()) == 7 and tool.calls(("--pids",)) == 3


async def test_a_failed_process_list_is_not_carried_over(fake_bin: FakeBin) -> None:
    pids = Query("pids", ("--pids",), toy_parse_pids, optional=True, process_list=True)
    steps = [Step(cards=(card(0, 1),), processes=(FakeProcess(101, "python", 0),)),
             Step(cards=(card(0, 2),), mode="fail", only_args="--pids")]
    fake_bin.add("toy-smi", toy_render, steps, arg_lists=[(), ("--pids",)])
    src = source(fake_bin, toy_spec(queries=(MAIN, pids)), enrich_every=1)
    frames = await poll_n(src, 2)
    assert [p.pid for p in frames[0].card_processes] == [101]
    assert frames[1].card_processes == []


async def test_enrich_every_one_runs_per_card_queries_on_every_poll(fake_bin: FakeBin) -> None:
    extra = Query("extra", ("--extra", "{index}"), toy_parse_extra, optional=True,
                  per_card=True)
    tool = fake_bin.add("toy-smi", toy_render, [[card(0, aiv=n)] for n in range(1, 4)],
                        arg_lists=[(), ("--extra", "0")])
    frames = await poll_n(source(fake_bin, toy_spec(queries=(MAIN, extra)), enrich_every=1), 3)
    assert [f.cards[0].extras for f in frames] == [{"aiv": 1.0}, {"aiv": 2.0}, {"aiv": 3.0}]
    assert tool.calls(("--extra", "0")) == 3


def test_enrich_every_defaults_to_five_and_must_be_positive() -> None:
    assert DEFAULT_ENRICH_EVERY == 5
    assert LiveSource(specs=[]).enrich_every == 5
    with pytest.raises(ValueError, match="enrich_every must be at least 1"):
        LiveSource(specs=[], enrich_every=0)


# --- groups, identity, in-process readers ----------------------------------------------------


async def test_group_uses_only_the_first_tool_that_answers(fake_bin: FakeBin) -> None:
    first = toy_spec("toy-a", group="fam", priority=0)
    second = toy_spec("toy-b", group="fam", priority=1)
    a = fake_bin.add("toy-a", toy_render, [[card(0, 11), card(1, 12)]])
    b = fake_bin.add("toy-b", toy_render, [[card(0, 99), card(1, 99)]])
    frames = await poll_n(source(fake_bin, second, first), 2)
    assert [[(c.id, c.util_pct) for c in f.cards] for f in frames] == [
        [("hygon:0", 11.0), ("hygon:1", 12.0)]
    ] * 2
    assert a.calls() == 2 and b.calls() == 0


async def test_group_falls_through_a_tool_that_refuses_on_the_first_poll(
    fake_bin: FakeBin,
) -> None:
    first = toy_spec("toy-a", group="fam", priority=0)
    second = toy_spec("toy-b", group="fam", priority=1)
    a = fake_bin.add("toy-a", toy_render, [Step(mode="garbage")])
    b = fake_bin.add("toy-b", toy_render, [[card(0, 44)]])
    src = source(fake_bin, first, second)
    frames = await poll_n(src, 3)
    assert [[(c.id, c.util_pct) for c in f.cards] for f in frames] == [[("hygon:0", 44.0)]] * 3
    assert frames[0].errors == []
    assert any(n.startswith("toy-a not used (toy-a: no TOY-SMI header") and
               n.endswith("trying toy-b") for n in frames[0].notes)
    assert a.calls() == 1 and b.calls() == 3
    assert src.tools == {"toy-b": str(fake_bin.dir / "toy-b")}


async def test_a_tool_that_keeps_hanging_is_asked_less_and_less_often(
    fake_bin: FakeBin,
) -> None:
    tool = fake_bin.add("toy-smi", toy_render, [[card(0, 40)], Step(mode="hang")])
    src = source(fake_bin, toy_spec(), timeout=0.2)
    frames = await poll_n(src, 9)
    # Poll 0 answers; 1 and 2 hang (called); 3-4 are skipped; 5 hangs; 6-8 are skipped (of 4).
    assert tool.calls() == 4
    hung = ToolError(tool="toy-smi", message="toy-smi did not answer within 0.2 s; killed",
                     kind="timeout")
    assert frames[0].errors == [] and all(f.errors == [hung] for f in frames[1:])
    # The last good figures are carried, stale, on every poll, called or not.
    assert all([(c.util_pct, c.stale_s is not None) for c in f.cards] == [(40.0, True)]
               for f in frames[1:])
    notes = [n for f in frames for n in f.notes if "hung" in n]
    assert notes == ["toy-smi hung 2 times in a row: asking it again after 2 polls",
                     "toy-smi hung 3 times in a row: asking it again after 4 polls"]
    assert leftover_processes(fake_bin.dir, grace=1.0) == [] and zombie_children() == []


async def test_backing_off_stops_growing_at_16_polls_and_stops_saying_so(
    fake_bin: FakeBin,
) -> None:
    tool = fake_bin.add("toy-smi", toy_render, [[card(0, 40)], Step(mode="hang")])
    frames = await poll_n(source(fake_bin, toy_spec(), timeout=0.2), 40)
    # Called on polls 0 (answers), 1, 2, 5, 10, 19 and 36: waits of 2, 4, 8, 16, 16.
    assert tool.calls() == 7
    notes = [n for f in frames for n in f.notes if "hung" in n]
    assert [n.split(": ")[1] for n in notes] == [
        "asking it again after 2 polls", "asking it again after 4 polls",
        "asking it again after 8 polls", "asking it again after 16 polls",
    ]
    assert all(len(f.errors) == 1 for f in frames[1:])


async def test_a_backed_off_tool_that_answers_again_is_asked_every_poll(
    fake_bin: FakeBin,
) -> None:
    steps = [[card(0, 40)], Step(mode="hang"), Step(mode="hang"),
             *([[card(0, 70)]] * 4)]
    tool = fake_bin.add("toy-smi", toy_render, steps)
    # 1 s: a fake tool's answer took over 0.2 s once on a loaded machine, a third "hang".
    src = source(fake_bin, toy_spec(), timeout=1.0)
    frames = await poll_n(src, 7)
    # Calls on polls 0, 1, 2 (hung twice: skip 2), then 5 answers and 6 is asked at once.
    assert tool.calls() == 5
    assert [(f.cards[0].util_pct, f.cards[0].stale_s is None) for f in frames[5:]] == [
        (70.0, True), (70.0, True)
    ]
    assert frames[5].errors == [] and frames[6].errors == []


async def test_group_falls_through_a_tool_that_hangs_on_the_first_poll(
    fake_bin: FakeBin,
) -> None:
    first = toy_spec("toy-a", group="fam", priority=0)
    second = toy_spec("toy-b", group="fam", priority=1)
    fake_bin.add("toy-a", toy_render, [Step(mode="hang")])
    fake_bin.add("toy-b", toy_render, [[card(0, 44)]])
    frame = await source(fake_bin, first, second, timeout=0.3).poll_once()
    assert [(c.id, c.util_pct) for c in frame.cards] == [("hygon:0", 44.0)]
    assert frame.errors == []
    assert "toy-a not used (toy-a did not answer within 0.3 s; killed); trying toy-b" in frame.notes
    assert leftover_processes(fake_bin.dir, grace=1.0) == []


async def test_last_tool_of_a_group_is_kept_and_its_errors_reported(fake_bin: FakeBin) -> None:
    fake_bin.add("toy-smi", toy_render, [Step(mode="fail"), [card(0, 5)]])
    first, second = await poll_n(source(fake_bin, toy_spec()), 2)
    assert first.cards == [] and [e.kind for e in first.errors] == ["exit"]
    assert [(c.id, c.util_pct) for c in second.cards] == [("hygon:0", 5.0)]


async def test_another_vendors_tool_of_the_same_name_is_ignored_with_one_note(
    fake_bin: FakeBin,
) -> None:
    def identify(text: str) -> bool:
        return "Intel" not in text

    def parse(text: str) -> ToolReading:
        if "Intel" in text:
            raise ParseError("this is Intel's xpu-smi (XPU Manager), not Kunlunxin's")
        return toy_parse(text, "kunlunxin", "xpu-smi")

    spec = toy_spec("xpu-smi", queries=(Query("main", (), parse),), identify=identify,
                    vendor="kunlunxin")

    def intel(args: Sequence[str], cards: Sequence[FakeCard], procs: object) -> str:
        return "Intel(R) XPU Management Interface -- v1.2\nUsage: xpu-smi [Options]\n"

    tool = fake_bin.add("xpu-smi", intel, [[card(0)]])
    frames = await poll_n(source(fake_bin, spec), 3)
    assert all(f.cards == [] and f.errors == [] for f in frames)
    assert [n for n in frames[0].notes if "xpu-smi" in n] == [
        f"{fake_bin.dir / 'xpu-smi'} is not kunlunxin's xpu-smi: this is Intel's xpu-smi"
        " (XPU Manager), not Kunlunxin's; ignored"
    ]
    assert not any("xpu-smi" in n for f in frames[1:] for n in f.notes)
    assert tool.calls() == 1


async def test_in_process_reader_missing_library_falls_back_to_the_next_tool(
    fake_bin: FakeBin,
) -> None:
    def no_lib() -> ToolReading:
        raise ToolMissing("NVML library not found")

    nvml = ToolSpec(tool="nvml", vendor="nvidia", names=(), group="nv", priority=0,
                    reader=no_lib)
    smi = toy_spec("nv-smi", group="nv", priority=1,
                   queries=(Query("main", (), lambda t: toy_parse(t, "nvidia", "nv-smi")),))
    fake_bin.add("nv-smi", toy_render, [[card(0, 77)]])
    src = source(fake_bin, nvml, smi)
    assert src.discover() == {"nv-smi": str(fake_bin.dir / "nv-smi")}
    assert src.searched["nvml"] == ["in-process library (NVML library not found)"]
    frame = await src.poll_once()
    assert [(c.id, c.util_pct) for c in frame.cards] == [("nvidia:0", 77.0)]


async def test_in_process_reader_is_used_when_it_answers(fake_bin: FakeBin) -> None:
    def reader() -> ToolReading:
        return ToolReading(cards=[CardReading(vendor="nvidia", index=0, util_pct=88.0)],
                           version="555.42")

    nvml = ToolSpec(tool="nvml", vendor="nvidia", names=(), group="nv", reader=reader)
    src = source(fake_bin, nvml)
    assert src.discover() == {"nvml": "in-process"}
    frame = await src.poll_once()
    assert [(c.id, c.util_pct, c.tool) for c in frame.cards] == [("nvidia:0", 88.0, "nvml")]
    assert src.versions == {"nvml": "555.42"}


async def test_slow_in_process_reader_times_out_without_piling_threads(
    fake_bin: FakeBin,
) -> None:
    calls: list[float] = []

    def slow() -> ToolReading:
        calls.append(time.monotonic())
        if len(calls) > 1:
            time.sleep(0.8)
        return ToolReading(cards=[CardReading(vendor="nvidia", index=0, util_pct=1.0)])

    nvml = ToolSpec(tool="nvml", vendor="nvidia", names=(), reader=slow)
    src = source(fake_bin, nvml, timeout=0.3)
    src.discover()  # call 1 (probe)
    first = await src.poll_once()  # call 2: times out
    second = await src.poll_once()  # still busy: not started again
    assert [e.message for e in first.errors] == ["nvml did not answer within 0.3 s"]
    assert [e.message for e in second.errors] == ["nvml is still busy with an earlier poll"]
    assert len(calls) == 2
    assert first.cards == []
    await asyncio.sleep(0.7)


# --- scheduling and closing ------------------------------------------------------------------


async def test_polls_never_overlap_and_keep_a_fixed_schedule_without_backlog(
    fake_bin: FakeBin, monkeypatch: pytest.MonkeyPatch,
) -> None:
    running = 0
    peak = 0
    starts: list[float] = []
    real = tool_queries.run_tool

    async def counting(argv: Sequence[str], timeout: float, cap: int | None = None) -> object:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        starts.append(time.monotonic())
        try:
            return await real(argv, timeout, cap)
        finally:
            running -= 1

    monkeypatch.setattr(tool_queries, "run_tool", counting)
    # Two slow calls (0.4 s) then fast ones, polled every 0.15 s.
    fake_bin.add("toy-smi", toy_render, [[card(0)]])
    slow = fake_bin.dir / "toy-smi"
    script = slow.read_text().replace(
        'cat "$d/$c.out"', '[ "$n" -le 2 ] && "$d/sleep" 0.4\ncat "$d/$c.out"'
    )
    slow.write_text(script)
    src = source(fake_bin, toy_spec(), interval=0.15)
    # Two callers at once still poll one after the other.
    await asyncio.gather(src.poll_once(), src.poll_once())
    assert peak == 1
    assert starts[1] - starts[0] >= 0.4
    starts.clear()
    async with contextlib.aclosing(src.frames()) as frames:
        seqs = []
        async for frame in frames:
            seqs.append(frame.seq)
            if len(seqs) == 4:
                break
    assert peak == 1 and seqs == [2, 3, 4, 5]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    # Fast polls keep the 0.15 s schedule (not back-to-back, not a catch-up burst): a poll
    # started late on a busy machine is followed by one on the schedule, a shorter gap.
    assert all(0.075 <= g < 0.5 for g in gaps), gaps
    assert sum(gaps) >= 0.14 * len(gaps), gaps  # the schedule, not faster


async def test_overrunning_poll_is_followed_at_once_without_a_burst(
    fake_bin: FakeBin, monkeypatch: pytest.MonkeyPatch,
) -> None:
    starts: list[float] = []
    real = tool_queries.run_tool

    async def timed(argv: Sequence[str], timeout: float, cap: int | None = None) -> object:
        starts.append(time.monotonic())
        return await real(argv, timeout, cap)

    monkeypatch.setattr(tool_queries, "run_tool", timed)
    fake_bin.add("toy-smi", toy_render, [Step(mode="hang"), [card(0)]])
    src = source(fake_bin, toy_spec(), interval=0.1, timeout=0.5)
    ends: list[float] = []
    async with contextlib.aclosing(src.frames()) as frames:
        async for _ in frames:
            ends.append(time.monotonic())
            if len(ends) == 4:
                break
    # The poll after the 0.5 s overrun starts at once; then the 0.1 s schedule resumes from
    # there: no burst of the four missed slots.
    assert starts[1] - ends[0] < 0.05
    gaps = [b - a for a, b in itertools.pairwise(starts[1:])]
    assert all(0.09 <= g < 0.35 for g in gaps), gaps


async def test_closing_mid_poll_kills_the_tool_and_ends_the_stream(fake_bin: FakeBin) -> None:
    tool = fake_bin.add("toy-smi", toy_render, [[card(0)], Step(mode="hang")])
    src = source(fake_bin, toy_spec(), interval=0.05, timeout=30.0)
    got = []

    async def consume() -> None:
        async for frame in src.frames():
            got.append(frame)

    task = asyncio.create_task(consume())
    for _ in range(200):
        await asyncio.sleep(0.02)
        if tool.calls() >= 2 and leftover_processes(fake_bin.dir):
            break
    assert leftover_processes(fake_bin.dir), "the fake should be hanging now"
    t0 = time.monotonic()
    await asyncio.wait_for(src.aclose(), 5.0)
    await asyncio.wait_for(task, 2.0)
    assert time.monotonic() - t0 < 1.0
    assert len(got) == 1
    assert leftover_processes(fake_bin.dir, grace=1.0) == [] and zombie_children() == []
    with pytest.raises(live.SourceClosed):
        await src.poll_once()


async def test_cancelling_the_consumer_mid_poll_kills_the_tool(fake_bin: FakeBin) -> None:
    tool = fake_bin.add("toy-smi", toy_render, [Step(mode="hang")])
    src = source(fake_bin, toy_spec(), timeout=30.0)
    task = asyncio.create_task(src.poll_once())
    for _ in range(200):
        await asyncio.sleep(0.02)
        if tool.calls() >= 1 and leftover_processes(fake_bin.dir):
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert leftover_processes(fake_bin.dir, grace=1.0) == [] and zombie_children() == []


def test_zombie_check_can_see_a_zombie() -> None:
    # Guard for the no-zombie assertions above: an unreaped child must show up.
    import subprocess

    child = subprocess.Popen(["/bin/sh", "-c", "exit 0"])
    deadline = time.monotonic() + 5
    while child.pid not in [z.pid for z in zombie_children()] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert child.pid in [z.pid for z in zombie_children()]
    child.wait()
    assert child.pid not in [z.pid for z in zombie_children()]


@pytest.mark.parametrize(("interval", "timeout", "expected"),
                         [(0.25, None, 1.0), (1.0, None, 1.0), (2.5, None, 2.5), (1.0, 0.3, 0.3)])
def test_timeout_defaults_to_the_interval_but_at_least_one_second(
    interval: float, timeout: float | None, expected: float
) -> None:
    assert LiveSource(interval=interval, timeout=timeout, specs=[]).timeout == expected
