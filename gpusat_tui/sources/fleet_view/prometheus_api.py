"""Talking to a Prometheus server: PromQL selectors from ``--match``, and GETs of its HTTP API
whose answers are checked to be the API's before anyone reads them.

Blocking on purpose (`PrometheusAPI.get` runs in a daemon thread): the fleet source keeps its
event loop free and never waits on a slow server. The timeout bounds the whole request, not
each read: a server that sends its headers and then a byte now and then (or nothing) is cut off
when the time is up (`RequestDeadline` shuts the socket down), and an answer larger than
`MAX_ANSWER_BYTES` is refused. Every failure is one `FleetError` with a ``kind`` the status line
shows: ``unreachable``, ``timeout``, ``http``, ``query``, ``parse``.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import re
import socket
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gpusat_tui.errors import GpusatError

__all__ = [
    "MAX_ANSWER_BYTES",
    "WARNINGS",
    "FleetError",
    "PrometheusAPI",
    "RequestDeadline",
    "decode_answer",
    "parse_matcher",
    "selector",
]

#: Largest answer read: 64 hosts x 8 cards is about 1.4 MB, so this is thousands of cards.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
MIB = 1024 * 1024
#: Most bytes one read asks for; a read returns whatever one ``recv`` brought.
_CHUNK = 256 * 1024

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_MATCHER = re.compile(r"^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)(.*)$")


class FleetError(GpusatError):
    """A request to Prometheus failed; ``kind`` says how (for the status line)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


# --- PromQL ------------------------------------------------------------------------------------


def parse_matcher(text: str) -> str:
    """``--match 'job=train'`` (also ``!=``, ``=~``, ``!~``) -> a PromQL matcher ``job="train"``.

    Raises ValueError with a plain message for anything else.
    """
    match = _MATCHER.match(text)
    if not match:
        raise ValueError(
            f"--match expects LABEL=VALUE (or LABEL!=VALUE, LABEL=~REGEX, LABEL!~REGEX), "
            f"got {text!r}"
        )
    label, op, value = match.groups()
    if label == "__name__":
        raise ValueError("--match cannot select on the metric name")
    return f"{label}{op}{json.dumps(value.strip())}"


def selector(names: Iterable[str], matchers: Sequence[str] = ()) -> str:
    """``{__name__=~"a|b", job="train"}``: one vector selector for several metrics."""
    alternatives = "|".join(re.escape(n) for n in names)
    return "{" + ", ".join([f'__name__=~"{alternatives}"', *matchers]) + "}"


# --- HTTP ---------------------------------------------------------------------------------------


class RequestDeadline:
    """The end of one request: when it comes, the request's sockets are shut down, so a read
    blocked on a server that trickles returns at once (a socket timeout only bounds each read).

    A TLS handshake is bounded per read only (the socket is not the connection's until it is
    done). Costs one timer thread per request, cancelled when the request ends.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self.expire)
        self._timer.daemon = True
        self._timer.start()

    def connection(self, base: type[http.client.HTTPConnection]) -> Any:
        """``base`` whose sockets this deadline shuts down. The socket is kept here because
        urllib lets go of the connection's once the headers are in (the answer's file still
        reads from it)."""
        deadline = self

        class Tracked(base):  # type: ignore[valid-type,misc]  # a base chosen at run time (HTTP or HTTPS)
            def connect(self) -> None:
                super().connect()
                deadline.track(self.sock)

        return Tracked

    def track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            expired = self.expired
        if expired:
            self._shut(sock)

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        # The OS-level shutdown (under a TLS socket too) wakes a blocked read; the short
        # timeout ends reads of bytes still arriving after it. A socket already closed is a
        # request already over.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            sock.settimeout(0.001)

    def cancel(self) -> None:
        self._timer.cancel()


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: RequestDeadline) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self.deadline.connection(http.client.HTTPConnection), req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: RequestDeadline) -> None:
        super().__init__()
        self.deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(
            self.deadline.connection(http.client.HTTPSConnection), req, context=_tls()
        )


@functools.cache
def _tls() -> ssl.SSLContext:
    """The system's CAs, as urllib's default; loaded once (it costs milliseconds)."""
    return ssl.create_default_context()


def _read_body(answer: Any, deadline: RequestDeadline, limit: int = MAX_ANSWER_BYTES) -> bytes:
    """The whole body, read as it comes (``read1``: one ``recv`` at a time, so the deadline is
    seen between two bytes of a trickle); `FleetError` past ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        if deadline.expired:
            raise FleetError("cut off by the deadline", "timeout")
        chunk = answer.read1(_CHUNK)
        if not chunk:
            missing = getattr(answer, "length", None)  # what Content-Length still promised
            if missing:
                raise FleetError(
                    f"the server closed the connection in the middle of its answer ({size} "
                    f"bytes came, {missing} more were announced)", "unreachable",
                )
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise FleetError(
                f"answer cut: over the {_size(limit)} limit (narrow the view with --match)",
                "parse",
            )
        chunks.append(chunk)


