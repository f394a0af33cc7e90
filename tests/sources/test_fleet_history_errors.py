"""The fleet source never swallows a failed request: a start-up history that is refused, cut
(over the size limit), timed out or unreadable is said on every Frame until live polls have
filled the charts, and the server's warnings about an answer become notes."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.commands.check_report import CheckBuilder
from gpusat_tui.model import Assessment, Frame
from gpusat_tui.sources.fleet_view.fleet import HISTORY_POINTS, FleetSource
from gpusat_tui.sources.fleet_view.fleet_answers import frame_from_answer, history_frames
from gpusat_tui.sources.fleet_view.prometheus_api import FleetError, PrometheusAPI, decode_answer

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "prometheus"


def loaded(name: str) -> Any:
    return decode_answer((SAMPLES / name).read_bytes())


class API:
    """``query_range`` answers or raises ``history``; ``query`` answers the recorded poll."""

    base_url = "http://prom.test:9090"

    def __init__(self, history: Any, poll: Any = None) -> None:
        self.history = history
        self.poll = poll if poll is not None else loaded("instant.json")

    def get(self, endpoint: str, params: dict[str, str]) -> Any:
        answer = self.history if endpoint == "query_range" else self.poll
        if isinstance(answer, BaseException):
            raise answer
        return answer


async def frames_of(source: FleetSource, count: int) -> list[Frame]:
    got: list[Frame] = []
    async for frame in source.frames():
        got.append(frame)
        if len(got) >= count:
            break
    await source.aclose()
    return got


@pytest.mark.parametrize(("failure", "kind", "words"), [
    (FleetError("execution: query processing would load too many samples into memory",
                "query"), "query", "too many samples"),
    (FleetError("answer cut: over the 64 MiB limit (narrow the view with --match)", "parse"),
     "parse", "answer cut"),
    (TimeoutError(), "timeout", "no answer within"),
    (RuntimeError("odd"), "parse", "RuntimeError: odd"),
])
async def test_a_failed_history_is_said_until_the_charts_are_full(
    failure: BaseException, kind: str, words: str
) -> None:
    source = FleetSource("http://prom.test:9090", api=API(failure), interval=0.0)  # type: ignore[arg-type]
    got = await frames_of(source, HISTORY_POINTS + 3)
    said = [[e for e in f.errors if e.message.startswith("start-up history: ")] for f in got]
    assert all(len(f.cards) == 4 for f in got)  # the live polls go on
    assert all(len(s) == 1 for s in said[:HISTORY_POINTS])
    first = said[0][0]
    assert (first.tool, first.kind) == ("prometheus", kind)
    assert words in first.message and first.message.endswith("the charts start empty")
    assert said[HISTORY_POINTS:] == [[], [], []]  # live polls have filled the charts by then
    assert source.label == "fleet prom.test:9090 · 2 hosts"  # the server answers the polls


async def test_a_history_that_comes_is_not_an_error() -> None:
    source = FleetSource("http://p:1", api=API(loaded("range.json")), interval=0.0)  # type: ignore[arg-type]
    got = await frames_of(source, len(history_frames(loaded("range.json"))) + 2)
    assert not any(f.errors for f in got)


class PaddedRange(BaseHTTPRequestHandler):
    """The recorded answers; the range answer padded past the client's limit (valid JSON)."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/api/v1/query_range"):
            body = (SAMPLES / "range.json").read_bytes() + b" " * 300_000
        else:
            body = (SAMPLES / "instant.json").read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):  # the client hung up at its limit
            self.wfile.write(body)


@pytest.fixture
def padded_server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), PaddedRange)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


async def test_a_history_answer_over_the_limit_is_cut_and_said(padded_server: str) -> None:
    api = PrometheusAPI(padded_server, timeout=10.0, max_bytes=100_000)
    source = FleetSource(padded_server, api=api, interval=0.0)
    first = (await frames_of(source, 1))[0]
    assert len(first.cards) == 4
    assert [(e.tool, e.kind) for e in first.errors] == [("prometheus", "parse")]
    assert first.errors[0].message.startswith(
        "start-up history: answer cut: over the 100000 bytes limit")


def test_the_servers_warnings_become_notes() -> None:
    body = json.loads((SAMPLES / "instant.json").read_bytes())
    body["warnings"] = ["partial response: store gpu-east unreachable\x1b[2J"]
    answer = frame_from_answer(decode_answer(json.dumps(body).encode()))
    assert answer.notes == ["Prometheus warns: partial response: store gpu-east unreachable"]
    ranged = json.loads((SAMPLES / "range.json").read_bytes())
    ranged["warnings"] = ["query hit the series limit"]
    frames = history_frames(decode_answer(json.dumps(ranged).encode()))
    assert frames[0].notes == ["Prometheus warns: query hit the series limit"]


async def test_check_reports_a_cut_answer() -> None:
    cut = FleetError("answer cut: over the 64 MiB limit (narrow the view with --match)", "parse")
    source = FleetSource("http://p:1", api=API(cut, cut), history=False)  # type: ignore[arg-type]
    builder = CheckBuilder()
    for _ in range(2):
        builder.add(await source.poll_once(), Assessment())
    report = builder.report(2.0)
    assert [(e.tool, e.kind, e.count) for e in report.errors] == [("prometheus", "parse", 2)]
    assert report.errors[0].message.startswith("answer cut: over the 64 MiB limit")
