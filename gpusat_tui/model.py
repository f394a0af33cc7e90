"""The data that flows through gpusat-tui: one `Frame` per poll.

Everything here is plain pydantic so that live polling, replay, the recorder, `check` and
`report` all speak the same objects. A figure a tool did not give (``N/A``, ``[N/A]``,
``ERR!``, missing column...) is ``None``: never a string, never an exception.

These models are also the recording format (one ``Frame`` per JSONL line), so field names
are an interface: add fields with defaults, never rename or remove them without bumping
``SCHEMA_VERSION``.
"""

from __future__ import annotations

import math
from typing import Literal, TypeGuard

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

#: Version of the recording format and of `check --json`. Bump on any incompatible change.
SCHEMA_VERSION = 1

Vendor = Literal[
    "nvidia", "amd", "hygon", "ascend", "cambricon", "kunlunxin", "mthreads", "biren",
    "gaudi", "iluvatar", "enflame", "metax", "intel", "neuron", "tpu", "jetson", "tenstorrent",
]
VENDORS: tuple[Vendor, ...] = (
    "nvidia", "amd", "hygon", "ascend", "cambricon", "kunlunxin", "mthreads", "biren",
    "gaudi", "iluvatar", "enflame", "metax", "intel", "neuron", "tpu", "jetson", "tenstorrent",
)


def is_vendor(value: object) -> TypeGuard[Vendor]:
    """Whether ``value`` (a label, a field of a file) names a vendor this version knows."""
    return value in VENDORS


#: What each vendor calls its utilisation figure, for labels on screen.
UTIL_LABELS: dict[str, str] = {
    "nvidia": "GPU-Util",
    "amd": "GPU%",
    "hygon": "HCU%",
    "ascend": "AICore%",
    "cambricon": "MLU util",
    "kunlunxin": "UseRate",
    "mthreads": "GPU-Util",
    "biren": "GPU-Util",
    "gaudi": "AIP-Util",
    "iluvatar": "GPU-Util",
    "enflame": "DUsed",
    "metax": "GPU-Util",
    "intel": "GPU-Util",
    "neuron": "NeuronCore%",
    "tpu": "duty cycle",
    "jetson": "GR3D",
    "tenstorrent": "util",
}

VerdictKind = Literal[
    "saturated", "starving", "fragmenting", "imbalanced", "idle", "unknown", "stalled"
]
VERDICT_KINDS: tuple[VerdictKind, ...] = (
    "saturated", "starving", "fragmenting", "imbalanced", "idle", "unknown", "stalled"
)


def is_verdict_kind(value: object) -> TypeGuard[VerdictKind]:
    """Whether ``value`` (a label from another exporter) is a verdict kind this version knows."""
    return value in VERDICT_KINDS


ProcessRole = Literal["trainer", "dataloader_worker"]

#: Timestamps past this (the year 5138) are not times but garbage.
MAX_UNIX_TIME = 1e11


def host_in_id(host: str) -> str:
    """A host as it stands in a card id: ``/`` (and ``%``, so quoting stays one-to-one)
    percent-quoted, so ``host/vendor:index`` reads one way only (a Kubernetes ``ns/pod`` host
    label is ``ns%2Fpod/nvidia:0``). Other hosts are unchanged."""
    return host.replace("%", "%25").replace("/", "%2F")


