"""What a notice says: one plain line, and the webhook bodies (generic JSON, Slack, Feishu/Lark,
DingTalk). Pure.

The generic body is an interface (``payload_version``; keys only ever added). The chat formats
wrap the same line in the shape each incoming webhook expects.
"""

from __future__ import annotations

from typing import Any

from gpusat_tui.notify.decision import Notice
from gpusat_tui.text import clean

__all__ = ["PAYLOAD_VERSION", "WEBHOOK_FORMATS", "body", "headline", "payload"]

PAYLOAD_VERSION = 1
WEBHOOK_FORMATS = ("generic", "slack", "feishu", "dingtalk")


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def headline(notice: Notice, host: str, detail: str | None = None) -> str:
    """``gpusat-tui on node-7: the job is STARVING (input-bound) for 2 min: 41% data wait``."""
    who = f"gpusat-tui on {clean(host, 80)}"
    held = _duration(notice.t - notice.since)
    if notice.event == "recovered":
        # The cause says why an unknown verdict is a recovery (not-starving, no-job).
        cause = f" ({clean(notice.cause, 40)})" if notice.cause else ""
        text = f"{who}: the job is no longer {notice.problem.upper()}; now {notice.kind}" \
               f"{cause} for {held}"
    else:
        cause = f" ({clean(notice.cause, 40)})" if notice.cause else ""
        text = f"{who}: the job is {notice.problem.upper()}{cause} for {held}"
    if detail:
        text += f": {clean(detail, 200)}"
    if notice.suppressed:
        text += f" ({notice.suppressed} earlier turn{'s' if notice.suppressed > 1 else ''} " \
                "not sent: rate limit)"
    return text


def payload(notice: Notice, host: str, source: str, detail: str | None = None) -> dict[str, Any]:
    """The generic JSON body (``--webhook-format generic``)."""
    return {
        "payload_version": PAYLOAD_VERSION,
        "source": source,
        "host": host,
        "event": notice.event,
        "problem": notice.problem,
        "kind": notice.kind,
        "cause": notice.cause,
        "since": notice.since,
        "time": notice.t,
        "held_s": round(notice.t - notice.since, 3),
        "suppressed": notice.suppressed,
        "detail": detail,
        "text": headline(notice, host, detail),
    }


def body(generic: dict[str, Any], fmt: str) -> dict[str, Any]:
    """The body to POST in ``fmt`` (one of `WEBHOOK_FORMATS`), from the generic one."""
    text = str(generic["text"])
    if fmt == "slack":  # Slack incoming webhook
        return {"text": text}
    if fmt == "feishu":  # Feishu / Lark custom bot
        return {"msg_type": "text", "content": {"text": text}}
    if fmt == "dingtalk":  # DingTalk custom robot
        return {"msgtype": "text", "text": {"content": text}}
    return generic
