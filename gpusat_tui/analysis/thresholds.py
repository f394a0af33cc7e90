"""Every line the verdict engine draws, in one place (`Thresholds`), and per-vendor overrides.

Kept apart from the rules so that tuning a line never means reading a rule, and so that
``check``/``report`` can pass other thresholds without touching the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

__all__ = ["DEFAULT_THRESHOLDS", "Thresholds"]


def _default_vendor_overrides() -> dict[str, dict[str, float]]:
    # Ascend's AICore % measures the cube units only (vector work runs on AIVector), so a busy
    # training step rarely reads above the 70s; and an idle 910 already shows ~3 GiB of its
    # 64 GiB HBM in use (firmware), hence a higher "holds memory" line.
    # NVIDIA GPU-Util, AMD GPU%, Hygon HCU% and Cambricon MLU util are all duty cycles (share of
    # time any kernel ran): the defaults, with power against cap as the deciding signal.
    return {"ascend": {"busy_util_pct": 70.0, "held_vram_pct": 10.0}}


@dataclass(frozen=True)
class Thresholds:
    """Every line the verdict engine draws, in one place. Percent figures are 0-100."""

    #: Fresh readings of a card needed before anything but ``unknown`` is said.
    min_samples: int = 3
    #: Utilisation median at or above this is "busy".
    busy_util_pct: float = 80.0
    #: Power/cap median at or above this is what full compute draws.
    saturated_power_frac: float = 0.70
    #: Below this, busy utilisation is not believed to be saturation.
    low_power_frac: float = 0.50
    #: Utilisation at or below this is "no utilisation".
    idle_util_pct: float = 5.0
    #: Power/cap below this on a card holding no memory is idle whatever utilisation says.
    idle_power_frac: float = 0.25
    #: A card "holds VRAM" at or above this percentage (or this many MiB when no % is known).
    held_vram_pct: float = 5.0
    held_vram_mib: float = 1024.0
    #: Utilisation max - min at or above this is "swinging".
    swing_util_pct: float = 40.0
    #: VRAM max - min (percent of total) below this is "steady".
    steady_vram_pct: float = 5.0
    #: Fragmenting: VRAM at or above this, utilisation at or below ``fragment_util_pct``, and
    #: used memory moving by at least ``fragment_swing_pct`` of the total.
    fragment_vram_pct: float = 90.0
    fragment_util_pct: float = 10.0
    fragment_swing_pct: float = 2.0
    #: A DataLoader worker at or above this % of one core is pegged.
    worker_pegged_pct: float = 85.0
    #: The trainer at or above this % of one core is pegged.
    trainer_pegged_pct: float = 90.0
    #: The pin-memory thread at or above this % is pegged.
    pin_pegged_pct: float = 90.0
    #: Host iowait at or above this is I/O-bound.
    iowait_high_pct: float = 20.0
    #: Share of the input pipeline's samples (the DataLoader workers; the trainer when it has
    #: none) in disk-sleep (D) at or above this is I/O-bound. The trainer's own disk waits
    #: beside its workers are its writes (``checkpoint_write_bps``), not the input's.
    dstate_frac: float = 0.30
    #: The trainer writing at least this many bytes/s (``wchar``: every write system call),
    #: or in disk-sleep in ``dstate_frac`` of polls while DataLoader workers do the reading,
    #: while its card waits: a checkpoint or a save, not the input pipeline.
    checkpoint_write_bps: float = 1024.0 * 1024.0
    #: Host CPU at or above this leaves no room for more workers.
    host_busy_pct: float = 85.0
    #: A worker (or the trainer) whose main thread waits for a CPU (runnable, not running:
    #: the schedstat run delay) this share of wall time or more is queued: the host is
    #: oversubscribed. CPU % + run delay % is what the process asked for; at or above the
    #: pegged line it is CPU-bound even when contention holds its CPU % below that line.
    run_delay_high_pct: float = 10.0
    #: A job whose cgroup CPU quota throttled it in at least this share of its periods
    #: (percent, ``cpu.stat``) is held back by its quota (cause ``cpu-quota``).
    quota_throttled_pct: float = 20.0
    #: Within one kind, a new cause is shown only once the recent window has said it for
    #: ``hold_polls`` consecutive polls spanning at least this many seconds: cause evidence
    #: (which rule fires first) is noisier than the kind, and at a 0.5 s poll two polls are
    #: one second. What it costs: a real change of cause shows this much later.
    cause_hold_s: float = 10.0
    #: Imbalanced: a card whose level (median over the window) is at most ``imbalance_ratio``
    #: of the leader's and at least ``imbalance_gap_pct`` points below it (utilisation or SM
    #: activity; ``imbalance_power_gap_pct`` points of power share of cap), with the gap holding
    #: in every third of the window, not at one instant (see `imbalance`).
    imbalance_gap_pct: float = 35.0
    imbalance_ratio: float = 0.60
    imbalance_power_gap_pct: float = 30.0
    #: When a card of the group swings (span >= ``swing_util_pct``), imbalance needs at least
    #: this many seconds of evidence: a few polls of two swinging cards always look uneven.
    imbalance_swing_min_s: float = 10.0
    #: Stalled: VRAM held, utilisation at or below ``idle_util_pct``, the trainer and its
    #: workers at or below ``stall_cpu_pct`` CPU and making no progress (below, and no batch
    #: counted by a probe), for at least ``stall_min_s`` (shorter pauses, such as the few
    #: seconds between epochs, are not a stall: until then the card reads ``unknown``,
    #: ``paused``). A process in disk wait is progress unless its counters show it is not.
    stall_cpu_pct: float = 10.0
    stall_min_s: float = 20.0
    #: Progress without a probe (Linux, ``/proc/<pid>/io`` and ``schedstat``): the trainer and
    #: its workers together moving at least ``progress_io_bps`` bytes/s through read/write
    #: calls or making ``progress_syscalls_per_s`` such calls, or one of them switching its
    #: main thread in ``progress_switches_per_s`` times a second, are working whatever their
    #: CPU says (a worker asleep on a socket wakes for every answer; ``recv`` counts no bytes,
    #: only the wake-up). A hung job's threads sleep on timeouts of seconds (a DataLoader's:
    #: 5 s).
    progress_io_bps: float = 16.0 * 1024.0
    progress_syscalls_per_s: float = 10.0
    progress_switches_per_s: float = 10.0
    #: How far back the duration rules (imbalance persistence, stall duration) look when the
    #: tracker judges its short recent window (see `tracker`); at least ``stall_min_s`` is used.
    history_s: float = 20.0
    # --- measured in the trainer by the probe (``gpusat-tui run``) ---------------
    #: Data wait (share of wall time blocked in next(dataloader)) at or above this is
    #: starving whatever the utilisation says (the TensorFlow profiler's "highly input-bound").
    data_wait_starving_pct: float = 20.0
    #: Below this the loop is not waiting on data ("some waiting for batches" from here up).
    data_wait_low_pct: float = 5.0
    #: A rank whose data wait is at least this many points above the other ranks' median (and
    #: itself starving) is the straggler; or whose step is this many times theirs.
    straggler_wait_gap_pct: float = 15.0
    straggler_step_ratio: float = 1.5
    #: Measured fragmenting: reserved at least this many times allocated, with allocation
    #: retries in the window or inactive split bytes growing to this share of reserved.
    frag_reserved_ratio: float = 1.5
    frag_inactive_split_frac: float = 0.10
    #: A probe publication older than this is not evidence (the process stopped publishing).
    probe_max_age_s: float = 5.0
    #: NVIDIA GPM SM activity (share of SMs busy; NVIDIA's profiling guidance): at or above
    #: this is necessary for ``saturated`` where the card gives it; below
    #: ``sm_active_low_pct`` the work is likely ineffective (small kernels, or a rank waiting
    #: in a collective) whatever GPU-Util says.
    sm_active_busy_pct: float = 80.0
    sm_active_low_pct: float = 50.0
    #: A card is "throttled" when a limiting clock-event reason (power cap, thermal, hardware
    #: slowdown, sync boost) is active in at least this share of its fresh readings.
    throttled_frac: float = 0.5
    #: Per-vendor replacements of the fields above, where the vendor's figures mean something
    #: else (see `_default_vendor_overrides`).
    vendor_overrides: Mapping[str, Mapping[str, float]] = field(
        default_factory=_default_vendor_overrides, hash=False
    )

    def __post_init__(self) -> None:
        names = {f.name for f in fields(self)} - {"vendor_overrides"}
        for vendor, overrides in self.vendor_overrides.items():
            unknown = set(overrides) - names
            if unknown:
                raise ValueError(f"unknown threshold(s) for {vendor}: {', '.join(sorted(unknown))}")
        if self.min_samples < 1:
            raise ValueError("min_samples must be at least 1")

    def for_vendor(self, vendor: str | None) -> Thresholds:
        """These thresholds with the vendor's overrides applied (itself when there are none)."""
        overrides = self.vendor_overrides.get(vendor or "")
        if not overrides:
            return self
        # Names checked in __post_init__; the values are figures of float fields.
        changes: dict[str, Any] = dict(overrides)
        return replace(self, **changes)


DEFAULT_THRESHOLDS = Thresholds()
