"""What the command line asks of the notifications, typed (see `commands.options`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

WebhookFormat = Literal["generic", "slack", "feishu", "dingtalk"]
TerminalNotify = Literal["all", "bell", "off"]


@dataclass(frozen=True)
class NotifyOptions:
    """When the job's verdict turns and holds: where to say so (`gpusat_tui.notify`)."""

    #: A turn (or the recovery) must hold this long before it is told.
    hold_s: float = 60.0
    #: At most one notice per this long.
    every_s: float = 600.0
    webhooks: tuple[str, ...] = ()
    webhook_format: WebhookFormat = "generic"
    #: The dashboard's bell and desktop notification through the terminal.
    terminal: TerminalNotify = "off"
