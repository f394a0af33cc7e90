"""The exporter's HTTP server under a burst of connections: 200 real connections to 127.0.0.1,
opened one after another and held, are all accepted by the kernel at once (none waits for the
SYN retry, a second, as past Python's default listen backlog of 5), and a scrape among them
is served; oversized requests are still refused with 414/431."""

from __future__ import annotations

import contextlib
import socket
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpusat_tui.commands.export import LISTEN_BACKLOG, serve
from gpusat_tui.commands.export_metrics import ExportState


@pytest.fixture
def exporter() -> Iterator[tuple[Any, str]]:
    server, url = serve(ExportState(host="burst"), "127.0.0.1", 0)
    try:
        yield server, url
    finally:
        server.shutdown()
        server.server_close()


def test_two_hundred_connections_in_a_row_are_each_accepted_at_once(
    exporter: tuple[Any, str],
) -> None:
    server, url = exporter
    assert server.request_queue_size == LISTEN_BACKLOG >= 200
    waits: list[float] = []
    with contextlib.ExitStack() as held:
        for _ in range(200):
            start = time.monotonic()
            conn = socket.create_connection(("127.0.0.1", server.server_port), timeout=10)
            waits.append(time.monotonic() - start)
            held.enter_context(conn)
        # A lost SYN is retried after one second: a wait that long is a refused connection,
        # never a busy machine (connecting on loopback is the kernel's work alone).
        retried = [round(w, 2) for w in waits if w >= 0.9]
        assert retried == [], f"{len(retried)} of 200 connections waited for the SYN retry"
        with urllib.request.urlopen(url, timeout=30) as answer:  # a scrape among them
            names = {f.name for f in text_string_to_metric_families(answer.read().decode())}
        assert "gpusat_exporter_info" in names and "process_open_fds" in names


def test_oversized_requests_are_still_refused(exporter: tuple[Any, str]) -> None:
    server, _ = exporter

    def status_of(request: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", server.server_port), timeout=10) as conn:
            conn.sendall(request)
            return conn.recv(64).split(b"\r\n", 1)[0]

    assert b" 414 " in status_of(b"GET /metrics?" + b"x" * 70_000 + b" HTTP/1.1\r\n\r\n")
    headers = b"".join(b"X-%d: y\r\n" % i for i in range(200))
    assert b" 431 " in status_of(b"GET /metrics HTTP/1.1\r\n" + headers + b"\r\n")
