"""The probe: measured figures from inside a training process (standard library only).

``gpusat-tui run -- python train.py`` turns it on through the environment; in code::

    import gpusat_tui.probe
    gpusat_tui.probe.enable()

Importing this package does nothing by itself. `enable()` installs an import hook that times
torch's DataLoader iterators (``_BaseDataLoaderIter.__next__``) and counts optimizer steps
(``torch.optim.optimizer.register_optimizer_step_post_hook``); the first batch or step starts
one daemon thread that publishes the figures about once a second to a small file the monitor
reads (`layout` documents it) and, between publications, samples the training thread's stack
about 20 times a second (`sampler`: phases of the step, the hottest user lines, how long the
stack has stood still). Setting ``GPUSAT_PROBE=0`` turns it off; ``GPUSAT_PROBE_STACK_HZ=0``
turns off the sampling alone.
"""

from __future__ import annotations

from .layout import LAYOUT_VERSION, default_dirs

TYPE_CHECKING = False  # not typing's: importing typing costs a status bar call ~5 ms
if TYPE_CHECKING:
    from typing import Any

    from .core import is_enabled
    from .publish import snapshot
    from .state import disable

__all__ = ["LAYOUT_VERSION", "default_dirs", "disable", "enable", "is_enabled", "snapshot"]

#: Loaded on first use (PEP 562): a monitor that only reads `layout` (``gpusat-tui status``,
#: run by a status bar every few seconds) does not pay for the hooks' imports.
_LAZY = {"disable": "state", "install": "core", "is_enabled": "core", "snapshot": "publish"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def enable() -> bool:
    """Turn the probe on in this process (idempotent); False when ``GPUSAT_PROBE=0``.

    Never raises: a probe that cannot install itself says so in one stderr line.
    """
    from .core import install
    from .state import disable

    try:
        return install()
    except Exception as exc:  # pragma: no cover - defensive: the probe never fails the job
        disable(f"could not install ({type(exc).__name__}: {exc})")
        return False
