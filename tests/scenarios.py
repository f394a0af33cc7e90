"""Labelled training scenarios: what the cards, the processes and the host show, tick by tick.

Shared by the verdict tests, the fake vendor tools (``cards(tick)`` gives `FakeCard`s to
render, ``tool_processes(tick)`` the processes a tool lists), the fake process table
(``processes(tick)``), recorded sample sessions (``frames(n)``) and ``check`` end-to-end tests.
Each scenario says which verdict the job should get (``expected_kind`` / ``expected_cause``)
and, where it matters, each card (``expected_cards``); a step scenario also says what it shows
before ``change_at``.

Figures are deterministic: tick ``k`` of a scenario always gives the same numbers, whatever
else was asked before (each stream seeds its own generator from the scenario seed and tick).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from gpusat_tui.model import CardReading, Frame, HostSample, ProcessSample, Vendor, VerdictKind
from tests.fakes import FakeCard, FakeProcess

__all__ = ["SCENARIOS", "T0", "Expectation", "Scenario"]

#: Default start time of generated frames (a fixed Unix time: deterministic recordings).
T0 = 1_767_225_600.0

CardsFn = Callable[[int, random.Random], list[FakeCard]]
ProcsFn = Callable[[int, random.Random], list[ProcessSample]]
HostFn = Callable[[int, random.Random], HostSample | None]


@dataclass(frozen=True)
class Expectation:
    kind: VerdictKind
    cause: str | None = None


def _no_procs(tick: int, rng: random.Random) -> list[ProcessSample]:
    return []


def _no_host(tick: int, rng: random.Random) -> HostSample | None:
    return None


@dataclass(frozen=True)
class Scenario:
    """One labelled situation. ``frames(n)`` is the usual entry point."""

    name: str
    description: str
    expected: Expectation
    cards_fn: CardsFn
    procs_fn: ProcsFn = _no_procs
    host_fn: HostFn = _no_host
    vendor: Vendor = "nvidia"
    tool: str = "nvidia-smi"
    seed: int = 0
    #: Suggested number of polls to run it for.
    ticks: int = 30
    #: Per card index, when a card's verdict differs from the job's.
    expected_cards: Mapping[int, Expectation] = field(default_factory=dict)
    #: For a step change: the first tick of the new state, and what was shown before it.
    change_at: int | None = None
    before: Expectation | None = None

    @property
    def expected_kind(self) -> VerdictKind:
        return self.expected.kind

    @property
    def expected_cause(self) -> str | None:
        return self.expected.cause

    def _rng(self, tick: int, stream: int) -> random.Random:
        return random.Random(self.seed * 1_000_003 + tick * 16 + stream)

    def cards(self, tick: int) -> list[FakeCard]:
        """What the vendor tool reports at ``tick``."""
        return self.cards_fn(tick, self._rng(tick, 1))

    def processes(self, tick: int) -> list[ProcessSample]:
        """The trainer(s) and DataLoader workers as the process watcher sees them."""
        return self.procs_fn(tick, self._rng(tick, 2))

    def host(self, tick: int) -> HostSample | None:
        return self.host_fn(tick, self._rng(tick, 3))

    def tool_processes(self, tick: int) -> list[FakeProcess]:
        """Processes a vendor tool lists on its cards: each trainer on the cards it uses, or
        one "python" process per card holding memory when no trainer names its cards."""
        procs = self.processes(tick)
        cards = self.cards(tick)
        out: list[FakeProcess] = []
        for proc in procs:
            if proc.role != "trainer":
                continue
            for card_id in proc.card_ids:
                index = int(card_id.rpartition(":")[2])
                mem = next((c.mem_used_mib for c in cards if c.index == index), None)
                out.append(FakeProcess(proc.pid, proc.name, index, (mem or 0.0) * 0.95))
        if out:
            return out
        trainer = next((p for p in procs if p.role == "trainer"), None)
        pid = trainer.pid if trainer else 4242
        for card in cards:
            used, total = card.mem_used_mib, card.mem_total_mib
            if used and total and used / total > 0.05:
                out.append(FakeProcess(pid, "python", card.index, used * 0.95))
        return out

    def card_readings(self, tick: int) -> list[CardReading]:
        """`cards(tick)` as the model's readings, as a collector would have parsed them."""
        return [
            CardReading(
                vendor=self.vendor, index=c.index, name=c.name, util_pct=c.util_pct,
                mem_used_mib=c.mem_used_mib, mem_total_mib=c.mem_total_mib, power_w=c.power_w,
                power_cap_w=c.power_cap_w, temp_c=c.temp_c, extras=dict(c.extras), tool=self.tool,
            )
            for c in self.cards(tick)
        ]

    def frame(self, tick: int, t0: float = T0, interval: float = 1.0) -> Frame:
        return Frame(
            t=t0 + tick * interval,
            seq=tick,
            cards=self.card_readings(tick),
            processes=self.processes(tick),
            host=self.host(tick),
        )

    def frames(self, n: int | None = None, t0: float = T0, interval: float = 1.0) -> list[Frame]:
        """``n`` polls (default ``ticks``) from ``t0``, ``interval`` seconds apart."""
        return [self.frame(k, t0, interval) for k in range(self.ticks if n is None else n)]

    def expected_at(self, tick: int) -> Expectation:
        """The job verdict this scenario stands for at ``tick``."""
        if self.change_at is not None and self.before is not None and tick < self.change_at:
            return self.before
        return self.expected