def _finite_or_none(value: float | None) -> float | None:
    """NaN and infinities are as good as missing: a verdict must never see them."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


#: What each card figure can physically be (inclusive), in the units of `CardReading`. Anything
#: outside is a tool's "no value" marker (65535 W, 4294967295 °C), a misread column or a driver
#: bug, never a reading: it becomes None (see `CardReading.rejected`). The limits are generous:
#: 5 kW is above any single accelerator module sold (a GB200 superchip draws ~2.7 kW), 16 TiB of
#: device memory above any made; -40 °C is the lowest rated ambient, 150 °C above any junction
#: limit (sensors read up to ~125 °C).
FIGURE_BOUNDS: dict[str, tuple[float, float]] = {
    "util_pct": (0.0, 100.0),
    "mem_pct": (0.0, 100.0),
    "temp_c": (-40.0, 150.0),
    "power_w": (0.0, 5000.0),
    "power_cap_w": (0.0, 5000.0),
    "mem_used_mib": (0.0, 16.0 * 1024 * 1024),
    "mem_total_mib": (0.0, 16.0 * 1024 * 1024),
}
#: A percentage up to this far over 100 is rounding in the tool (AMD's 101 %, a busy
#: 100.4 %): it is clamped to 100. Further over, it is no figure.
PCT_OVERSHOOT = 5.0
_PCT_FIGURES = frozenset({"util_pct", "mem_pct"})
_BOUNDS: tuple[tuple[str, float, float], ...] = tuple(
    (name, low, high) for name, (low, high) in FIGURE_BOUNDS.items()
)


class _Model(BaseModel):
    # extra="ignore": a recording from a newer minor version with extra fields still loads.
    model_config = ConfigDict(extra="ignore", frozen=True)


class CardReading(_Model):
    """One card (one device a training rank sees) as one tool saw it at one poll."""

    vendor: Vendor
    index: int
    #: A part of the physical card that a training rank sees as its own device (a MIG instance:
    #: ``"mig1"``, the MIG device index nvidia-smi shows in its ``MIG Dev`` column). ``None``
    #: for a whole card. Additive: ids of whole cards are unchanged.
    instance: str | None = None
    name: str | None = None
    uuid: str | None = None
    bus_id: str | None = None
    util_pct: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    mem_pct: float | None = None
    power_w: float | None = None
    power_cap_w: float | None = None
    temp_c: float | None = None
    #: Vendor-specific figures (AIVector %, HBM bandwidth %, Dec/Enc %, MIG, health...).
    extras: dict[str, float | str | None] = Field(default_factory=dict)
    #: Which executable answered (e.g. "hy-smi", "rocm-smi", "nvml").
    tool: str | None = None
    #: Seconds since these figures were actually read; set when a poll failed and the
    #: last good figures are carried over. ``None`` means fresh.
    stale_s: float | None = None
    #: The machine the card is in, set only by sources that mix machines (the fleet view);
    #: ``None`` on one machine, so single-host ids stay ``vendor:index``.
    host: str | None = None
    #: Figures refused by `FIGURE_BOUNDS` when this reading was built (field -> value given).
    #: Not serialised: the recording keeps the tool's raw text instead.
    _rejected: dict[str, float] | None = PrivateAttr(default=None)

    @field_validator(
        "util_pct", "mem_used_mib", "mem_total_mib", "mem_pct", "power_w", "power_cap_w",
        "temp_c", "stale_s",
        mode="before",
    )
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        return _finite_or_none(value)

    @model_validator(mode="after")
    def _bound_and_derive(self) -> CardReading:
        figures = self.__dict__
        rejected: dict[str, float] | None = None
        for name, low, high in _BOUNDS:
            value = figures[name]
            if value is None or low <= value <= high:
                continue
            if name in _PCT_FIGURES and high < value <= high + PCT_OVERSHOOT:
                figures[name] = high
                continue
            rejected = rejected or {}
            rejected[name] = value
            figures[name] = None
        used, total = figures["mem_used_mib"], figures["mem_total_mib"]
        if used is not None and total and used > total * (1 + PCT_OVERSHOOT / 100):
            rejected = rejected or {}
            rejected["mem_used_mib"] = used
            figures["mem_used_mib"] = None
        if rejected:
            self._rejected = rejected
        # Some tools print only used/total, others only a percentage: keep both when we can.
        if self.mem_pct is None and self.mem_used_mib is not None and self.mem_total_mib:
            object.__setattr__(self, "mem_pct", 100.0 * self.mem_used_mib / self.mem_total_mib)
        return self

    @property
    def rejected(self) -> dict[str, float]:
        """Figures the tool gave that cannot be (outside `FIGURE_BOUNDS`), now None."""
        return dict(self._rejected or {})

    @property
    def id(self) -> str:
        """Stable card id used everywhere (`check --json`, recordings, UI): ``vendor:index``,
        ``vendor:index/instance`` for a part of a card (``nvidia:0/mig1``), and ``host/...`` in
        front for a card with a ``host`` (the fleet view; `host_in_id` quotes a ``/`` in it)."""
        card = f"{self.vendor}:{self.index}"
        if self.instance is not None:
            card = f"{card}/{self.instance}"
        return f"{host_in_id(self.host)}/{card}" if self.host else card

    @property
    def power_frac(self) -> float | None:
        """Power as a fraction of its cap, or None when either is unknown."""
        if self.power_w is None or not self.power_cap_w:
            return None
        return self.power_w / self.power_cap_w


class CardProcess(_Model):
    """A process that a vendor tool lists as using a card (its own PID namespace!)."""

    pid: int
    card_id: str
    name: str | None = None
    mem_used_mib: float | None = None


class CodeLine(_Model):
    """A line of code in a trainer's stack, as the probe's stack sampler read it."""

    #: The module (``__name__`` of its globals: ``__main__`` for the script) and the function
    #: (qualified: ``Model.forward``); empty where the probe gave none.
    module: str = ""
    function: str = ""
    #: The file as the code names it (a path for a user line, a base name in a stack).
    file: str = ""
    line: int = 0
    #: Samples there (a user line's cumulative count; 0 in a stack).
    samples: int = 0


#: Why an outside stack dump has no stack (`StackDump.error`): the tool is not installed, the
#: kernel refused to let it read the process (ptrace: Yama ``ptrace_scope``, a container
#: without ``CAP_SYS_PTRACE``), or it ran and failed (a timeout, a process that is not Python,
#: one that ended, output it could not read).
DUMP_ERRORS: tuple[str, ...] = ("missing", "denied", "failed")


class StackDump(_Model):
    """The training thread's stack as a tool read it from outside the process (``py-spy dump
    --pid``): for a trainer with no probe (not started under ``gpusat-tui run``) that looks
    stalled or pegged. One dump, not a sample over time: it says where the thread stood then.
    Additive to the recording format (``ProcessSample.stack_dump``)."""

    #: The tool that read it, and the Unix time it did.
    tool: str = "py-spy"
    t: float
    #: The thread read: the process's main thread (where a plain training loop runs).
    thread: str | None = None
    #: Its frames, outermost first (the innermost 32). ``module`` is worked out from the file's
    #: path (an installed package's or the standard library's dotted name; empty for the user's
    #: own code), ``file`` is its base name (as in a probe's stack), ``samples`` 0.
    frames: tuple[CodeLine, ...] = ()
    #: Why there is no stack: one of `DUMP_ERRORS`; None for a stack.
    error: str | None = None
    #: The tool's own words on failure, cut short (uncleaned: shown through `text.clean`).
    message: str | None = None
    #: Addition: the main thread's CPU time (user + system, seconds since it started) read
    #: beside the dump; None where it cannot be read (not Linux).
    main_cpu_s: float | None = None
    #: Addition: Unix time of an earlier dump of the same process showing the same main-thread
    #: stack with the main thread using no CPU between (`analysis.outside_stack.unchanged`):
    #: the thread has stood there at least since then, whatever other threads did. None: not
    #: seen standing still.
    still_since: float | None = None

    @field_validator("t", mode="before")
    @classmethod
    def _time(cls, value: float) -> float:
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"t must be a Unix time in seconds, got {value!r}")
        return float(value)


class ProcessSample(_Model):
    """CPU figures of one training process or DataLoader worker, from psutil."""

    pid: int
    role: ProcessRole
    name: str
    #: Percent of ONE core (can exceed 100 for a multi-threaded trainer).
    cpu_pct: float | None = None
    #: psutil status string: "running", "sleeping", "disk-sleep" (D, waiting on I/O), "zombie"...
    state: str | None = None
    #: For a worker: the trainer it belongs to. For a trainer: None.
    trainer_pid: int | None = None
    card_ids: list[str] = Field(default_factory=list)
    #: Trainer only: CPU % of its ``pt_data_pin`` (pin-memory) thread, where readable.
    pin_cpu_pct: float | None = None
    num_threads: int | None = None
    #: Share of wall time (percent) the process's main thread was runnable but waiting for a
    #: CPU (``/proc/<pid>/schedstat`` run delay), over the last interval; Linux only.
    run_delay_pct: float | None = None
    #: Progress counters over the last interval (Linux: ``/proc/<pid>/io`` and the main
    #: thread's ``schedstat``): bytes read and written through read/write system calls
    #: (``rchar``/``wchar``: files, sockets and pipes alike), read + write system calls
    #: (``syscr`` + ``syscw``) and the main thread's context switches, each per second. A job
    #: whose counters move is making progress whatever its CPU says; None where not read.
    rchar_per_s: float | None = None
    wchar_per_s: float | None = None
    syscalls_per_s: float | None = None
    ctx_switches_per_s: float | None = None
    #: Trainer only: the launcher's world size and rank, read once from its environment
    #: (``WORLD_SIZE``/``RANK`` and the MPI and Slurm twins); None where unset or unreadable.
    world_size: int | None = None
    rank: int | None = None
    #: Trainer only (Linux): CPU % (of one core) of its threads other than the main thread and
    #: the pin-memory thread over the last interval, and how many of them used at least 10 %
    #: of a core (``host.task_threads``): where tf.data or MindSpore load, in threads inside
    #: the trainer. None where not read (other systems, older recordings).
    other_threads_cpu_pct: float | None = None
    busy_threads: int | None = None
    #: Addition (Linux cgroups v2 ``cpu.max``, v1 ``cpu.cfs_quota_us``): the CPU quota that
    #: holds the process back, in cores (the tightest on its cgroup path), and the share of
    #: its quota periods throttled over the last interval, percent (``cpu.stat``). None where
    #: no quota is set or none could be read.
    cpu_quota_cores: float | None = None
    cpu_throttled_pct: float | None = None
    #: Addition, trainers without a probe only: the newest stack dump read from outside
    #: (`StackDump`), carried on every poll after it was taken; None where none was taken.
    stack_dump: StackDump | None = None

    @field_validator(
        "cpu_pct", "pin_cpu_pct", "run_delay_pct", "rchar_per_s", "wchar_per_s",
        "syscalls_per_s", "ctx_switches_per_s", "other_threads_cpu_pct", "cpu_quota_cores",
        "cpu_throttled_pct", mode="before",
    )
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        return _finite_or_none(value)

    @field_validator("busy_threads", mode="before")
    @classmethod
    def _count(cls, value: object) -> object:
        """A thread count below zero cannot be (a hand-edited recording): not read."""
        return None if isinstance(value, int | float) and value < 0 else value


class ProbeAlloc(_Model):
    """The device allocator as the trainer's framework reports it (``torch.cuda.memory_stats``
    and its ``npu``/``mlu``/``musa`` twins), read by the probe at most once a second."""

    allocated_bytes: int | None = None
    reserved_bytes: int | None = None
    #: Freed blocks the caching allocator cannot hand back whole: fragmentation.
    inactive_split_bytes: int | None = None
    #: Cumulative: allocations that had to free the cache and retry (``num_alloc_retries``).
    alloc_retries: int | None = None
    #: Cumulative out-of-memory errors (``num_ooms``).
    ooms: int | None = None


class ProbeSample(_Model):
    """Figures measured inside one training process by the probe (``gpusat-tui run``).

    Rates and shares cover the interval between the probe's last two publications (about a
    second); ``batches``, ``steps`` and ``data_wait_s`` are cumulative since the probe started,
    so a window's share of waiting is exact: delta ``data_wait_s`` over delta ``elapsed_s``.
    """

    pid: int
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    #: Device index as the framework in the trainer numbers it (after ``*_VISIBLE_DEVICES``);
    #: None until the trainer itself initialised its device (the probe never does).
    device_index: int | None = None
    #: The card this rank drives, ``vendor:index`` as in ``CardReading.id``; None when untied.
    card_id: str | None = None
    #: How ``card_id`` was tied: "device" (device index, mapped through the trainer's own
    #: ``*_VISIBLE_DEVICES``), "tool" (the vendor tool lists this PID on that card) or
    #: "guess" (local rank order, or the only card); None when untied.
    tie: str | None = None
    #: Share of wall time blocked in ``next(dataloader)``, percent, over the last interval.
    data_wait_pct: float | None = None
    #: Wall time per training step (between optimizer steps; between batches where no
    #: optimizer step hook fired), milliseconds, over the last interval.
    step_ms: float | None = None
    batches_per_s: float | None = None
    #: Batches/s times the batch size read from the first tensor of a batch; None if unknown.
    samples_per_s: float | None = None
    batches: int = 0
    steps: int = 0
    #: Cumulative seconds blocked in ``next(dataloader)`` and seconds since the probe started.
    data_wait_s: float | None = None
    elapsed_s: float | None = None
    alloc: ProbeAlloc | None = None
    #: Seconds between the probe's last publication and this poll.
    age_s: float | None = None
    #: Device family the probe saw initialised in the trainer: "cuda", "npu", "mlu", "musa".
    device_type: str | None = None
    #: Additions: ``elapsed_s`` when the newest batch was returned and the newest optimizer
    #: step ended, and the batch size the probe read, so that step time and samples/s over
    #: a window come from cumulative figures (`analysis.probe_rates`).
    last_batch_s: float | None = None
    last_step_s: float | None = None
    batch_size: int | None = None
    #: Addition: the DataLoader's worker processes, as its iterator told the probe.
    num_workers: int | None = None
    #: Addition: whose hooks measured in the trainer ("torch", "paddle"...); None if unknown.
    framework: str | None = None
    #: Addition: why this trainer's data wait is not measured (Keras ``fit``, data sink mode,
    #: a DALI/Ray Data pipeline, a rank fed by broadcast); then ``data_wait_pct`` is None.
    data_wait_note: str | None = None
    #: Additions: the training thread's stack, sampled ``stack_hz`` times a second by the
    #: probe (None/empty: an older probe, or sampling off). ``stack_samples`` and
    #: ``phase_samples`` (phase -> samples, `gpusat_tui.probe.phases.PHASES`) and each user
    #: line's ``samples`` are cumulative, so a window's shares come from two samples.
    stack_hz: float | None = None
    stack_samples: int = 0
    phase_samples: dict[str, int] = Field(default_factory=dict)
    #: The most sampled lines of the user's own code (innermost frame outside the standard
    #: library and installed packages), most sampled first.
    user_lines: tuple[CodeLine, ...] = ()
    #: The newest sample: its phase, the framework function that decided it
    #: ("torch.distributed.all_reduce"), its innermost user line, and for how many seconds
    #: the stack had not changed.
    stack_phase: str | None = None
    stack_where: str | None = None
    stack_line: CodeLine | None = None
    stack_still_s: float | None = None
    #: 8 hex digits naming the newest stack (equal on ranks stopped at the same place), and
    #: its innermost frames, outermost first.
    stack_sig: str | None = None
    stack: tuple[CodeLine, ...] = ()

    @field_validator(
        "data_wait_pct", "step_ms", "batches_per_s", "samples_per_s", "data_wait_s",
        "elapsed_s", "age_s", "last_batch_s", "last_step_s", "stack_hz", "stack_still_s",
        mode="before",
    )
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        return _finite_or_none(value)


class HostSample(_Model):
    """Whole-machine CPU figures."""

    cpu_pct: float | None = None
    iowait_pct: float | None = None
    cpu_count: int | None = None


#: Every kind a `ToolError` can have (the exporter's error counters start at 0 for each).
TOOL_ERROR_KINDS: tuple[str, ...] = (
    "missing", "timeout", "exit", "parse", "denied", "process", "other"
)


class ToolError(_Model):
    """A tool that failed on this poll. The Frame still carries the other tools' figures."""

    tool: str
    message: str
    #: One of `TOOL_ERROR_KINDS`.
    kind: str = "other"


