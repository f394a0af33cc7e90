"""What the app's one source worker does with each frame: history, verdicts, the followed job,
the notifications, then one message up.

History and verdicts come first, in the worker: a repaint may be dropped (`FrameReceived`
replaces a stale one on a slow terminal), a frame never is. Cost: the verdicts are judged for
the focus asked when the frame arrives, not when it is painted.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.message import Message

from gpusat_tui.model import Assessment, Frame
from gpusat_tui.sources import FrameSource
from gpusat_tui.ui.followed_job import JobFollower
from gpusat_tui.ui.guarded_tracker import GuardedTracker
from gpusat_tui.ui.messages import FrameReceived, SourceEnded
from gpusat_tui.ui.state import DashboardState


class FrameFeed:
    """Reads ``source`` to its end and posts `FrameReceived` per frame, then `SourceEnded`.

    ``focus``: the verdict keys on screen now; ``tell``: hands each frame's verdicts on (the
    status file, the notifications); ``clock``: when each frame arrived (`last_arrival`).
    """

    def __init__(
        self,
        source: FrameSource,
        *,
        state: DashboardState,
        tracker: GuardedTracker,
        follower: JobFollower,
        focus: Callable[[], set[str]],
        tell: Callable[[Frame, Assessment], None],
        clock: Callable[[], float],
        replay: bool,
    ) -> None:
        self.source = source
        self.state = state
        self.tracker = tracker
        self.follower = follower
        self.focus = focus
        self.tell = tell
        self.clock = clock
        self.replay = replay
        #: When the newest frame arrived (None: none yet): the status line's "no frame for".
        self.last_arrival: float | None = None
        self._generation: object = None

    async def run(self, post: Callable[[Message], object]) -> None:
        """The worker's body: a source bug ends on screen (`SourceEnded`), not as a traceback."""
        try:
            async for whole in self.source.frames():
                self._restart_on_seek()
                frame = self.follower.own_frame(whole)
                self.state.push(frame)
                assessment = self.tracker.push(frame, self.focus())
                self.follower.update(frame, assessment.job)
                self.tell(frame, assessment)
                self.last_arrival = self.clock()
                post(FrameReceived(frame, assessment))
        except Exception as exc:
            post(SourceEnded(f"source failed: {type(exc).__name__}: {exc}"))
        else:
            post(SourceEnded("end of recording" if self.replay else "ended"))

    def _restart_on_seek(self) -> None:
        """A replay seek bumps ``generation``: old points and verdict windows would lie about
        the new position, so both restart with the first frame after it."""
        generation = getattr(self.source, "generation", None)
        if generation != self._generation:
            if self._generation is not None:
                self.state.reset()
                self.tracker.reset()
                self.follower.restart()
            self._generation = generation