# --- building blocks ---------------------------------------------------------------------------

H100_MIB = 81920.0


def _card(
    index: int,
    util: float | None,
    mem_pct: float | None,
    power_frac: float | None,
    *,
    cap: float | None = 400.0,
    total: float = H100_MIB,
    name: str = "NVIDIA H100 80GB HBM3",
    temp: float = 55.0,
) -> FakeCard:
    return FakeCard(
        index=index,
        name=name,
        util_pct=None if util is None else round(min(100.0, max(0.0, util))),
        mem_used_mib=None if mem_pct is None else round(total * mem_pct / 100),
        mem_total_mib=total,
        power_w=None if power_frac is None or cap is None else round(cap * power_frac, 1),
        power_cap_w=cap,
        temp_c=temp,
    )


TRAINER_PID = 4242


def _job(
    rng: random.Random,
    *,
    trainer_cpu: tuple[float, float],
    workers: int,
    worker_cpu: tuple[float, float],
    worker_dstate: float = 0.0,
    trainer_pid: int = TRAINER_PID,
    card_ids: tuple[str, ...] = (),
    worker_delay: tuple[float, float] | None = None,
) -> list[ProcessSample]:
    """A trainer and its DataLoader workers with CPU (and, where given, the workers' run delay:
    time queued for a CPU) drawn from the given ranges."""
    procs = [
        ProcessSample(
            pid=trainer_pid, role="trainer", name="python",
            cpu_pct=round(rng.uniform(*trainer_cpu), 1), state="running",
            card_ids=list(card_ids), num_threads=24,
        )
    ]
    for w in range(workers):
        state = "disk-sleep" if rng.random() < worker_dstate else "running"
        procs.append(
            ProcessSample(
                pid=trainer_pid + 1 + w, role="dataloader_worker", name="pt_data_worker",
                cpu_pct=round(rng.uniform(*worker_cpu), 1), state=state, trainer_pid=trainer_pid,
                run_delay_pct=(
                    None if worker_delay is None else round(rng.uniform(*worker_delay), 1)
                ),
            )
        )
    return procs


def _host(rng: random.Random, cpu: tuple[float, float], iowait: tuple[float, float],
          count: int = 32) -> HostSample:
    return HostSample(
        cpu_pct=round(rng.uniform(*cpu), 1), iowait_pct=round(rng.uniform(*iowait), 1),
        cpu_count=count,
    )


