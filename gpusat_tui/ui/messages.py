"""Messages that go up from the polling worker to the app.

Attributes go down (the app sets its reactives, widgets read them); only these messages go up.
"""

from __future__ import annotations

from textual.message import Message

from gpusat_tui.model import Assessment, Frame


class FrameReceived(Message):
    """A new frame and its verdicts.

    ``can_replace``: when the terminal is slow and a newer frame is already queued, the older
    one is dropped rather than painted late; the worker has already put its figures in history.
    """

    def __init__(self, frame: Frame, assessment: Assessment) -> None:
        super().__init__()
        self.frame = frame
        self.assessment = assessment

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FrameReceived)


class SourceEnded(Message):
    """The source has no more frames (end of a replay) or failed; ``error`` says why."""

    def __init__(self, error: str | None = None) -> None:
        super().__init__()
        self.error = error
