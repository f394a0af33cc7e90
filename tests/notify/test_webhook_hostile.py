"""The webhook sender under hostile servers and URLs: answers that are not HTTP, a TLS alert, a
redirect to another port, credentials in the URL, escape sequences and CR/LF in it, a server
that never answers at exit, and option values written in plain digits. Every server is a raw
socket on 127.0.0.1 on a port of its own choosing."""

from __future__ import annotations

import base64
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpusat_tui.cli import parse
from gpusat_tui.notify.webhook import Delivery, WebhookSender, check_url
from tests.notify.hostile_server import GOOD, JUNK, TLS_ALERT, ScriptedServer, redirect
from tests.notify.test_notify import wait_until
from tests.prom.hosts import REPO, fake_host


@pytest.fixture
def servers() -> Iterator[list[ScriptedServer]]:
    made: list[ScriptedServer] = []
    yield made
    for server in made:
        server.close()


def scripted(made: list[ScriptedServer], replies: list[bytes | None]) -> ScriptedServer:
    queue = list(replies)
    server = ScriptedServer(lambda: queue.pop(0) if len(queue) > 1 else queue[0])
    made.append(server)
    return server


def test_junk_a_tls_alert_and_a_redirect_fail_alone_and_the_next_notice_is_delivered(
    servers: list[ScriptedServer],
) -> None:
    elsewhere = scripted(servers, [GOOD])
    hook = scripted(servers, [JUNK, TLS_ALERT, redirect(f"http://127.0.0.1:{elsewhere.port}/"
                                                       "stolen"), GOOD])
    said: list[Delivery] = []
    sender = WebhookSender(hook.url, retries=0, backoff_s=0.01, on_result=said.append)
    for n in range(4):
        sender.send({"n": n})
    assert wait_until(lambda: len(sender.results) == 4, timeout=60)
    junk, tls, moved, good = sender.results
    assert not junk.ok and not tls.ok and "not HTTP" in (junk.error or "")
    assert not moved.ok and moved.status == 302 and "not followed" in (moved.error or "")
    assert good.ok and good.status == 200
    assert hook.connections == 4 and elsewhere.connections == 0  # the redirect went nowhere
    for result in said:  # the lines a user reads: our words, never the server's bytes
        assert not any(ch in (result.error or "") for ch in "\x00\x1b\x07\x15")
        assert "owned" not in (result.error or "")
    sender.send({"n": 4})
    assert wait_until(lambda: len(sender.results) == 5)
    assert sender.results[4].ok
    sender.close()


def test_an_answer_that_is_not_http_is_retried_as_documented(
    servers: list[ScriptedServer],
) -> None:
    hook = scripted(servers, [JUNK, TLS_ALERT, GOOD])
    sender = WebhookSender(hook.url, retries=3, backoff_s=0.01)
    sender.send({"n": 1})
    assert wait_until(lambda: sender.results, timeout=60)
    assert sender.results[0].ok and sender.results[0].attempts == 3
    sender.close()


def test_credentials_in_the_url_are_sent_as_basic_auth_and_never_shown(
    servers: list[ScriptedServer],
) -> None:
    from gpusat_tui.notify.webhook import shown_url

    hook = scripted(servers, [GOOD])
    url = f"http://gpu%20bot:s3cr%40t@127.0.0.1:{hook.port}/hook?x=1"
    sender = WebhookSender(url, retries=0)
    sender.send({"n": 1})
    assert wait_until(lambda: sender.results)
    assert sender.results[0].ok
    head = hook.requests[0].split(b"\r\n\r\n")[0].decode()
    assert head.startswith("POST /hook?x=1 HTTP/1.1")
    expected = base64.b64encode(b"gpu bot:s3cr@t").decode()
    assert f"Authorization: Basic {expected}" in head.split("\r\n")
    assert "s3cr" not in shown_url(url) and shown_url(url).startswith("http://***@127.0.0.1")
    sender.close()


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9/\x1b]0;owned\x07",
    "http://127.0.0.1:9/a\r\nX-Injected: 1",
    "http://127.0.0.1:9/a\nb",
    "http://evil\x1b[2J.example/",
    "http://127.0.0.1:9/\x9b31m",
])
def test_a_url_with_escapes_or_line_breaks_is_refused_at_start_up(url: str) -> None:
    with pytest.raises(ValueError):
        check_url(url)
    done = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--watch", "--webhook",
         url.replace("127.0.0.1:9", "user:hunter2@127.0.0.1:9")],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "hunter2" not in done.stderr
    assert not any(ch in done.stderr for ch in "\x1b\x07\r\x9b")
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "--webhook" in errors[0]


@pytest.mark.parametrize("flag", ["--notify-hold", "--notify-every"])
@pytest.mark.parametrize("value", ["1" + "0" * 308, "9" * 400, "8d"])
def test_notify_durations_refuse_huge_values_written_in_plain_digits(
    flag: str, value: str, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse(["check", "--watch", flag, value])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "at most 7d" in err and "inf" not in err and "e+308" not in err


def test_a_stuck_server_at_exit_gets_the_documented_wait_then_one_line(
    tmp_path: Path, servers: list[ScriptedServer],
) -> None:
    hook = scripted(servers, [None])  # accepts, reads the POST, never answers
    fakes = fake_host(tmp_path / "h", "starving", cards=2)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpusat_tui", "check", "--watch", "--interval", "0.25",
         "--notify-hold", "1s", "--notify-every", "1h", "--webhook", hook.url],
        env=fakes.env(), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert wait_until(lambda: hook.connections >= 1, timeout=90), "no webhook POST"
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "1 webhook notice(s) not sent: no answer within 4 s of stopping" in err
    assert "Traceback" not in err