def _swing_util(tick: int, rng: random.Random) -> float:
    # A batch arrives, the card bursts for about a second, then waits for the next one.
    return rng.uniform(92, 100) if tick % 4 == 0 else rng.uniform(0, 8)


# --- the scenarios ------------------------------------------------------------------------------


def _saturated_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return [_card(0, rng.uniform(96, 100), 71.0, rng.uniform(0.82, 0.90))]


def _noisy_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    if tick % 9 == 4:  # an isolated dip: a checkpoint write, an eval batch, a log flush
        return [_card(0, rng.uniform(45, 60), 70 + rng.uniform(-2, 2), rng.uniform(0.5, 0.6))]
    return [_card(0, rng.uniform(82, 100), 70 + rng.uniform(-2, 2), rng.uniform(0.70, 0.92))]


def _calm_job(tick: int, rng: random.Random) -> list[ProcessSample]:
    return _job(rng, trainer_cpu=(70, 90), workers=6, worker_cpu=(30, 45))


def _calm_host(tick: int, rng: random.Random) -> HostSample:
    return _host(rng, (25, 35), (0.5, 2))


def _starving_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return [_card(0, _swing_util(tick, rng), 60.0, rng.uniform(0.25, 0.40))]


def _pegged_workers(tick: int, rng: random.Random) -> list[ProcessSample]:
    return _job(rng, trainer_cpu=(25, 35), workers=8, worker_cpu=(94, 100))


def _input_host(tick: int, rng: random.Random) -> HostSample:
    return _host(rng, (30, 40), (0.5, 2))


def _io_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    util = rng.uniform(90, 100) if tick % 5 == 0 else rng.uniform(0, 8)
    return [_card(0, util, 55.0, rng.uniform(0.20, 0.35))]


def _waiting_workers(tick: int, rng: random.Random) -> list[ProcessSample]:
    return _job(rng, trainer_cpu=(10, 20), workers=8, worker_cpu=(3, 12), worker_dstate=0.6)


def _io_host(tick: int, rng: random.Random) -> HostSample:
    return _host(rng, (10, 20), (30, 45))


def _host_bound_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return [_card(0, rng.uniform(25, 45), 50.0, rng.uniform(0.30, 0.40))]


def _pegged_trainer(tick: int, rng: random.Random) -> list[ProcessSample]:
    return _job(rng, trainer_cpu=(98, 100), workers=4, worker_cpu=(1, 5))


def _fragmenting_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    mem = 91 + (0, 4, 8, 3)[tick % 4] + rng.uniform(0, 0.5)
    return [_card(0, rng.uniform(0, 4), mem, rng.uniform(0.18, 0.22), cap=300.0,
                  total=65536.0, name="NVIDIA A100-SXM4-64GB")]


def _light_job(tick: int, rng: random.Random) -> list[ProcessSample]:
    return _job(rng, trainer_cpu=(20, 30), workers=2, worker_cpu=(3, 8))


def _imbalanced_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    cards = [_card(i, rng.uniform(90, 98), 75.0, rng.uniform(0.80, 0.90)) for i in range(3)]
    cards.append(_card(3, rng.uniform(25, 35), 75.0, rng.uniform(0.30, 0.38)))
    return cards


def _ddp_ranks(tick: int, rng: random.Random) -> list[ProcessSample]:
    procs: list[ProcessSample] = []
    for rank in range(4):
        # Rank 3's shard is the slow one to decode: its workers are pegged, the others are not.
        worker_cpu = (95, 100) if rank == 3 else (30, 50)
        procs += _job(
            rng, trainer_cpu=(60, 80), workers=4, worker_cpu=worker_cpu,
            trainer_pid=5000 + 100 * rank, card_ids=(f"nvidia:{rank}",),
        )
    return procs


def _ddp_host(tick: int, rng: random.Random) -> HostSample:
    return _host(rng, (40, 50), (0.5, 2), count=64)


