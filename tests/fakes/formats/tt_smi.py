"""Fake Tenstorrent ``tt-smi -s`` output, shaped like the public fragments.

UNTESTED against a full real snapshot (none is public): the keys and their string values with a
leading space follow samples/smi/tenstorrent/tt-smi-s-p300c-1dev-trimmed-string-values-...txt,
the ``host_info``/``host_sw_vers`` blocks the p150a fragment. The snapshot has no utilisation and
no device memory, so neither is rendered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tests.fakes import FakeCard, FakeProcess
from tests.fakes.formats._common import respond


def _s(value: float | None) -> str | None:
    return None if value is None else f" {value:.1f}"


def render(cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()) -> str:
    """``tt-smi -s`` for these chips."""
    snapshot = {
        "time": "2026-12-01T10:00:00.000000",
        "host_info": {"OS": "Linux", "Driver": "TT-KMD 2.3.0"},
        "host_sw_vers": {"tt_smi": "3.0.20", "pyluwen": "0.7.3"},
        "device_info": [
            {
                "board_info": {"board_type": c.name, "bus_id": f"0000:{4 + c.index:02x}:00.0",
                               "coords": "N/A"},
                "telemetry": {"voltage": "0.72", "current": " 23.0", "power": _s(c.power_w),
                              "aiclk": " 800", "asic_temperature": _s(c.temp_c),
                              "fan_speed": " 38", "heartbeat": "11540"},
                "smbus_telem": {"BOARD_POWER_LIMIT": "0x226", "TT_FLASH_VERSION": None},
            }
            for c in cards
        ],
    }
    return json.dumps(snapshot, indent=4) + "\n"


def render_for_args(
    args: Sequence[str], cards: Sequence[FakeCard], processes: Sequence[FakeProcess] = ()
) -> str:
    """The snapshot for ``-s``; anything else gets a usage complaint."""
    return respond(args, {("-s",): lambda: render(cards, processes)},
                   "usage: tt-smi [-h] [-s] [-ls] ...\ntt-smi: error: unrecognized arguments\n")
