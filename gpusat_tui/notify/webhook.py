"""The webhook: JSON POSTs sent from a thread of their own, so the monitor never waits on one.

`WebhookSender.send` only puts the body on a bounded queue (never blocks; when full the oldest
waiting body is dropped and counted). One daemon thread POSTs each body with a timeout. A
delivery that gets no HTTP answer (refused, reset, timed out, a TLS failure, bytes that are not
HTTP) or gets 429 or 5xx is retried with a doubling pause; any other answer ends it. Every
failure of a delivery is caught and described in one line of our own words (never the server's
bytes), and the thread goes on to the next body.

A notification is one POST to the one URL the user gave: redirects are never followed (a 3xx
is a failed delivery, not retried), and nothing a server answers is shown or acted on beyond
its status code. Credentials in the URL (``https://user:pass@host/``) are sent as HTTP basic
auth and never printed. `close` waits a bounded time in all for what is queued.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import http.client
import json
import queue
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpusat_tui.text import clean

__all__ = [
    "EXIT_WAIT_S",
    "Delivery", "WebhookSender", "check_url", "close_all", "describe_failure", "shown_url",
]

_STOP = object()
#: How long, in all, the webhooks get at exit for what is queued (`close_all`).
EXIT_WAIT_S = 4.0


def shown_url(url: str) -> str:
    """The URL as it may be printed: credentials replaced by ``***``, controls removed."""
    scheme, sep, rest = url.partition("//")
    if sep:
        end = min([i for i in (rest.find(c) for c in "/?#") if i >= 0] or [len(rest)])
        if "@" in rest[:end]:
            rest = "***@" + rest[:end].rpartition("@")[2] + rest[end:]
    return clean(scheme + sep + rest, 200)


def check_url(url: str) -> str:
    """The URL if it is an http(s) URL with a host, printable ASCII only; ValueError with the
    reason (the URL shown without its credentials) otherwise."""
    if any(not (" " < ch < "\x7f") for ch in url):
        raise ValueError(
            f"a webhook URL must be printable ASCII without spaces (percent-encode the rest), "
            f"got {shown_url(url)!r}")
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018  (raises on a port that is not a number in range)
    except ValueError:
        raise ValueError(f"not a URL with a valid host and port: {shown_url(url)!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"a webhook must be an http:// or https:// URL, got {shown_url(url)!r}")
    return url


def _split_credentials(url: str) -> tuple[str, str | None]:
    """(the URL without user info, the ``Authorization`` header's value or None)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
    auth = "Basic " + base64.b64encode(token.encode()).decode("ascii")
    return urllib.parse.urlunsplit(parts._replace(netloc=hostport)), auth


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx stays an answer (`urllib.error.HTTPError`): it is never followed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def describe_failure(exc: BaseException) -> str:
    """One line of our own about a failed attempt: the kind of failure, never the server's
    bytes (``BadStatusLine``'s message is the raw first line it got)."""
    reason: BaseException | str = exc
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        reason = exc.reason
    if isinstance(reason, str):  # URLError's own words ("unknown url type", ...)
        return clean(reason, 120)
    if isinstance(reason, http.client.HTTPException):
        return f"the answer is not HTTP ({type(reason).__name__})"
    if isinstance(reason, ssl.SSLError):
        return f"TLS failed ({clean(reason.reason or type(reason).__name__, 80)})"
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, OSError) and reason.strerror:
        return f"{type(reason).__name__}: {clean(reason.strerror, 80)}"
    return type(reason).__name__


@dataclass
class Delivery:
    """How one body fared (for tests and the caller's messages)."""

    ok: bool
    attempts: int
    status: int | None
    error: str | None


class WebhookSender:
    """Posts JSON bodies to one URL from a background thread."""

    def __init__(
        self, url: str, *, timeout_s: float = 5.0, retries: int = 3, backoff_s: float = 1.0,
        max_queue: int = 32, on_result: Callable[[Delivery], None] | None = None,
    ) -> None:
        self.url = check_url(url)
        self._target, self._auth = _split_credentials(url)
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_queue = max_queue
        self.on_result = on_result
        self.dropped = 0
        #: The latest deliveries (bounded: a sender runs for weeks); `delivered` and `failed`
        #: count them all.
        self.results: collections.deque[Delivery] = collections.deque(maxlen=256)
        self.delivered = 0
        self.failed = 0
        self._opener = urllib.request.build_opener(_NoRedirect())
        # Unbounded underneath so that `close` never waits to queue its stop; `send` bounds it.
        self._queue: queue.Queue[Any] = queue.Queue()
        self._busy = False
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpusat-webhook", daemon=True)
        self._thread.start()

    def send(self, body: dict[str, Any]) -> None:
        """Queue a body; returns at once, whatever the server does."""
        data = json.dumps(body, ensure_ascii=False).encode()
        while self._queue.qsize() >= self.max_queue:
            try:
                self._queue.get_nowait()
                self.dropped += 1
            except queue.Empty:
                break
        self._queue.put_nowait(data)

    def stop(self) -> None:
        """Send what is queued without further retries, then end the thread (never waits)."""
        if not self._closing.is_set():
            self._closing.set()
            self._queue.put_nowait(_STOP)

    def close(self, timeout_s: float = 5.0) -> int:
        """`stop`, then wait at most ``timeout_s`` in all (a hung server is left to its daemon
        thread); returns how many bodies were left unsent."""
        self.stop()
        self._thread.join(max(0.0, timeout_s))
        if not self._thread.is_alive():
            return 0
        return max(0, self._queue.qsize() - 1) + (1 if self._busy else 0)

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            if data is _STOP:
                return
            self._busy = True
            try:
                result = self._deliver(data)
            except Exception as exc:  # never let one delivery end the sender
                result = Delivery(False, 1, None, describe_failure(exc))
            self._busy = False
            self.results.append(result)
            if result.ok:
                self.delivered += 1
            else:
                self.failed += 1
            if self.on_result is not None:
                with contextlib.suppress(Exception):  # a caller's message never ends the sender
                    self.on_result(result)

    def _attempt(self, data: bytes) -> int:
        headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "gpusat-tui"}
        if self._auth is not None:
            headers["Authorization"] = self._auth
        request = urllib.request.Request(self._target, data=data, method="POST", headers=headers)
        with self._opener.open(request, timeout=self.timeout_s) as answer:
            status: int = answer.status
            answer.read(64 * 1024)
        return status

    def _deliver(self, data: bytes) -> Delivery:
        status: int | None = None
        error: str | None = None
        attempt = 0
        for attempt in range(1, self.retries + 2):
            try:
                return Delivery(True, attempt, self._attempt(data), None)
            except urllib.error.HTTPError as exc:
                status, error = exc.code, f"HTTP {exc.code}"
                exc.close()
                if 300 <= exc.code < 400:
                    return Delivery(False, attempt, status, f"{error}: redirects are not followed")
                if exc.code != 429 and exc.code < 500:
                    return Delivery(False, attempt, status, error)
            except Exception as exc:  # refused, reset, timed out, TLS, not HTTP at all
                status, error = None, describe_failure(exc)
            if attempt <= self.retries:
                pause = self.backoff_s * (2 ** (attempt - 1))
                if self._closing.wait(pause if not self._closing.is_set() else 0):
                    break
        return Delivery(False, attempt, status, error)


def close_all(senders: list[WebhookSender], timeout_s: float) -> int:
    """Close every sender within ``timeout_s`` in all; how many bodies were left unsent."""
    deadline = time.monotonic() + timeout_s
    for sender in senders:
        sender.stop()
    return sum(sender.close(deadline - time.monotonic()) for sender in senders)