def _idle_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return [_card(0, 0.0, 0.6, rng.uniform(0.14, 0.16))]


def _step_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return _starving_cards(tick, rng) if tick < 20 else _saturated_cards(tick, rng)


def _step_procs(tick: int, rng: random.Random) -> list[ProcessSample]:
    # The fix: num_workers 8 -> 16, after which no worker is pegged.
    if tick < 20:
        return _pegged_workers(tick, rng)
    return _job(rng, trainer_cpu=(70, 90), workers=16, worker_cpu=(55, 70))


def _step_back_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return _saturated_cards(tick, rng) if tick < 20 else _io_cards(tick, rng)


def _step_back_procs(tick: int, rng: random.Random) -> list[ProcessSample]:
    return _calm_job(tick, rng) if tick < 20 else _waiting_workers(tick, rng)


def _step_back_host(tick: int, rng: random.Random) -> HostSample:
    return _calm_host(tick, rng) if tick < 20 else _io_host(tick, rng)


def _start_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return _idle_cards(tick, rng) if tick < 15 else _saturated_cards(tick, rng)


def _start_procs(tick: int, rng: random.Random) -> list[ProcessSample]:
    return [] if tick < 15 else _calm_job(tick, rng)


def _false_busy_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return [_card(0, rng.uniform(99, 100), 40.0, rng.uniform(0.28, 0.32))]


def _false_busy_procs(tick: int, rng: random.Random) -> list[ProcessSample]:
    return _job(rng, trainer_cpu=(40, 55), workers=6, worker_cpu=(10, 20))


def _amd_quirk_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return [_card(0, 100.0, 0.3, rng.uniform(0.07, 0.09), cap=300.0, total=65536.0,
                  name="AMD Instinct MI210")]


def _no_power_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return [_card(0, rng.uniform(92, 99), 68.0, None, cap=None, total=49152.0,
                  name="MLU370-X8")]


def _ascend_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    card = _card(0, rng.uniform(72, 79), 60.0, None, cap=None, total=65536.0, name="910B3")
    return [dataclasses.replace(card, power_w=round(rng.uniform(290, 320), 1))]


# --- multi-card jobs, stalls and contention ------------------------------------------

#: One swing of a starving card's utilisation, poll by poll (the issue's example): every card
#: of the phase-noise scenarios runs through it, each shifted by its own number of polls.
PHASE_CYCLE = (0.0, 100.0, 20.0, 90.0, 5.0)


def _phase_cards(n: int) -> CardsFn:
    def cards(tick: int, rng: random.Random) -> list[FakeCard]:
        return [
            _card(i, PHASE_CYCLE[(tick + i) % len(PHASE_CYCLE)] + rng.uniform(-2, 2), 60.0,
                  rng.uniform(0.25, 0.40))
            for i in range(n)
        ]
    return cards


def _ranks(n: int, slow: int | None = None, **job: object) -> ProcsFn:
    """DDP: one trainer per card with its own workers (pegged on every rank unless ``job``
    says otherwise; ``slow``: the one rank whose workers are pegged)."""
    def procs(tick: int, rng: random.Random) -> list[ProcessSample]:
        out: list[ProcessSample] = []
        for rank in range(n):
            if slow is None:
                cpu = job.get("worker_cpu", (94.0, 100.0))
            else:
                cpu = (95.0, 100.0) if rank == slow else (30.0, 45.0)
            procs = _job(
                rng, trainer_cpu=job.get("trainer_cpu", (25.0, 35.0)),  # type: ignore[arg-type]
                workers=job.get("workers", 4), worker_cpu=cpu,  # type: ignore[arg-type]
                trainer_pid=6000 + 100 * rank, card_ids=(f"nvidia:{rank}",),
            )
            # Launched as DDP ranks (torchrun sets WORLD_SIZE and RANK in each trainer).
            out += [p.model_copy(update={"world_size": n, "rank": rank})
                    if p.role == "trainer" else p for p in procs]
        return out
    return procs