class JobContext(_Model):
    """Whose job some trainers are: the scheduler's view of them, read once per trainer.

    Read from each trainer's environment where this account may (``/proc/<pid>/environ``),
    else from its cgroup path (world-readable, but it names only the Slurm job/step and uid, or
    the Kubernetes pod UID). Every string is the process's own text, uncleaned: display goes
    through `gpusat_tui.text.clean`. Additive to the recording format (``Frame.jobs``).
    """

    #: "slurm", "kubernetes" or "plain" (no scheduler seen: user and command line only).
    scheduler: str = "plain"
    #: Slurm job id; the pod UID on Kubernetes; for a plain job the torchrun rendezvous
    #: (``MASTER_ADDR:MASTER_PORT``) shared by its ranks, else the trainer's PID.
    job_id: str | None = None
    #: Slurm step ids seen among the trainers ("0", "batch"...), comma-joined when several.
    step: str | None = None
    #: Slurm job name; the pod name on Kubernetes.
    name: str | None = None
    user: str | None = None
    partition: str | None = None
    namespace: str | None = None
    pod_uid: str | None = None
    #: Plain jobs: the first trainer's command line (capped).
    command: str | None = None
    #: Where it was read: "environ", "cgroup", "process" (owner and command line only) or
    #: "exporter" (the fleet view, from ``gpusat_job_info``).
    source: str | None = None
    #: Trainers of this job on this machine, and the cards they drive.
    pids: list[int] = Field(default_factory=list)
    card_ids: list[str] = Field(default_factory=list)
    #: The machine, set only by sources that mix machines (the fleet view).
    host: str | None = None

    @property
    def key(self) -> str:
        """One job, one key: ``slurm:123``, ``kubernetes:<pod uid>``, ``plain:<id>``; a plain
        job known by a PID or a local rendezvous address gets its host in front where one is
        set (they mean nothing on another machine)."""
        job_id = self.job_id or "?"
        key = f"{self.scheduler}:{job_id}"
        local = job_id.isdigit() or job_id.startswith(("localhost:", "127."))
        if self.scheduler == "plain" and self.host and local:
            key = f"{self.host}/{key}"
        return key


