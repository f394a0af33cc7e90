"""The probe's device side against a stand-in ``torch.cuda`` (no accelerator here: the real
device path is untested on real hardware). It must never initialise a device: only a backend
that reports itself initialised is ever asked for its current device or allocator."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import pytest

from gpusat_tui.probe import publish, timing
from gpusat_tui.probe.state import STATE

GIB = 2**30


class StandInCuda:
    def __init__(self, initialised: bool) -> None:
        self.initialised = initialised
        self.calls: list[Any] = []

    def is_initialized(self) -> bool:
        return self.initialised

    def current_device(self) -> int:
        self.calls.append("current_device")
        return 3

    def memory_stats(self, index: int) -> dict[str, int]:
        self.calls.append(("memory_stats", index))
        return {"allocated_bytes.all.current": 2 * GIB, "reserved_bytes.all.current": 6 * GIB,
                "inactive_split_bytes.all.current": GIB, "num_alloc_retries": 4, "num_ooms": 1}


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Any:
    def make(initialised: bool) -> StandInCuda:
        torch = ModuleType("torch")
        cuda = StandInCuda(initialised)
        torch.cuda = cuda  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "torch", torch)
        monkeypatch.setattr(STATE, "device_type", None)
        monkeypatch.setattr(STATE, "device_index", None)
        return cuda
    return make


def test_an_uninitialised_device_is_never_touched(stand_in: Any) -> None:
    cuda = stand_in(False)
    timing.device_from_backends()
    assert publish.read_alloc() is None
    assert cuda.calls == [] and STATE.device_index is None


def test_an_initialised_device_gives_its_index_and_allocator(stand_in: Any) -> None:
    cuda = stand_in(True)
    timing.device_from_backends()
    assert (STATE.device_type, STATE.device_index) == ("cuda", 3)
    assert publish.read_alloc() == {
        "allocated_bytes": 2 * GIB, "reserved_bytes": 6 * GIB, "inactive_split_bytes": GIB,
        "alloc_retries": 4, "ooms": 1}
    assert cuda.calls == ["current_device", ("memory_stats", 3)]