def _straggler_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return [_card(0, rng.uniform(87, 94), 72.0, rng.uniform(0.80, 0.88)),
            _card(1, rng.uniform(26, 34), 72.0, rng.uniform(0.30, 0.36))]


def _collective_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    # Measured in an emulated 2-rank job: the waiting rank spins in all-reduce at 96 % util
    # and 41 % of cap; the slow rank computes at 96 % util and 82 % of cap.
    return [_card(0, rng.uniform(94, 98), 70.0, rng.uniform(0.38, 0.44)),
            _card(1, rng.uniform(94, 98), 70.0, rng.uniform(0.79, 0.85))]


def _collective_gpm_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    # GPM (NVIDIA profiling counters) shows it without power: SM activity is measured.
    waiting, slow = _collective_cards(tick, rng)
    return [
        dataclasses.replace(waiting, power_w=None, power_cap_w=None,
                            extras={"sm_active_pct": round(rng.uniform(10, 16), 1),
                                    "tensor_active_pct": round(rng.uniform(0, 2), 1)}),
        dataclasses.replace(slow, power_w=None, power_cap_w=None,
                            extras={"sm_active_pct": round(rng.uniform(72, 80), 1),
                                    "tensor_active_pct": round(rng.uniform(35, 45), 1)}),
    ]


def _stalled_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return [_card(0, 0.0, 71.0, rng.uniform(0.17, 0.19))]


def _stalled_job(tick: int, rng: random.Random) -> list[ProcessSample]:
    # A hung collective or a deadlock: the trainer blocks (0-2 % CPU), its workers have
    # filled their prefetch queues and sleep.
    procs = _job(rng, trainer_cpu=(0, 2), workers=4, worker_cpu=(0, 1))
    return [p.model_copy(update={"state": "sleeping"}) for p in procs]


def _contended_workers(tick: int, rng: random.Random) -> list[ProcessSample]:
    # Eight decoding workers on an 8-core host shared with another job: each gets 70-80 % of
    # a core and waits 15-25 % of the time in the run queue.
    return _job(rng, trainer_cpu=(20, 30), workers=8, worker_cpu=(70, 80),
                worker_delay=(15, 25))


def _contended_host(tick: int, rng: random.Random) -> HostSample:
    return _host(rng, (95, 100), (0.5, 2), count=8)


# --- phases every long run goes through: evaluation, checkpoints, remote peers, hangs -----------


def _counters(
    proc: ProcessSample, rng: random.Random, *, read: tuple[float, float] = (0.0, 0.0),
    write: tuple[float, float] = (0.0, 0.0), calls: tuple[float, float] = (0.0, 0.0),
    wakes: tuple[float, float] = (0.0, 0.0), **update: object,
) -> ProcessSample:
    """``proc`` with progress counters per second (`ProcessSample.rchar_per_s` and the rest)
    drawn from the given ranges."""
    figures = {
        "rchar_per_s": round(rng.uniform(*read)), "wchar_per_s": round(rng.uniform(*write)),
        "syscalls_per_s": round(rng.uniform(*calls), 1),
        "ctx_switches_per_s": round(rng.uniform(*wakes), 1),
    }
    return proc.model_copy(update={**figures, **update})


def _eval_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    # Forward passes only, each waiting for its batch: the card 1-4 % busy, VRAM held at 91 %.
    return [_card(0, rng.uniform(1, 4), 91.0, rng.uniform(0.16, 0.20))]


def _eval_job(tick: int, rng: random.Random) -> list[ProcessSample]:
    # 4 workers sleep on a remote fetch (a slow HTTP store): little CPU, but their reads and
    # wake-ups move; the trainer takes the batches (pipe reads) and runs the forward passes.
    out = []
    for p in _job(rng, trainer_cpu=(3, 6), workers=4, worker_cpu=(4, 8)):
        if p.role == "trainer":
            out.append(_counters(p, rng, read=(150e3, 250e3), write=(0, 200), calls=(28, 40),
                                 wakes=(25, 40), state="sleeping"))
        else:
            out.append(_counters(p, rng, read=(300e3, 420e3), write=(2e3, 4e3),
                                 calls=(60, 90), wakes=(30, 45), state="sleeping"))
    return out


