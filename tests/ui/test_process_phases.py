"""The process panel's lines under a probed trainer: the step's phases, its hottest lines and,
for a stack that stands still, where it stands (`widgets.processes.stack_rows`)."""

from __future__ import annotations

from gpusat_tui.analysis.facts import frame_facts
from gpusat_tui.analysis.probe_reading.probe_ranks import ranks_of
from gpusat_tui.analysis.thresholds import DEFAULT_THRESHOLDS
from gpusat_tui.model import CodeLine, Frame, ProbeSample, ProcessSample
from gpusat_tui.ui.widgets.processes import process_text


def probe(phases: dict[str, int], lines: list[tuple[str, int, str, int]], *, i: int = 0,
          still: float = 0.0, where: str | None = None) -> ProbeSample:
    return ProbeSample(
        pid=100, card_id="nvidia:0", step_ms=458.0, batches=10 + i, steps=10 + i,
        elapsed_s=10.0 + i, data_wait_s=1.0, age_s=0.2, stack_hz=20.0,
        stack_samples=sum(phases.values()), phase_samples=phases,
        user_lines=tuple(CodeLine(file=f, line=n, function=fn, samples=c)
                         for f, n, fn, c in lines),
        stack_still_s=still, stack_where=where, stack_phase="collective" if where else "other",
        stack_line=CodeLine(file="/home/u/train.py", line=88, function="main"),
    )


TRAINER = ProcessSample(pid=100, role="trainer", name="python train.py", cpu_pct=90.0)


def test_the_step_reads_as_phases_with_its_hottest_lines() -> None:
    p = probe({"data": 72, "forward": 10, "backward": 12, "optimizer": 3, "other": 3},
              [("/home/u/train.py", 40, "collate", 60), ("/home/u/\x1b[31mtrain.py", 88,
                                                         "main", 20)])
    text = process_text([TRAINER], probes=[p]).plain
    assert ("step 458 ms: data 72% · forward 10% · backward 12% · optimizer 3% · other 3%"
            in text), text
    assert "hot train.py:40 collate 60% · " in text and "\x1b" not in text
    assert "not moved" not in text


def test_a_still_stack_says_where_and_the_window_decides_the_shares() -> None:
    early = probe({"data": 100}, [], i=0)
    late = probe({"data": 100, "collective": 100}, [], i=5, still=42.0,
                 where="torch.distributed.all_reduce")
    frames = [Frame(t=float(i), seq=i, probes=[p]) for i, p in enumerate([early, late])]
    ranks = {r.pid: r for r in ranks_of([frame_facts(f) for f in frames], DEFAULT_THRESHOLDS)}
    text = process_text([TRAINER], probes=[late], ranks=ranks).plain
    # Over the window only the collective was sampled; since the start, half of it was data.
    assert "step 458 ms: communication 100%" in text, text
    assert "now in torch.distributed.all_reduce (train.py:88), not moved for 42 s" in text
    alone = process_text([TRAINER], probes=[late]).plain
    assert "data 50% · communication 50%" in alone, alone


def test_an_unprobed_trainer_shows_where_its_outside_dump_found_it() -> None:
    from gpusat_tui.model import StackDump

    site = "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"
    frames = (CodeLine(function="main", file="/home/u/train.py", line=88),
              CodeLine(module="torch.distributed.distributed_c10d", function="all_reduce",
                       file=site, line=2806))
    dumped = TRAINER.model_copy(update={"stack_dump": StackDump(t=1.0, frames=frames)})
    text = process_text([dumped]).plain
    assert ("sampled from outside by py-spy: in torch.distributed.all_reduce (train.py:88)"
            in text), text
    denied = TRAINER.model_copy(update={"stack_dump": StackDump(t=1.0, error="denied")})
    assert "py-spy could not read its stack: ptrace refused" in process_text([denied]).plain
    missing = TRAINER.model_copy(update={"stack_dump": StackDump(t=1.0, error="missing")})
    assert process_text([missing]).plain == process_text([TRAINER]).plain


def test_the_lines_under_a_trainer_start_at_its_detail_column() -> None:
    """The phases, the hottest lines and a still stack's place sit under the trainer's row at
    the column its outside dump's line takes, never at the panel's edge."""
    from gpusat_tui.model import StackDump

    p = probe({"data": 72, "forward": 28}, [("/home/u/train.py", 40, "collate", 60)],
              still=8.0, where="collective")
    probed = process_text([TRAINER], probes=[p]).plain.splitlines()
    dumped = TRAINER.model_copy(update={"stack_dump": StackDump(t=1.0, frames=(
        CodeLine(function="main", file="/home/u/train.py", line=88),))})
    dump_line = process_text([dumped]).plain.splitlines()[-1]
    indent = len(dump_line) - len(dump_line.lstrip())
    assert indent > 0, dump_line
    trainer_row = next(i for i, line in enumerate(probed) if line.startswith("trainer"))
    under = probed[trainer_row + 1:]
    assert [line.split()[0] for line in under] == ["step", "hot", "now"], probed
    for line in under:
        assert line[:indent] == " " * indent and line[indent] != " ", line
