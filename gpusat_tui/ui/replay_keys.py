"""The keys that steer a replay (speed, seek, start, end): offered only where the source is one.

One action, ``replay(key, seconds)``, for all of them: the footer lists the bindings, and the
app never learns the replay's class (`sources.replay_controls` finds it, through a recording
wrapper). Cost: a key named here but not bound, or bound but not named, does nothing.
"""

from __future__ import annotations

from gpusat_tui.sources import Replayable

#: The action of every replay key (offered only on a replay: hidden from the footer otherwise).
REPLAY_ACTION = "replay"


def steer(replay: Replayable | None, key: str, seconds: float = 0.0) -> None:
    """Do ``key`` (faster, slower, seek, jump_start, jump_end; ``seconds``: how far a seek
    goes, back where negative) on ``replay``; nothing without a replay."""
    if replay is None:
        return
    if key == "faster":
        replay.speed_up()
    elif key == "slower":
        replay.slow_down()
    elif key == "seek":
        replay.seek(float(seconds))
    elif key == "jump_start":
        replay.jump_start()
    elif key == "jump_end":
        replay.jump_end()