def _checkpoint_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    return [_card(0, 0.0, 70.0, rng.uniform(0.17, 0.19))]


def _checkpoint_job(tick: int, rng: random.Random) -> list[ProcessSample]:
    # torch.save of 224 MiB through storage that takes 8 MiB/s: the trainer sits in disk wait
    # inside write(); its workers have filled their prefetch queues and sleep.
    out = []
    for p in _job(rng, trainer_cpu=(2, 6), workers=4, worker_cpu=(0, 1)):
        if p.role == "trainer":
            out.append(_counters(p, rng, read=(0, 100), write=(7.5e6, 8.5e6), calls=(7, 9),
                                 wakes=(8, 12), state="disk-sleep"))
        else:
            out.append(_counters(p, rng, wakes=(0, 0.4), state="sleeping"))
    return out


def _checkpoint_host(tick: int, rng: random.Random) -> HostSample:
    return _host(rng, (5, 10), (25, 35))


def _stuck_job(tick: int, rng: random.Random) -> list[ProcessSample]:
    # The same save on a file system that stopped answering: disk wait, not a byte written.
    out = []
    for p in _job(rng, trainer_cpu=(0, 1), workers=4, worker_cpu=(0, 1)):
        state = "disk-sleep" if p.role == "trainer" else "sleeping"
        out.append(_counters(p, rng, wakes=(0, 0.4), state=state))
    return out


def _remote_collective_cards(tick: int, rng: random.Random) -> list[FakeCard]:
    # One rank of a 2-node job: its card spins in all-reduce (busy 94-98 % at ~41 % of cap).
    return [_card(0, rng.uniform(94, 98), 70.0, rng.uniform(0.38, 0.44))]


def _remote_collective_job(tick: int, rng: random.Random) -> list[ProcessSample]:
    procs = _job(rng, trainer_cpu=(97, 100), workers=4, worker_cpu=(2, 6))
    return [p.model_copy(update={"world_size": 2, "rank": 1}) if p.role == "trainer" else p
            for p in procs]


_PHASES: tuple[Scenario, ...] = (
    Scenario(
        "eval_slow_fetch",
        "Evaluation: forward passes only, the card 1-4 % busy with VRAM held at 91 %, 4 "
        "workers at 4-8 % CPU sleeping on a remote fetch (their reads and wake-ups move): "
        "starving on the fetch (io-bound), never stalled.",
        Expectation("starving", "io-bound"), _eval_cards, _eval_job, _calm_host, seed=40,
        ticks=40,
    ),
    Scenario(
        "checkpoint_write",
        "A checkpoint: the card idle with VRAM held, the trainer in disk wait writing 8 MiB/s, "
        "its workers asleep, host iowait 25-35 %: starving (checkpoint), not io-bound, never "
        "stalled.",
        Expectation("starving", "checkpoint"), _checkpoint_cards, _checkpoint_job,
        _checkpoint_host, seed=41, ticks=40,
    ),
    Scenario(
        "checkpoint_stuck",
        "A save stuck on storage: the trainer in disk wait writing nothing, every counter flat: "
        "unknown (paused) until it has lasted 20 s, then stalled.",
        Expectation("stalled"), _checkpoint_cards, _stuck_job, _checkpoint_host, seed=42,
        ticks=40, change_at=20, before=Expectation("unknown", "paused"),
    ),
    Scenario(
        "collective_wait_remote",
        "One rank of a 2-node job (WORLD_SIZE=2), no peer card on this host: its card busy "
        "94-98 % at 38-44 % of cap, the trainer pegged spinning in a synchronise: "
        "collective-wait, never host-bound.",
        Expectation("starving", "collective-wait"), _remote_collective_cards,
        _remote_collective_job, _calm_host, seed=43,
    ),
)