class FleetItem(_Model):
    """One card of a fleet summary that is not healthy: enough to place its row."""

    #: Card id (``host/vendor:index``), as `CardReading.id` of the same card.
    id: str
    host: str
    #: A verdict kind, or ``down`` (its host's exporter gone).
    kind: str
    cause: str | None = None
    #: `JobContext.key` of its job where the fleet knows it.
    job: str | None = None
    #: Utilisation (0..100) where it was asked for, else None (the list then counts it whole).
    util_pct: float | None = None


class FleetSummary(_Model):
    """What a fleet Frame says of the whole fleet when its cards are only the rows on screen
    (`Frame.fleet`): counts from the server's aggregation and the problem cards of the groups
    the list can show (the worst, ranked on the server), or every problem card.

    Additive: absent (None) in recordings made before it and on every single-host Frame.
    """

    hosts: int = 0
    cards: int = 0
    #: Cards per kind (verdict kinds and ``down``), over the whole fleet.
    kinds: dict[str, int] = Field(default_factory=dict)
    #: Hosts whose exporter is gone.
    down_hosts: int = 0
    #: The cards that are not saturated or idle of the groups asked for, worst placed by the
    #: list.
    problems: list[FleetItem] = Field(default_factory=list)
    #: Healthy cards (saturated or idle) that pass the view's host/kind matchers.
    healthy: int = 0
    #: Their ids, only while the healthy row is unfolded (else empty).
    healthy_ids: list[str] = Field(default_factory=list)
    #: Cards of each problem job (`JobContext.key`), on every host.
    job_cards: dict[str, int] = Field(default_factory=dict)
    #: Hosts' mean busy share (0..1) between their last two scrapes, for the straggler: every
    #: busy host's, or (`busy_hosts` set) the lowest few and the highest.
    host_busy: dict[str, float] = Field(default_factory=dict)
    #: How many busy hosts there are, and their median busy share, where `host_busy` holds
    #: only the lowest few and the highest (None: it holds them all).
    busy_hosts: int | None = None
    busy_median: float | None = None
    #: Per problem kind, the jobs with a card of that kind in the whole fleet (the server's
    #: count); None: count them from `problems`.
    kind_jobs: dict[str, int] | None = None


