"""Labels from Prometheus reach the screen only through the sanitiser, and a host label cannot
make a card id ambiguous: the recorded answer (samples/prometheus/instant.json) with hostile
labels, read as data and served by a real local HTTP server to ``check --prometheus``."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.analysis.fleet import FleetTracker
from gpusat_tui.model import CardReading, host_in_id
from gpusat_tui.sources.fleet_view.fleet import FleetSource
from gpusat_tui.sources.fleet_view.fleet_answers import (
    RemoteVerdict,
    clean_label,
    frame_from_answer,
)
from gpusat_tui.sources.fleet_view.prometheus_api import decode_answer
from tests.prom.hosts import REPO

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "prometheus" / "instant.json"

#: node-a's labels, rewritten: what a hostile (or careless) exporter could publish.
HOSTILE = {
    "host": "\x1b[31mnode-a\x1b[0m",
    "name": "\x1b]0;owned\x07H100 \x9b2J\u202eevil",
    "uuid": "GPU-\x1b[1;31mred",
}


def answer_with(labels_of: dict[str, dict[str, str]]) -> bytes:
    """The recorded answer with the labels of each host (by its recorded name) replaced."""
    doc = json.loads(SAMPLE.read_bytes())
    for series in doc["data"]["result"]:
        metric = series["metric"]
        extra = labels_of.get(metric.get("host", ""))
        if extra:
            metric.update(extra)
    return json.dumps(doc).encode()


def test_an_escape_sequence_in_a_label_is_removed_whole() -> None:
    answer = frame_from_answer(decode_answer(answer_with({
        "node-a": {**HOSTILE, "cause": "\x1b[31minput-bound"}})))
    text = json.dumps([c.model_dump() for c in answer.cards.values()]) + repr(answer.verdicts)
    for leftover in ("\x1b", "\x9b", "[31m", "[0m", "]0;", "[1;31m", "2J", "\u202e"):
        assert leftover not in text, leftover
    hosts = sorted({c.host for c in answer.cards.values()})
    assert hosts == ["node-a", "node-b"]
    card = next(c for c in answer.cards.values() if c.host == "node-a")
    assert card.name == "H100 ?evil" and card.uuid == "GPU-red"
    assert clean_label("a\x1b[31mb\x1b]0;t\x07c") == "abc"
    assert clean_label("  \x1b[31m  ") == ""


def test_a_host_label_with_a_slash_is_quoted_in_card_ids() -> None:
    answer = frame_from_answer(decode_answer(answer_with({
        "node-a": {"host": "ns/pod-a"}, "node-b": {"host": "ns%2Fpod-a"}})))
    ids = sorted(c.id for c in answer.cards.values())
    # Two hosts whose labels would read alike once quoted stay apart; each id splits one way.
    assert ids == ["ns%252Fpod-a/nvidia:0", "ns%252Fpod-a/nvidia:1",
                   "ns%2Fpod-a/nvidia:0", "ns%2Fpod-a/nvidia:1"]
    assert all(i.count("/") == 1 for i in ids)
    assert {c.host for c in answer.cards.values()} == {"ns/pod-a", "ns%2Fpod-a"}  # shown as is
    assert set(answer.verdicts) == set(ids) and set(answer.busy) == set(ids)
    assert any("'ns/pod-a' holds '/'" in n and "ns%2Fpod-a/nvidia:index" in n
               for n in answer.notes)
    # A host-less (single-machine) id is unchanged, and so is a plain host's.
    assert CardReading(vendor="amd", index=1).id == "amd:1"
    assert CardReading(vendor="amd", index=1, host="n1").id == "n1/amd:1"
    assert host_in_id("a/b%c") == "a%2Fb%25c"


class ScriptedAPI:
    base_url = "http://prom.test:9090"

    def __init__(self, body: bytes) -> None:
        self.data = decode_answer(body)

    def get(self, endpoint: str, params: dict[str, str]) -> Any:
        return self.data


async def test_the_fleet_verdict_of_a_quoted_host_reaches_its_card() -> None:
    api = ScriptedAPI(answer_with({"node-a": {"host": "ns/pod-a"}}))
    source = FleetSource("http://prom.test:9090", api=api, history=False)  # type: ignore[arg-type]
    tracker = FleetTracker(lambda: source.verdicts, lambda: source.job_verdicts,
                           busy=lambda: source.busy)
    assessment = tracker.push(await source.poll_once())
    assert assessment.cards["ns%2Fpod-a/nvidia:0"].kind == "saturated"
    assert source.verdicts["ns%2Fpod-a/nvidia:0"] == RemoteVerdict("saturated")


@pytest.fixture
def hostile_prometheus() -> Iterator[str]:
    body = answer_with({"node-a": HOSTILE, "node-b": {"host": "rack/\x1b[31mnode-b"}})

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_check_prints_hostile_labels_without_their_escapes(hostile_prometheus: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--prometheus", hostile_prometheus,
         "--duration", "1", "--interval", "0.5"],
        capture_output=True, text=True, timeout=90, cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for leftover in ("\x1b", "\x9b", "[31m", "[0m", "]0;", "\x07"):
        assert leftover not in out, (leftover, out)
    assert "node-a/nvidia:0" in out and "rack%2Fnode-b/nvidia:0" in out