_LIST: tuple[Scenario, ...] = (
    Scenario(
        "saturated_steady", "Utilisation 96-100 %, power 82-90 % of cap, VRAM steady.",
        Expectation("saturated"), _saturated_cards, _calm_job, _calm_host, seed=1,
    ),
    Scenario(
        "saturated_noisy",
        "Utilisation 82-100 % with an isolated dip every 9 s, power jittering 70-92 %.",
        Expectation("saturated"), _noisy_cards, _calm_job, _calm_host, seed=2, ticks=40,
    ),
    Scenario(
        "starving_input_bound",
        "Utilisation bursts then waits, power 25-40 %, 8 DataLoader workers pegged at ~97 %.",
        Expectation("starving", "input-bound"), _starving_cards, _pegged_workers, _input_host,
        seed=3,
    ),
    Scenario(
        "starving_io_bound",
        "Utilisation bursts then waits, workers mostly in disk-sleep, host iowait 30-45 %.",
        Expectation("starving", "io-bound"), _io_cards, _waiting_workers, _io_host, seed=4,
    ),
    Scenario(
        "starving_host_bound",
        "Utilisation 25-45 %, the trainer's main thread pegged, workers idle.",
        Expectation("starving", "host-bound"), _host_bound_cards, _pegged_trainer, _calm_host,
        seed=5,
    ),
    Scenario(
        "starving_no_process_data",
        "Utilisation bursts then waits, power low, and no process or host figures at all.",
        Expectation("starving", "unknown"), _starving_cards, seed=6,
    ),
    Scenario(
        "fragmenting",
        "VRAM 91-99 % going up and down every poll, utilisation 0-4 %.",
        Expectation("fragmenting"), _fragmenting_cards, _light_job, _calm_host, seed=7,
    ),
    Scenario(
        "imbalanced_4_cards",
        "DDP on 4 cards: three at 90-98 %, rank 3 at 25-35 % with its workers pegged.",
        Expectation("imbalanced", "straggler"), _imbalanced_cards, _ddp_ranks, _ddp_host,
        seed=8,
        expected_cards={
            0: Expectation("saturated"), 1: Expectation("saturated"),
            # The straggler's own badge: its pegged workers stay in its why.
            2: Expectation("saturated"), 3: Expectation("imbalanced", "straggler"),
        },
    ),
    Scenario(
        "idle", "No memory held, no utilisation, power at the floor, no processes.",
        Expectation("idle"), _idle_cards, seed=9,
    ),
    Scenario(
        "step_starving_to_saturated",
        "Input-bound for 20 s, then num_workers doubled: saturated from tick 20.",
        Expectation("saturated"), _step_cards, _step_procs, _input_host, seed=10, ticks=40,
        change_at=20, before=Expectation("starving", "input-bound"),
    ),
    Scenario(
        "step_saturated_to_io_bound",
        "Saturated for 20 s, then the dataset moves to slow storage: I/O-bound from tick 20.",
        Expectation("starving", "io-bound"), _step_back_cards, _step_back_procs,
        _step_back_host, seed=11, ticks=40, change_at=20, before=Expectation("saturated"),
    ),
    Scenario(
        "step_idle_to_saturated", "Idle for 15 s, then a job starts and saturates the card.",
        Expectation("saturated"), _start_cards, _start_procs, _calm_host, seed=12, ticks=35,
        change_at=15, before=Expectation("idle"),
    ),
    Scenario(
        "false_saturation",
        "GPU-Util 99-100 % but power only 28-32 % of cap; no host bottleneck: small kernels.",
        Expectation("starving", "light-kernels"), _false_busy_cards, _false_busy_procs,
        _calm_host, seed=13,
    ),
    Scenario(
        "amd_busy_reading_idle",
        "AMD GPU% reads 100 % on a card holding no memory at 8 % power: idle.",
        Expectation("idle"), _amd_quirk_cards, vendor="amd", tool="amd-smi", seed=14,
    ),
    Scenario(
        "saturated_no_power",
        "Cambricon MLU util 92-99 % and no power figure: judged on utilisation alone.",
        Expectation("saturated"), _no_power_cards, _calm_job, _calm_host, vendor="cambricon",
        tool="cnmon", seed=15,
    ),
    Scenario(
        "ascend_saturated_aicore",
        "Ascend AICore 72-79 % (busy for AICore), power 290-320 W with no cap reported.",
        Expectation("saturated"), _ascend_cards, _calm_job, _calm_host, vendor="ascend",
        tool="npu-smi", seed=16,
    ),
)

