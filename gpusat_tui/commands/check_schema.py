"""The shapes of ``gpusat-tui check --json`` (and ``report --json``): an interface.

Fields are only added (each addition says so); ``schema_version`` is `model.SCHEMA_VERSION`,
and tests/commands/test_check.py pins the field names so that a rename cannot slip through.
`check_report.CheckBuilder` fills them from Frames.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from gpusat_tui.analysis.energy import JOULES_PER_KWH, EnergyFigures
from gpusat_tui.analysis.outside_stacks.outside_stack import dump_place
from gpusat_tui.model import SCHEMA_VERSION, ProcessRole, StackDump
from gpusat_tui.text import clean

__all__ = [
    "CheckAlloc",
    "CheckCard",
    "CheckEnergy",
    "CheckError",
    "CheckJob",
    "CheckOutsideStack",
    "CheckProbe",
    "CheckProbeRun",
    "CheckProcess",
    "CheckReport",
    "CheckShape",
    "CheckStack",
    "CheckUserLine",
    "CheckVerdict",
    "Stats",
    "stats_figures",
]


class CheckShape(BaseModel):
    """A part of the report: unknown fields refused (a typo is an error, not a new field)."""

    model_config = ConfigDict(extra="forbid")


class Stats(CheckShape):
    """Statistics of one figure over the good (fresh, non-missing) polls."""

    mean: float | None = None
    min: float | None = None
    max: float | None = None
    #: The last good figure, even when later polls failed and the card went stale.
    last: float | None = None


def stats_figures(shape: type[CheckShape]) -> tuple[str, ...]:
    """The shape's `Stats` fields, in order: each summarises the `model` figure of the same
    name (`CheckCard`'s a `CardReading`'s, `CheckProcess`'s a `ProcessSample`'s, `CheckProbe`'s
    a `ProbeSample`'s, `CheckAlloc`'s a `ProbeAlloc`'s), so `check_report` folds what the shape
    declares and a figure is added to ``check --json`` by its field here alone."""
    return tuple(name for name, info in shape.model_fields.items() if info.annotation is Stats)


class CheckVerdict(CheckShape):
    kind: str = "unknown"
    cause: str | None = None
    why: list[str] = []
    advice: list[str] = []


class CheckEnergy(CheckShape):
    """Energy integrated from power over the polls (see `analysis.energy`): since the card or
    job was first seen, and over the last ``window_s``. Null figures: no power figures."""

    joules: float | None = None
    kwh: float | None = None
    #: Seconds integrated (card-seconds for a job), and seen but not integrated (gaps).
    covered_s: float = 0.0
    uncovered_s: float = 0.0
    window_joules: float | None = None
    window_s: float = 0.0
    #: Job with a probe: samples counted over the steps both were known, and their ratio.
    samples: float | None = None
    joules_per_sample: float | None = None
    samples_per_kwh: float | None = None
    #: "no power figures" when the tool never gave one; else null.
    note: str | None = None

    @classmethod
    def of(cls, figures: EnergyFigures | None) -> CheckEnergy:
        if figures is None or figures.joules is None:
            return cls(note="no power figures",
                       uncovered_s=figures.uncovered_s if figures else 0.0)
        joules = round(figures.joules, 3)
        return cls(
            joules=joules, kwh=joules / JOULES_PER_KWH,
            covered_s=round(figures.covered_s, 3), uncovered_s=round(figures.uncovered_s, 3),
            window_joules=(None if figures.window_joules is None
                           else round(figures.window_joules, 3)),
            window_s=figures.window_s,
            samples=None if figures.samples is None else round(figures.samples, 3),
            joules_per_sample=figures.joules_per_sample,
            samples_per_kwh=figures.samples_per_kwh,
        )


class CheckJob(CheckShape):
    """Whose job some trainers are (`model.JobContext`), with its cards and energy."""

    #: ``slurm:<id>``, ``kubernetes:<pod uid>``, ``plain:<id>``: the `CheckProcess.job` key.
    key: str
    scheduler: str
    job_id: str | None = None
    step: str | None = None
    name: str | None = None
    user: str | None = None
    partition: str | None = None
    namespace: str | None = None
    pod_uid: str | None = None
    command: str | None = None
    source: str | None = None
    host: str | None = None
    pids: list[int] = []
    card_ids: list[str] = []
    energy: CheckEnergy = CheckEnergy()
    #: Addition: this job's own verdict, from its own cards' verdicts (null: none of its
    #: cards seen). Two jobs on two cards have one each; they are never compared.
    verdict: CheckVerdict | None = None


class CheckCard(CheckShape):
    id: str
    vendor: str
    index: int
    name: str | None = None
    util_pct: Stats = Stats()
    mem_pct: Stats = Stats()
    mem_used_mib: Stats = Stats()
    mem_total_mib: float | None = None
    power_w: Stats = Stats()
    power_cap_w: float | None = None
    temp_c: Stats = Stats()
    verdict: CheckVerdict = CheckVerdict()
    #: Addition: the part of the card this is (a MIG instance: "mig1"), null for a whole card.
    instance: str | None = None
    #: Addition: vendor figures from `CHECK_EXTRAS` (NVIDIA GPM: ``sm_active_pct``...), only
    #: those the card gave at least once.
    extras: dict[str, Stats] = {}
    #: Addition: clock-event ("throttle") reasons -> the polls they were active in; {} when
    #: they were read and never active, null when the tool gave none.
    throttle: dict[str, int] | None = None
    #: Addition: energy from the card's power over the polls (note: "no power figures").
    energy: CheckEnergy | None = None


class CheckAlloc(CheckShape):
    """The trainer's device allocator, from its probe (bytes; retries and OOMs cumulative)."""

    allocated_bytes: Stats = Stats()
    reserved_bytes: Stats = Stats()
    inactive_split_bytes: Stats = Stats()
    alloc_retries: int | None = None
    ooms: int | None = None


class CheckProbeRun(CheckShape):
    """Addition: the run's figures from the probe's cumulative counters, first to last
    publication seen (`analysis.probe_rates`, as the verdict's ``why`` takes them); where the
    counters went back (a restarted probe), each stretch weighed by its span
    (`analysis.probe_session`)."""

    span_s: float = 0.0
    data_wait_pct: float | None = None
    step_ms: float | None = None
    batches_per_s: float | None = None
    samples_per_s: float | None = None


class CheckUserLine(CheckShape):
    """Addition: one line of the user's own code and its share of the run's stack samples."""

    file: str
    line: int
    function: str
    pct: float


class CheckStack(CheckShape):
    """Addition: the training thread's stack as the probe sampled it over the run (first to
    last publication seen; since the probe started when only one was)."""

    #: Samples over the run, and their shares per phase (percent; phases never sampled left
    #: out): data, forward, backward, optimizer, collective, sync, checkpoint, evaluation,
    #: compiled (a whole step in one graph: Keras fit, jax.jit), other.
    samples: int
    phases_pct: dict[str, float] = {}
    #: The most sampled lines of the user's code (innermost frame outside the standard
    #: library and installed packages), most first.
    user_lines: list[CheckUserLine] = []
    #: The newest sample: its phase, the framework function that decided it
    #: ("torch.distributed.all_reduce"), its innermost user line ("train.py:88"), how long
    #: the stack had not changed, and its signature (equal on ranks stopped alike).
    phase: str | None = None
    where: str | None = None
    line: str | None = None
    still_s: float | None = None
    sig: str | None = None
    #: Its innermost frames, outermost first: "module.function (file:line)".
    frames: list[str] = []


class CheckProbe(CheckShape):
    """Figures measured inside one trainer by its probe (``gpusat-tui run``)."""

    data_wait_pct: Stats = Stats()
    step_ms: Stats = Stats()
    batches_per_s: Stats = Stats()
    samples_per_s: Stats = Stats()
    rank: int | None = None
    world_size: int | None = None
    alloc: CheckAlloc | None = None
    local_rank: int | None = None
    #: The card this rank drives and how that was known ("device", "tool", "guess").
    card_id: str | None = None
    tie: str | None = None
    batches: int = 0
    steps: int = 0
    #: Addition: whole-run figures from cumulative counters (null before two publications).
    run: CheckProbeRun | None = None
    #: Addition: whose hooks measured ("torch", "paddle"...); null from an older probe.
    framework: str | None = None
    #: Addition: why the probe does not measure this trainer's data wait (Keras fit, data
    #: sink mode, DALI/Ray Data, a rank fed by broadcast); then no wait figure anywhere.
    data_wait_note: str | None = None
    #: Addition: the sampled stack (null from an older probe, or with sampling off).
    stack: CheckStack | None = None


class CheckOutsideStack(CheckShape):
    """Addition: a trainer with no probe, its newest stack dump read from outside (py-spy)
    when it looked stalled or pegged: where its main thread stood then, or why none was read."""

    tool: str
    #: Unix time of the dump.
    t: float
    #: Its phase, the framework function that decided it ("torch.distributed.all_reduce"),
    #: its innermost user line ("train.py:88"), as a probe's `CheckStack`.
    phase: str | None = None
    where: str | None = None
    line: str | None = None
    #: Its frames, outermost first: "module.function (file:line)".
    frames: list[str] = []
    #: Why there is no stack: "missing" (py-spy not installed), "denied" (ptrace refused),
    #: "failed"; and the tool's words.
    error: str | None = None
    message: str | None = None
    #: Addition: Unix time since which the main thread has stood on this stack, using no CPU
    #: (two dumps a stall time apart); null when not seen twice.
    still_since: float | None = None

    @classmethod
    def of(cls, dump: StackDump) -> CheckOutsideStack:
        place = dump_place(dump.frames)
        return cls(
            tool=clean(dump.tool, 20), t=dump.t,
            phase=place.phase if place else None, where=place.where if place else None,
            line=place.line if place else None,
            frames=[clean(f"{f.module + '.' if f.module else ''}{f.function} "
                          f"({f.file}:{f.line})", 320) for f in dump.frames],
            error=dump.error, message=clean(dump.message, 300) if dump.message else None,
            still_since=dump.still_since,
        )


class CheckProcess(CheckShape):
    pid: int
    role: ProcessRole
    name: str
    cpu_pct: Stats = Stats()
    card_ids: list[str] = []
    #: Trainers started under ``gpusat-tui run`` only; absent (null) otherwise.
    probe: CheckProbe | None = None
    #: Addition: trainers only, the key of its job in `CheckReport.jobs`; null when unknown.
    job: str | None = None
    #: Progress counters per second (`ProcessSample.rchar_per_s` and the rest) over the run:
    #: bytes read and written through read/write calls, such calls, main-thread wake-ups.
    rchar_per_s: Stats = Stats()
    wchar_per_s: Stats = Stats()
    syscalls_per_s: Stats = Stats()
    ctx_switches_per_s: Stats = Stats()
    #: Trainers only: the launcher's world size and rank from the environment (null: unset).
    world_size: int | None = None
    rank: int | None = None
    #: Addition, trainers only (Linux): CPU % of its threads other than the main and the
    #: pin-memory thread, and how many of them were busy (>= 10 % of a core): where tf.data or
    #: MindSpore load, in threads inside the trainer.
    other_threads_cpu_pct: Stats = Stats()
    busy_threads: Stats = Stats()
    #: Addition (Linux cgroups): the CPU quota holding the process back, in cores, and the
    #: share of its quota periods throttled, percent (null: no quota set or read).
    cpu_quota_cores: Stats = Stats()
    cpu_throttled_pct: Stats = Stats()
    #: Addition, trainers with no probe: the newest stack dump read from outside; null when
    #: none was taken.
    stack_dump: CheckOutsideStack | None = None


class CheckError(CheckShape):
    tool: str
    message: str
    count: int
    #: Added to the first shape: what kind of failure ("timeout", "exit", "parse"...).
    kind: str = "other"


class CheckReport(CheckShape):
    """The one JSON object ``check --json`` prints."""

    schema_version: int = SCHEMA_VERSION
    duration_s: float
    samples: int
    cards: list[CheckCard] = []
    processes: list[CheckProcess] = []
    errors: list[CheckError] = []
    verdict: str = "unknown"
    #: Added to the first shape: plain-language notes, each once, in order (a tool that
    #: turned out to be another vendor's, a card no longer listed, a refused flag...).
    notes: list[str] = []
    #: Addition: the job's verdict (with no card at all, the one that stands on the probes).
    job: CheckVerdict | None = None
    #: Addition: true when no accelerator tool was found: with probed trainers every figure
    #: is from the job and the host, and the verdict is the job's; with none, nothing was
    #: polled (``errors`` has the ``no-tool`` entry).
    no_tool: bool = False
    #: Addition: whose jobs the cards ran (scheduler context) and each job's energy.
    jobs: list[CheckJob] = []
