"""Notifications when the job's verdict turns: the decision (pure: turn, hold, rate limit,
recovery), what a notice says, the terminal's sequences, and the webhook against real local
HTTP servers on 127.0.0.1 (one that answers, fails, hangs, or refuses), end to end through
``check --watch``."""

from __future__ import annotations

import http.server
import json
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gpusat_tui.notify.decision import Notice, NotifyPolicy, TurnWatcher, problem_of
from gpusat_tui.notify.message import body, headline, payload
from gpusat_tui.notify.notifier import Notifier
from gpusat_tui.notify.status_file import JobStatus
from gpusat_tui.notify.terminal import sequences
from gpusat_tui.notify.webhook import WebhookSender, check_url
from tests.prom.hosts import REPO, fake_host

POLICY = NotifyPolicy(hold_s=60.0, min_gap_s=600.0)


def feed(watcher: TurnWatcher, kinds: list[tuple[float, str]],
         cause: str | None = None) -> list[Notice]:
    out: list[Notice] = []
    for t, kind in kinds:
        out += watcher.observe(t, kind, cause)
    return out


def every(start: float, end: float, kind: str, step: float = 10.0) -> list[tuple[float, str]]:
    n = int((end - start) / step)
    return [(start + i * step, kind) for i in range(n)]


# --- the decision (pure) --------------------------------------------------------------------


def test_a_turn_is_announced_once_it_has_held() -> None:
    watcher = TurnWatcher(POLICY)
    assert feed(watcher, every(0, 100, "saturated")) == []
    assert feed(watcher, every(100, 150, "starving")) == []  # 50 s: not held yet
    notices = feed(watcher, every(150, 300, "starving"), cause="input-bound")
    assert len(notices) == 1
    n = notices[0]
    assert (n.event, n.problem, n.kind, n.cause, n.since, n.t) == (
        "turned", "starving", "starving", "input-bound", 100.0, 160.0)


def test_a_flicker_shorter_than_the_hold_says_nothing() -> None:
    watcher = TurnWatcher(POLICY)
    kinds = []
    for k in range(20):  # 30 s starving, 30 s saturated, over and over
        kinds += every(k * 60, k * 60 + 30, "starving") + every(k * 60 + 30, k * 60 + 60,
                                                              "saturated")
    assert feed(watcher, kinds) == []


def test_recovery_is_announced_once_it_has_held() -> None:
    watcher = TurnWatcher(NotifyPolicy(hold_s=60.0, min_gap_s=0.0))
    feed(watcher, every(0, 100, "stalled"))
    assert watcher.announced == "stalled"
    assert feed(watcher, every(100, 150, "saturated")) == []
    notices = feed(watcher, every(150, 200, "saturated"))
    assert [(n.event, n.problem, n.kind) for n in notices] == [
        ("recovered", "stalled", "saturated")]
    no_recovery = TurnWatcher(NotifyPolicy(hold_s=60.0, min_gap_s=0.0, recovery=False))
    feed(no_recovery, every(0, 100, "stalled"))
    assert feed(no_recovery, every(100, 300, "saturated")) == []
    assert no_recovery.announced is None  # a later stall is announced again
    assert len(feed(no_recovery, every(300, 400, "stalled"))) == 1


def test_unknown_is_no_evidence_either_way() -> None:
    watcher = TurnWatcher(NotifyPolicy(hold_s=60.0, min_gap_s=0.0))
    feed(watcher, every(0, 100, "starving"))
    assert feed(watcher, every(100, 400, "unknown")) == []  # no recovery from not knowing
    assert watcher.announced == "starving"


def test_the_rate_limit_defers_and_counts_what_it_held_back() -> None:
    watcher = TurnWatcher(NotifyPolicy(hold_s=60.0, min_gap_s=600.0))
    first = feed(watcher, every(0, 100, "starving"))
    assert [n.t for n in first] == [60.0]
    # Recovered at 100 and held, a stall at 300 and held: both inside the 10-minute gap.
    quiet = feed(watcher, every(100, 300, "saturated") + every(300, 660, "stalled"))
    assert quiet == []
    later = feed(watcher, every(660, 700, "stalled"))
    assert len(later) == 1
    n = later[0]
    assert (n.event, n.problem, n.since, n.t) == ("turned", "stalled", 300.0, 660.0)
    assert n.suppressed == 1  # the recovery at 100 never went out


def test_a_problem_gone_before_the_gap_ends_is_never_sent_late() -> None:
    watcher = TurnWatcher(NotifyPolicy(hold_s=60.0, min_gap_s=600.0))
    feed(watcher, every(0, 100, "stalled"))  # announced at 60
    out = feed(watcher, every(100, 200, "saturated") + every(200, 300, "stalled")
               + every(300, 700, "stalled"))
    assert out == []  # back to the announced state before the gap ended: nothing to say