_PHASE_NOISE = tuple(
    Scenario(
        f"phase_noise_{n}_cards",
        f"DDP on {n} cards, every rank input-bound alike: utilisation 0/100/20/90/5 %, each card "
        "shifted by a poll; levels equal, so never imbalanced.",
        # 2 workers a rank on 8 cards keeps the recorded session small.
        Expectation("starving", "input-bound"), _phase_cards(n),
        _ranks(n, workers=4 if n < 8 else 2), _input_host,
        seed=20 + n, ticks=40,
    )
    for n in (2, 4, 8)
)

_ISSUE_11: tuple[Scenario, ...] = (
    *_PHASE_NOISE,
    Scenario(
        "straggler_2_cards",
        "DDP on 2 cards: rank 0 at 87-94 %, rank 1 at 26-34 % with its workers pegged, every poll.",
        Expectation("imbalanced", "straggler"), _straggler_cards, _ranks(2, slow=1), _ddp_host,
        seed=30,
        expected_cards={0: Expectation("saturated"), 1: Expectation("imbalanced", "straggler")},
    ),
    Scenario(
        "collective_wait",
        "DDP on 2 cards, both at 94-98 % util: rank 0 at 38-44 % of cap (waiting in all-reduce), "
        "rank 1 at 79-85 % (computing, the slow one).",
        Expectation("imbalanced", "straggler"), _collective_cards,
        _ranks(2, worker_cpu=(30.0, 45.0), trainer_cpu=(60.0, 80.0)), _ddp_host, seed=31,
        expected_cards={0: Expectation("starving", "collective-wait"),
                        1: Expectation("imbalanced", "straggler")},
    ),
    Scenario(
        "collective_wait_gpm",
        "The collective wait without power figures, seen in GPM SM activity: 10-16 % on the "
        "waiting rank, 72-80 % on the slow one.",
        Expectation("imbalanced", "straggler"), _collective_gpm_cards,
        _ranks(2, worker_cpu=(30.0, 45.0), trainer_cpu=(60.0, 80.0)), _ddp_host, seed=32,
        expected_cards={0: Expectation("starving", "collective-wait"),
                        1: Expectation("imbalanced", "straggler")},
    ),
    Scenario(
        "stalled",
        "VRAM held at 71 %, utilisation 0, the trainer and its workers at ~0 % CPU, no I/O: "
        "unknown (paused: nothing runs, not yet a stall) until it has lasted 20 s, then "
        "stalled.",
        Expectation("stalled"), _stalled_cards, _stalled_job, _calm_host, seed=33, ticks=40,
        change_at=20, before=Expectation("unknown", "paused"),
    ),
    Scenario(
        "starving_contended",
        "Utilisation bursts then waits; 8 workers at 70-80 % CPU each, queued 15-25 % of the time "
        "for a CPU on a full 8-core host: CPU-bound under contention.",
        Expectation("starving", "input-bound"), _starving_cards, _contended_workers,
        _contended_host, seed=34,
    ),
)

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (*_LIST, *_ISSUE_11, *_PHASES)}
