"""A Prometheus that misbehaves at the HTTP level, on 127.0.0.1: it trickles its answer, hangs
after its headers, closes in the middle of the body, trickles its status line or never stops
sending. Raw sockets, so each byte is sent when the mode says (http.server would buffer).

Usable from tests and benchmarks: ``with HostileServer("trickle") as url: ...``. Every
connection is served by a daemon thread that stops when the server stops (or after
``run_s``), so a client that never gives up still cannot keep the test alive.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import time
from types import TracebackType

__all__ = ["MODES", "HostileServer"]

MODES = ("trickle", "hang", "close", "trickle-headers", "endless")

_HEADERS = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
    b"Connection: close\r\n\r\n"
)
_BODY = b'{"status": "success", "data": {"resultType": "vector", "result": []}}'


class HostileServer:
    """``mode`` (one of `MODES`); ``gap_s`` between trickled bytes; ``run_s`` how long one
    connection misbehaves at most."""

    def __init__(self, mode: str, gap_s: float = 0.5, run_s: float = 60.0) -> None:
        if mode not in MODES:
            raise ValueError(mode)
        self.mode, self.gap_s, self.run_s = mode, gap_s, run_s
        self.stop = threading.Event()
        #: Connections accepted so far.
        self.connections = 0
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                outer.connections += 1
                with contextlib.suppress(OSError):  # the client gave up: what it should do
                    outer.serve(self.request)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler,
                                                      bind_and_activate=False)
        self.server.daemon_threads = True
        self.server.allow_reuse_address = True
        self.server.server_bind()
        self.server.server_activate()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _wait(self, seconds: float) -> bool:
        """Sleep; False once the server is stopping."""
        return not self.stop.wait(seconds)

    def serve(self, conn: socket.socket) -> None:
        conn.settimeout(5.0)
        conn.recv(65536)  # the request (one GET fits)
        end = time.monotonic() + self.run_s
        mode = self.mode
        if mode == "trickle-headers":
            for byte in _HEADERS % (len(_BODY) * 1000):
                if time.monotonic() > end or not self._wait(self.gap_s):
                    return
                conn.sendall(bytes([byte]))
            return
        size = len(_BODY) if mode == "close" else 10**9
        conn.sendall(_HEADERS % size)
        if mode == "hang":
            self._wait(self.run_s)
        elif mode == "close":
            conn.sendall(_BODY[: len(_BODY) // 2])
            conn.shutdown(socket.SHUT_RDWR)
        elif mode == "trickle":
            while time.monotonic() < end and self._wait(self.gap_s):
                conn.sendall(b" ")
        elif mode == "endless":
            block = b" " * 65536
            while time.monotonic() < end and not self.stop.is_set():
                conn.sendall(block)

    def __enter__(self) -> str:
        self._thread.start()
        return self.url

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)
