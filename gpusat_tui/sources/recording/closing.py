"""``with``-block support for the sources' file holders (`Recorder`, `FrameReader`)."""

from __future__ import annotations

from types import TracebackType
from typing import Self

__all__ = ["ClosedOnExit"]


class ClosedOnExit:
    """Mixin: ``with obj:`` gives ``obj`` and calls ``obj.close()`` however the block ends.

    The subclass's ``close`` must be safe to call twice: an explicit close inside the block is
    followed by this one. Exceptions are never swallowed.
    """

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
