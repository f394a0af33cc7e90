"""What a cause rule reads (`CauseContext`) and answers (`Finding`), and the causes there are.

Apart from the rules (`cause_rules`) and the engine that orders their findings (`causes`), so
the probe's own rules (`probe_rules`) speak the same language without importing either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gpusat_tui.analysis.evidence.host_evidence import HostEvidence
from gpusat_tui.analysis.thresholds import Thresholds

__all__ = ["STARVING_CAUSES", "Basis", "CauseContext", "CauseRule", "Finding"]

#: Causes a ``starving`` verdict can carry.
STARVING_CAUSES: tuple[str, ...] = (
    "input-bound", "io-bound", "checkpoint", "host-bound", "light-kernels", "collective-wait",
    "cpu-quota", "unknown",
)

Basis = Literal["measured", "inferred"]


@dataclass(frozen=True)
class CauseContext:
    """What a cause rule reads besides the thresholds."""

    ev: HostEvidence
    #: The card's utilisation is steadily high while its power is low.
    light: bool
    #: The vendor's name for its utilisation figure.
    label: str
    #: The card is busy most of the window (utilisation, or SM activity where given, at or
    #: above the busy line): it is not waiting on the host.
    busy: bool = False
    #: The world size the probe in the trainer read (None: no probe, or not launched so).
    probe_world_size: int | None = None

    @property
    def distributed(self) -> bool:
        return self.ev.distributed or (self.probe_world_size or 0) > 1

    def world_words(self) -> str:
        """``WORLD_SIZE=2 in the trainer's environment``: what shows the job distributed."""
        ev = self.ev
        if (self.probe_world_size or 0) > 1:
            return f"world size {self.probe_world_size}, read by the probe in the trainer"
        if ev.world_size is not None:
            return f"world size {ev.world_size} in the trainer's environment"
        return f"rank {ev.rank} set in the trainer's environment"


@dataclass
class Finding:
    """One rule's answer: a cause, the figures that show it, and what to try."""

    cause: str
    why: list[str]
    advice: list[str]
    confidence: float
    basis: Basis = "inferred"
    #: Said at the end of ``why``: where the figures came from.
    source: str = "inferred from the host side (process CPU and state figures)"


CauseRule = Callable[[CauseContext, Thresholds], "Finding | None"]