class Frame(_Model):
    """One poll: every card, the training processes, the host, and what went wrong."""

    #: Unix time (seconds) when the poll started.
    t: float
    #: Poll counter from the start of the session (0, 1, 2...).
    seq: int = 0
    cards: list[CardReading] = Field(default_factory=list)
    card_processes: list[CardProcess] = Field(default_factory=list)
    processes: list[ProcessSample] = Field(default_factory=list)
    host: HostSample | None = None
    errors: list[ToolError] = Field(default_factory=list)
    #: Plain-language notes (e.g. "PID 4242 listed by npu-smi is not visible here").
    notes: list[str] = Field(default_factory=list)
    #: CPU % of the monitor itself (and the tools it ran) over the last interval.
    monitor_cpu_pct: float | None = None
    #: Raw tool output kept for polls that failed to parse (bug reports); tool -> text.
    raw: dict[str, str] = Field(default_factory=dict)
    #: Figures measured inside the training processes by the probe (``gpusat-tui run``).
    probes: list[ProbeSample] = Field(default_factory=list)
    #: Whose jobs the cards run (one entry per job; see `JobContext`). Additive: empty in
    #: recordings made before it, and when no trainer was found.
    jobs: list[JobContext] = Field(default_factory=list)
    #: The fleet view's summary of the whole fleet where ``cards`` holds only the rows on
    #: screen (see `FleetSummary`). Additive: None elsewhere and in older recordings.
    fleet: FleetSummary | None = None

    @field_validator("t")
    @classmethod
    def _real_time(cls, value: float) -> float:
        # NaN, infinities and 1e308 are no time: such a line is not a frame (and would break
        # every duration and chart computed from it).
        if not (math.isfinite(value) and 0.0 <= value < MAX_UNIX_TIME):
            raise ValueError(f"t must be a Unix time in seconds, got {value!r}")
        return value

    def card(self, card_id: str) -> CardReading | None:
        return next((c for c in self.cards if c.id == card_id), None)