def _size(limit: int) -> str:
    return f"{limit / MIB:g} MiB" if limit >= MIB else f"{limit} bytes"


class PrometheusAPI:
    """Blocking GETs of the Prometheus HTTP API (run them in a thread)."""

    def __init__(
        self, base_url: str, timeout: float = 5.0, max_bytes: int = MAX_ANSWER_BYTES
    ) -> None:
        parsed = urllib.parse.urlsplit(base_url.strip())
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise GpusatError(
                f"--prometheus expects the server's URL, like http://prom:9090, got {base_url!r}"
            )
        self.base_url = base_url.strip().rstrip("/")
        #: Seconds one request may take, all of it: connecting, the headers and the body.
        self.timeout = float(timeout)
        #: Largest answer read; a larger one is cut off and refused (`FleetError`).
        self.max_bytes = int(max_bytes)

    def get(self, endpoint: str, params: Mapping[str, str]) -> Any:
        """``data`` of a successful answer; raises `FleetError` for everything else, within
        ``timeout`` seconds whatever the server does."""
        url = f"{self.base_url}/api/v1/{endpoint}?{urllib.parse.urlencode(params)}"
        deadline = RequestDeadline(self.timeout)
        try:
            body = self._fetch(url, deadline)
        except FleetError:
            if deadline.expired:
                raise self._timed_out() from None
            raise
        finally:
            deadline.cancel()
        if deadline.expired:  # what came before the cut is not the answer
            raise self._timed_out()
        return decode_answer(body)

    def _timed_out(self) -> FleetError:
        return FleetError(f"no whole answer within {self.timeout:g} s", "timeout")

    def _fetch(self, url: str, deadline: RequestDeadline) -> bytes:
        request = urllib.request.Request(url, headers={"Accept": "application/json"})
        opener = urllib.request.build_opener(
            _DeadlineHTTPHandler(deadline), _DeadlineHTTPSHandler(deadline)
        )
        try:
            with opener.open(request, timeout=self.timeout) as answer:
                return _read_body(answer, deadline, self.max_bytes)
        except urllib.error.HTTPError as exc:  # 400/422/503: the API still explains in JSON
            try:
                body = _read_body(exc, deadline, 64 * 1024) if exc.fp is not None else b""
            except (FleetError, OSError, ValueError, http.client.HTTPException):
                body = b""
            finally:
                exc.close()
            message = _api_error(body) or f"HTTP {exc.code} {exc.reason}"
            raise FleetError(message, "query" if exc.code in (400, 422) else "http") from None
        except TimeoutError:
            raise self._timed_out() from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise self._timed_out() from None
            raise FleetError(f"cannot reach {self.base_url}: {reason}", "unreachable") from None
        except http.client.IncompleteRead as exc:
            raise FleetError(
                f"the server closed the connection in the middle of its answer "
                f"({len(exc.partial)} bytes came)", "unreachable",
            ) from None
        except (OSError, ValueError, http.client.HTTPException) as exc:  # reset, bad chunking
            raise FleetError(f"request failed: {type(exc).__name__}: {exc}", "unreachable") \
                from None


def _api_error(body: bytes) -> str | None:
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    if isinstance(doc, dict) and doc.get("status") == "error":
        return f"{doc.get('errorType', 'error')}: {doc.get('error', '')}"[:300]
    return None


#: Key of ``data`` under which `decode_answer` keeps the answer's ``warnings`` (Prometheus,
#: Thanos: a partial answer, a query that hit a limit); the API's ``data`` has no such key.
WARNINGS = "gpusat_warnings"


def decode_answer(body: bytes) -> Any:
    """``data`` of an API answer, or `FleetError` (``query`` or ``parse``). The answer's
    ``warnings``, if any, come along in ``data[WARNINGS]``."""
    try:
        doc = json.loads(body)
    except ValueError:
        raise FleetError("the answer is not JSON (is this a Prometheus server?)", "parse") from None
    if not isinstance(doc, dict) or "status" not in doc:
        raise FleetError("the answer is not a Prometheus API answer", "parse")
    if doc["status"] != "success":
        raise FleetError(_api_error(body) or "the query failed", "query")
    data = doc.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("result"), list):
        raise FleetError("the answer has no result list", "parse")
    warnings = doc.get("warnings")
    if isinstance(warnings, list) and warnings:  # a partial answer says so: pass it on
        data[WARNINGS] = [str(w) for w in warnings[:10]]
    return data
