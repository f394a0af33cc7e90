"""The notifier a monitor runs: the pure decision (`decision`) wired to the outputs.

Each poll's job status goes to `Notifier.observe`; the notices due go to the webhooks (queued
for their own thread: `webhook`), to the terminal (bytes from `terminal`, written by the
caller's function) and to a line printer. Nothing here waits on the network.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from gpusat_tui.model import Assessment, Frame
from gpusat_tui.notify.decision import NO_JOB, Notice, NotifyPolicy, TurnWatcher
from gpusat_tui.notify.message import body, headline, payload
from gpusat_tui.notify.options import NotifyOptions
from gpusat_tui.notify.status_file import JobStatus, StatusFileWriter, summarise
from gpusat_tui.notify.terminal import in_tmux, sequences
from gpusat_tui.notify.webhook import EXIT_WAIT_S, Delivery, WebhookSender, close_all
from gpusat_tui.text import clean

__all__ = ["Notifier", "detail_of", "job_gone", "notifier_from_options", "publish_poll"]


def publish_poll(frame: Frame, assessment: Assessment, status_file: StatusFileWriter,
                 notifier: Notifier | None) -> None:
    """One poll's job status to the status file and the notifier (the dashboard, ``check
    --watch`` and ``export`` alike). A poll with no job at all (`job_gone`: no tool, no probed
    trainer) leaves the file alone, so ``status`` says "–" once it ages, not ``UNKNOWN``; the
    notifier still hears it (the job's end is a recovery)."""
    gone = job_gone(frame)
    status = summarise(frame, assessment) if gone else status_file.publish(frame, assessment)
    if notifier is not None:
        notifier.observe(frame.t, status, gone=gone)


def job_gone(frame: Frame) -> bool:
    """No card, no trainer (probed, or found by the process census) and no tool error in this
    poll: with no accelerator tool, the job has ended (a tool that fails says so in
    ``errors``: not a job gone)."""
    return (not frame.cards and not frame.probes and not frame.errors
            and not any(p.role == "trainer" for p in frame.processes))


def detail_of(status: JobStatus) -> str | None:
    """The figure that says most about the job's state, for the notice's text."""
    if status.kind == "starving" and status.data_wait_pct is not None:
        return f"{status.data_wait_pct:.0f}% data wait"
    if status.lagging:
        return "card " + ", ".join(clean(c, 40) for c in status.lagging[:4])
    return clean(status.headline, 200) if status.headline else None


class Notifier:
    """Turns + hold + rate limit (`TurnWatcher`), then every output configured: ``lines``
    gets each notice's text and its generic webhook body."""

    def __init__(
        self, policy: NotifyPolicy, *, host: str, source: str,
        webhooks: Sequence[tuple[WebhookSender, str]] = (),
        terminal: Callable[[str], None] | None = None, terminal_mode: str = "off",
        lines: Callable[[str, dict[str, Any]], None] | None = None, tmux: bool | None = None,
        prog: str = "gpusat-tui",
    ) -> None:
        self.watcher = TurnWatcher(policy)
        self.host = host
        self.source = source
        self.webhooks = list(webhooks)
        self.terminal = terminal
        self.terminal_mode = terminal_mode
        self.lines = lines
        self.tmux = in_tmux() if tmux is None else tmux
        self.sent: list[Notice] = []
        self.prog = prog
        #: Notices the webhooks were left with at `close`.
        self.unsent = 0

    def observe(self, t: float, status: JobStatus, *, gone: bool = False) -> list[Notice]:
        """Fold in one poll's status; ``gone``: the job ended (`job_gone`), whatever the
        window's verdict still says: its problem is over."""
        kind, cause = ("unknown", NO_JOB) if gone else (status.kind, status.cause)
        notices = self.watcher.observe(t, kind, cause)
        for notice in notices:
            detail = detail_of(status)
            generic = payload(notice, self.host, self.source, detail)
            for sender, fmt in self.webhooks:
                sender.send(body(generic, fmt))
            text = headline(notice, self.host, detail)
            if self.terminal is not None and self.terminal_mode != "off":
                self.terminal(sequences("gpusat-tui", text, self.terminal_mode, self.tmux))
            if self.lines is not None:
                self.lines(text, generic)
            self.sent.append(notice)
        return notices

    def close(self, timeout_s: float = EXIT_WAIT_S) -> None:
        """Let the webhooks send what is queued, for at most ``timeout_s`` in all; says on
        stderr (one line) how many notices were left unsent (`unsent`)."""
        self.unsent = close_all([sender for sender, _fmt in self.webhooks], timeout_s)
        if self.unsent:
            print(f"{self.prog}: {self.unsent} webhook notice(s) not sent: no answer within "
                  f"{timeout_s:g} s of stopping", file=sys.stderr, flush=True)


def _say_failure(prog: str) -> Callable[[Delivery], None]:
    def report(result: Delivery) -> None:
        if not result.ok:
            print(f"{prog}: webhook not delivered after {result.attempts} attempt(s): "
                  f"{clean(result.error, 200)}", file=sys.stderr, flush=True)
    return report


def notifier_from_options(
    options: NotifyOptions, *, host: str, source: str, prog: str,
    terminal: Callable[[str], None] | None = None,
    lines: Callable[[str, dict[str, Any]], None] | None = None,
) -> Notifier | None:
    """The notifier the options ask for, or None when nothing would be notified."""
    urls = list(options.webhooks)
    mode = options.terminal if terminal is not None else "off"
    if not urls and mode == "off" and lines is None:
        return None
    policy = NotifyPolicy(hold_s=options.hold_s, min_gap_s=options.every_s)
    fmt = options.webhook_format
    senders = [(WebhookSender(url, on_result=_say_failure(prog)), fmt) for url in urls]
    return Notifier(policy, host=host, source=source, webhooks=senders, terminal=terminal,
                    terminal_mode=mode, lines=lines, prog=prog)