def test_imbalanced_is_a_straggler_and_idle_is_fine() -> None:
    assert problem_of("imbalanced", "straggler") == "straggler"
    assert problem_of("imbalanced", "throttled") == "straggler"
    assert problem_of("fragmenting") == "fragmenting"
    assert problem_of("idle") is None and problem_of("saturated") is None


# --- what it says ---------------------------------------------------------------------------


NOTICE = Notice("turned", "starving", "starving", "input-bound", since=100.0, t=220.0)


def test_the_headline_and_the_bodies() -> None:
    text = headline(NOTICE, "node-7", "41% data wait")
    assert text == ("gpusat-tui on node-7: the job is STARVING (input-bound) for 2 min: "
                    "41% data wait")
    generic = payload(NOTICE, "node-7", "export", "41% data wait")
    assert generic["payload_version"] == 1 and generic["event"] == "turned"
    assert generic["held_s"] == 120.0 and generic["text"] == text
    assert body(generic, "slack") == {"text": text}
    assert body(generic, "feishu") == {"msg_type": "text", "content": {"text": text}}
    assert body(generic, "dingtalk") == {"msgtype": "text", "text": {"content": text}}
    assert body(generic, "generic") is generic
    recovered = Notice("recovered", "stalled", "saturated", None, 0.0, 80.0, suppressed=2)
    assert headline(recovered, "h") == (
        "gpusat-tui on h: the job is no longer STALLED; now saturated for 80 s "
        "(2 earlier turns not sent: rate limit)")


def test_terminal_sequences_bell_osc9_osc777_and_tmux_passthrough() -> None:
    seq = sequences("gpusat-tui", "job STARVING; 41%\x1b]0;pwned\x07", "all", tmux=False)
    assert seq.startswith("\a\x1b]9;gpusat-tui: job STARVING; 41%")
    assert "\x1b]777;notify;gpusat-tui;job STARVING, 41%" in seq
    assert "pwned" not in seq.split("\x1b]777")[0].split("41%")[1]  # the escape is gone
    assert seq.count("\x1b") == 2 and seq.count("\a") == 3
    wrapped = sequences("t", "x", "all", tmux=True)
    assert wrapped.startswith("\a\x1bPtmux;\x1b\x1b]9;t: x\a\x1b\\")
    assert sequences("t", "x", "bell") == "\a" and sequences("t", "x", "off") == ""


def test_the_notifier_writes_to_the_terminal_only_on_a_notice() -> None:
    written: list[str] = []
    lines: list[str] = []
    notifier = Notifier(NotifyPolicy(hold_s=2.0, min_gap_s=0.0), host="h", source="dashboard",
                        terminal=written.append, terminal_mode="all",
                        lines=lambda text, _generic: lines.append(text), tmux=False)
    status = JobStatus("starving", "input-bound", data_wait_pct=41.0)
    for t in range(5):
        notifier.observe(float(t), status)
    assert len(written) == 1 and written[0].startswith("\a\x1b]9;")
    assert lines == ["gpusat-tui on h: the job is STARVING (input-bound) for 2 s: "
                     "41% data wait"]


# --- webhooks against local servers ---------------------------------------------------------


@dataclass
class Hook:
    """A local HTTP server on 127.0.0.1 that answers each POST with the next status."""

    statuses: list[int] = field(default_factory=lambda: [200])
    hang: threading.Event | None = None
    bodies: list[dict] = field(default_factory=list)
    url: str = ""
    received: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def hook() -> Iterator[Hook]:
    state = Hook()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            state.bodies.append(json.loads(self.rfile.read(length)))
            state.received.set()
            if state.hang is not None:
                state.hang.wait(30)
                return
            code = state.statuses.pop(0) if len(state.statuses) > 1 else state.statuses[0]
            self.send_response(code)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_port}/hook"
    yield state
    if state.hang is not None:
        state.hang.set()
    server.shutdown()
    server.server_close()


