"""A raw TCP server on 127.0.0.1 that answers each connection with the next scripted reply:
a good HTTP answer, junk bytes, a TLS alert, a redirect, or nothing at all (a hang). Used by the
webhook's hostile tests and by ``benchmarks/soak_webhook.py``."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

GOOD = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
JUNK = b"\x00\x1b]0;owned\x07 not http at all\r\n\r\n"
#: What a TLS-only port sends to a plain-HTTP client: an alert record (protocol version).
TLS_ALERT = b"\x15\x03\x01\x00\x02\x02F"
#: Not sent: the connection is reset (RST) instead of answered.
RESET = b"<reset>"


def redirect(location: str) -> bytes:
    return (f"HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\n"
            "Connection: close\r\n\r\n").encode()


class ScriptedServer:
    """Each accepted connection reads the request's head (and body, by Content-Length), then
    gets ``replies()``'s next value: bytes to send, or None to hang until ``release``."""

    def __init__(self, replies: Callable[[], bytes | None]) -> None:
        self.replies = replies
        self.requests: list[bytes] = []
        self.connections = 0
        self.release = threading.Event()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port: int = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            try:
                request = _read_request(conn)
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self.requests.append(request)
                reply = self.replies()
            try:
                if reply is None:
                    self.release.wait(60)
                    return
                if reply == RESET:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
                conn.sendall(reply)
            except OSError:
                pass

    def close(self) -> None:
        self.release.set()
        self.sock.close()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip() or 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body