class Verdict(_Model):
    """What the badge says about one card (or the whole job), and why."""

    kind: VerdictKind = "unknown"
    #: For starving: "input-bound", "io-bound", "checkpoint" (the trainer itself writes, a
    #: checkpoint or a save, while the card waits), "host-bound", "light-kernels" (busy reading
    #: at low power, or low SM activity, no host bottleneck), "collective-wait" (waiting for a
    #: straggling peer, on this host or, for a distributed job, another one) or "unknown";
    #: "straggler" or "throttled" (the lagging card's clocks held down) for imbalanced;
    #: "paused" for unknown when nothing has run for less than the stall time (not yet a
    #: stall); "not-starving" for unknown with no accelerator tool when the probed trainers'
    #: measured data wait is below the starving line; else None.
    cause: str | None = None
    why: list[str] = Field(default_factory=list)
    advice: list[str] = Field(default_factory=list)
    confidence: float = 0.0


class Assessment(_Model):
    """Verdicts for every card in a window, plus one for the job as a whole."""

    cards: dict[str, Verdict] = Field(default_factory=dict)
    job: Verdict = Field(default_factory=Verdict)


class RecordingHeader(_Model):
    """First line of a ``--record`` JSONL file."""

    type: Literal["header"] = "header"
    schema_version: int = SCHEMA_VERSION
    gpusat_tui_version: str
    host: str | None = None
    tools: dict[str, str | None] = Field(default_factory=dict)
    interval_s: float | None = None
    started_at: float | None = None
    #: Part number of a rotated recording (0: the first file; 1 for ``run.0001.jsonl.zst``...).
    part: int = 0


# --- clock-event ("throttle") reasons ------------------------------------------------------
# The short names a card's ``extras["throttle"]`` holds (comma-separated, "" when read and none
# active): an interface of check --json, the dashboard and the verdict. NVIDIA's bit mask is
# turned into them by `collectors.nvidia_throttle`.

#: Every short name any source may write into ``extras["throttle"]``.
THROTTLE_NAMES: frozenset[str] = frozenset(
    {"power-cap", "thermal", "hw-slowdown", "hw-thermal", "hw-power-brake", "sw-thermal",
     "sync-boost", "idle", "app-clocks"}
)

#: Reasons that mean "the card is held below its clocks by a limit", not "it has nothing to do".
LIMITING: frozenset[str] = frozenset(THROTTLE_NAMES - {"idle", "app-clocks"})


def split_reasons(value: object) -> list[str]:
    """``extras["throttle"]`` -> its names (unknown names dropped); [] for absent or empty."""
    if not isinstance(value, str) or not value:
        return []
    return [name for name in value.split(",") if name in THROTTLE_NAMES]