def wait_until(predicate: object, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_webhook_posts_the_json_body(hook: Hook) -> None:
    sender = WebhookSender(hook.url, backoff_s=0.01)
    sender.send({"text": "hello", "n": 1})
    assert wait_until(lambda: sender.results)
    assert sender.results[0].ok and sender.results[0].attempts == 1
    assert hook.bodies == [{"text": "hello", "n": 1}]
    sender.close()


def test_server_errors_are_retried_client_errors_are_not(hook: Hook) -> None:
    hook.statuses = [503, 500, 200]
    sender = WebhookSender(hook.url, retries=3, backoff_s=0.01)
    sender.send({"n": 1})
    assert wait_until(lambda: sender.results)
    assert sender.results[0].ok and sender.results[0].attempts == 3
    hook.statuses = [400]
    sender.send({"n": 2})
    assert wait_until(lambda: len(sender.results) == 2)
    bad = sender.results[1]
    assert not bad.ok and bad.attempts == 1 and bad.status == 400
    sender.close()


def test_a_refused_connection_is_retried_then_given_up() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    sender = WebhookSender(f"http://127.0.0.1:{port}/", retries=2, backoff_s=0.01)
    started = time.monotonic()
    sender.send({"n": 1})
    assert time.monotonic() - started < 0.5  # send never waits
    assert wait_until(lambda: sender.results)
    result = sender.results[0]
    assert not result.ok and result.attempts == 3 and "refused" in (result.error or "").lower()
    sender.close()


def test_a_hung_server_never_blocks_the_caller(hook: Hook) -> None:
    hook.hang = threading.Event()
    sender = WebhookSender(hook.url, timeout_s=30.0, retries=0, max_queue=2)
    started = time.monotonic()
    for n in range(10):  # the first hangs in the thread; the rest queue, the oldest dropped
        sender.send({"n": n})
    assert time.monotonic() - started < 0.5
    assert wait_until(hook.received.is_set)
    assert sender.dropped >= 7
    started = time.monotonic()
    sender.close(timeout_s=0.5)
    assert time.monotonic() - started < 5.0  # bounded, the hung POST left to its thread


def test_only_http_urls_are_webhooks() -> None:
    for bad in ("file:///etc/passwd", "ftp://h/x", "http://", "hook"):
        with pytest.raises(ValueError):
            check_url(bad)
    assert check_url("https://open.feishu.cn/open-apis/bot/v2/hook/x")


def test_the_notifier_rate_limits_what_reaches_the_webhook(hook: Hook) -> None:
    sender = WebhookSender(hook.url, backoff_s=0.01)
    notifier = Notifier(NotifyPolicy(hold_s=10.0, min_gap_s=300.0), host="h", source="export",
                        webhooks=[(sender, "feishu")])
    kinds = (every(0, 60, "starving") + every(60, 120, "saturated") + every(120, 200, "stalled")
             + every(200, 400, "stalled"))
    for t, kind in kinds:
        notifier.observe(t, JobStatus(kind))
    assert wait_until(lambda: len(sender.results) == 2)
    texts = [b["content"]["text"] for b in hook.bodies]
    assert "STARVING" in texts[0] and "STALLED" in texts[1]
    assert "1 earlier turn not sent" in texts[1]
    sender.close()


# --- end to end: check --watch --------------------------------------------------------------


def test_check_watch_posts_when_the_job_starts_starving(tmp_path: Path, hook: Hook) -> None:
    fakes = fake_host(tmp_path / "h", "starving", cards=2)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpusat_tui", "check", "--watch", "--json", "--interval", "0.25",
         "--notify-hold", "1s", "--notify-every", "1h", "--webhook", hook.url],
        env=fakes.env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert wait_until(hook.received.is_set, timeout=90), "no webhook POST"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    sent = hook.bodies[0]
    assert (sent["event"], sent["problem"], sent["source"]) == ("turned", "starving", "check")
    assert sent["held_s"] >= 1.0 and "STARVING" in sent["text"]
    printed = [json.loads(line) for line in out.splitlines()]
    assert printed and printed[0]["text"] == sent["text"]


def test_with_no_tool_a_wait_below_the_line_or_the_job_s_end_is_a_recovery() -> None:
    from gpusat_tui.notify.decision import NotifyPolicy, TurnWatcher

    for cause in ("not-starving", "no-job"):
        watcher = TurnWatcher(NotifyPolicy(hold_s=2.0, min_gap_s=0.0))
        sent = [n for t in range(6) for n in watcher.observe(float(t), "starving", "input-bound")]
        assert [n.event for n in sent] == ["turned"]
        later = [n for t in range(6, 12) for n in watcher.observe(float(t), "unknown", cause)]
        assert [(n.event, n.problem, n.kind, n.cause) for n in later] == [
            ("recovered", "starving", "unknown", cause)]
    # Any other unknown (a tool failing, too few polls) still changes nothing.
    watcher = TurnWatcher(NotifyPolicy(hold_s=2.0, min_gap_s=0.0))
    for t in range(6):
        watcher.observe(float(t), "starving", "input-bound")
    assert not [n for t in range(6, 30) for n in watcher.observe(float(t), "unknown", None)]
