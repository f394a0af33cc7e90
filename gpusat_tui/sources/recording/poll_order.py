"""Frames placed in the order they were polled where the recorded clock stepped back.

A host whose clock is stepped back (NTP, a VM restored, a hand-set date) writes frames whose
``t`` goes back while their ``seq`` (the poll counter) goes on. `report` and replay read such a
recording in ``seq`` order and place each frame that steps back one interval per ``seq`` step
(at most ``max_steps``) after the frame before; every later frame moves by the same amount. So
durations never go negative, a replay keeps its pace, and the verdict tracker (which treats time
going back as a seek) keeps its window. Cost: a frame's ``t`` read back is then the placed time,
not the host's clock (the reader's note says the clock went back).
"""

from __future__ import annotations

from gpusat_tui.model import Frame

__all__ = ["PollOrder"]


class PollOrder:
    """Places frames read in file (seq) order on a clock that never goes back."""

    def __init__(self, max_steps: float) -> None:
        self.max_steps = max(1, int(max_steps))
        #: Seconds added to every frame's recorded ``t`` from the last step back on.
        self.shift = 0.0
        self._prev: tuple[float, int] | None = None
        self._anchor: float | None = None

    @property
    def stepped(self) -> bool:
        """Whether a step back has been met (frames are being moved)."""
        return self.shift != 0.0

    def restart(self, anchor: float | None = None) -> None:
        """After a seek: the frame before is unknown. ``anchor``: the time the next frame is
        placed at (a seek by poll count in a stepped recording); None: its own ``t`` again."""
        self._prev = None
        self._anchor = anchor
        if anchor is None:
            self.shift = 0.0

    def place(self, frame: Frame, interval: float) -> Frame:
        """``frame`` with its ``t`` placed (the same object when nothing moves)."""
        if self._anchor is not None:
            self.shift, self._anchor = self._anchor - frame.t, None
        prev = self._prev
        if prev is not None and frame.t + self.shift < prev[0]:
            steps = min(max(1, frame.seq - prev[1]), self.max_steps)
            self.shift = prev[0] + steps * interval - frame.t
        placed = frame.t + self.shift
        self._prev = (placed, frame.seq)
        if placed == frame.t:
            return frame
        return frame.model_copy(update={"t": placed})
