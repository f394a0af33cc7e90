"""The webhook: JSON POSTs sent from a thread of their own, so the monitor never waits on one.

`WebhookSender.send` only puts the body on a bounded queue (never blocks; when full the oldest
waiting body is dropped and counted). One daemon thread POSTs each body with a timeout,
retrying a refused connection, a timeout, HTTP 429 and 5xx with a doubling pause, and giving
up on other answers. What the server answers is never shown (only its status code), and
nothing from it is acted on. `close` waits a bounded time for what is queued.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["WebhookSender", "check_url"]

_STOP = object()


def check_url(url: str) -> str:
    """The URL if it is http(s) with a host; ValueError with the reason otherwise."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"a webhook must be an http:// or https:// URL, got {url!r}")
    return url


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
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.on_result = on_result
        self.dropped = 0
        self.results: list[Delivery] = []
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queue)
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpusat-webhook", daemon=True)
        self._thread.start()

    def send(self, body: dict[str, Any]) -> None:
        """Queue a body; returns at once, whatever the server does."""
        data = json.dumps(body, ensure_ascii=False).encode()
        while True:
            try:
                self._queue.put_nowait(data)
                return
            except queue.Full:
                try:
                    self._queue.get_nowait()
                    self.dropped += 1
                except queue.Empty:
                    pass

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop after what is queued, waiting at most ``timeout_s`` (a hung server is left to
        its daemon thread)."""
        self._closing.set()
        try:
            self._queue.put(_STOP, timeout=timeout_s)
        except queue.Full:
            return
        self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            if data is _STOP:
                return
            result = self._deliver(data)
            self.results.append(result)
            if self.on_result is not None:
                with contextlib.suppress(Exception):  # a caller's message never ends the sender
                    self.on_result(result)

    def _deliver(self, data: bytes) -> Delivery:
        status: int | None = None
        error: str | None = None
        for attempt in range(1, self.retries + 2):
            request = urllib.request.Request(
                self.url, data=data, method="POST",
                headers={"Content-Type": "application/json; charset=utf-8",
                         "User-Agent": "gpusat-tui"},
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                    status = answer.status
                    answer.read(64 * 1024)
                return Delivery(True, attempt, status, None)
            except urllib.error.HTTPError as exc:
                status, error = exc.code, f"HTTP {exc.code}"
                exc.close()
                if exc.code != 429 and exc.code < 500:
                    return Delivery(False, attempt, status, error)
            except (OSError, ValueError) as exc:  # refused, reset, timed out, bad answer
                reason = getattr(exc, "reason", None) or exc
                error = f"{type(exc).__name__}: {reason}"
            if attempt <= self.retries:
                pause = self.backoff_s * (2 ** (attempt - 1))
                if self._closing.wait(pause if not self._closing.is_set() else 0):
                    break
        return Delivery(False, attempt, status, error)

