"""The fleet source against recorded Prometheus answers (samples/prometheus/), a scripted API,
and a local HTTP server that misbehaves (errors, slowness, garbage, nothing listening)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gpusat_tui.analysis.fleet import FleetTracker, lagging_hosts
from gpusat_tui.commands.export_metrics import ExportState
from gpusat_tui.errors import GpusatError
from gpusat_tui.model import Assessment, CardReading, Frame, Verdict
from gpusat_tui.sources.fleet_view.fleet import FleetSource, build_fleet
from gpusat_tui.sources.fleet_view.fleet_answers import (
    RemoteVerdict,
    clean_label,
    frame_from_answer,
    history_frames,
    history_selector,
    instant_query,
)
from gpusat_tui.sources.fleet_view.prometheus_api import (
    FleetError,
    PrometheusAPI,
    decode_answer,
    parse_matcher,
)
from tests.prom.exposition import exposed_samples
from tests.prom.server import free_port

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "prometheus"


def sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


# --- answers ----------------------------------------------------------------------------------


def test_recorded_instant_answer_gives_every_host_x_card_with_unique_ids() -> None:
    answer = frame_from_answer(decode_answer(sample("instant.json")))
    ids = [c.id for c in answer.cards.values()]
    assert ids == ["node-a/nvidia:0", "node-a/nvidia:1", "node-b/nvidia:0", "node-b/nvidia:1"]
    for card in answer.cards.values():
        assert card.host in ("node-a", "node-b") and card.name == "NVIDIA H100 80GB HBM3"
        assert card.mem_total_mib == 81920.0 and card.power_cap_w == 400.0
        assert card.stale_s is None and card.tool == "prometheus"
        if card.host == "node-a":  # the saturated scenario's ranges (tests/prom/hosts.py)
            assert 96 <= card.util_pct <= 100 and 0.82 * 400 <= card.power_w <= 0.90 * 400  # type: ignore[operator]
            assert card.mem_pct == pytest.approx(71.0, abs=0.01)
        else:
            assert 0.25 * 400 <= card.power_w <= 0.40 * 400  # type: ignore[operator]
            assert card.mem_pct == pytest.approx(60.0, abs=0.01)
    assert answer.verdicts == {
        "node-a/nvidia:0": RemoteVerdict("saturated"),
        "node-a/nvidia:1": RemoteVerdict("saturated"),
        "node-b/nvidia:0": RemoteVerdict("starving", "unknown"),
        "node-b/nvidia:1": RemoteVerdict("starving", "unknown"),
    }
    assert answer.job_verdicts == {
        "node-a": RemoteVerdict("saturated"), "node-b": RemoteVerdict("starving", "unknown")
    }
    # The busy share from the counters: every poll of the node counted, not one per scrape.
    assert set(answer.busy) == set(ids)
    assert all(0.9 <= answer.busy[f"node-a/nvidia:{i}"] <= 1.05 for i in (0, 1))
    assert all(answer.busy[f"node-b/nvidia:{i}"] < 0.7 for i in (0, 1))


def test_single_host_ids_are_unchanged() -> None:
    assert CardReading(vendor="amd", index=3).id == "amd:3"
    assert CardReading(vendor="amd", index=3, host="n1").id == "n1/amd:3"


def test_recorded_range_answer_gives_history_frames_oldest_first() -> None:
    frames = history_frames(decode_answer(sample("range.json")))
    assert len(frames) >= 3
    assert [f.t for f in frames] == sorted(f.t for f in frames)
    last = frames[-1]
    assert {c.id for c in last.cards} == {
        "node-a/nvidia:0", "node-a/nvidia:1", "node-b/nvidia:0", "node-b/nvidia:1"
    }
    for card in last.cards:
        assert card.util_pct is not None and card.mem_pct is not None
        assert card.power_frac is not None and 0.2 < card.power_frac < 0.95


def test_recorded_answer_after_a_host_stopped_has_only_the_other() -> None:
    answer = frame_from_answer(decode_answer(sample("instant_node_b_gone.json")))
    assert {c.host for c in answer.cards.values()} == {"node-a"}


def test_empty_and_error_answers() -> None:
    empty = frame_from_answer(decode_answer(sample("empty.json")))
    assert empty.cards == {} and empty.verdicts == {}
    with pytest.raises(FleetError) as info:
        decode_answer(sample("bad_query.json"))
    assert info.value.kind == "query" and "unclosed left parenthesis" in str(info.value)
    for body, kind in ((b"<html>502</html>", "parse"), (b'{"status": "success"}', "parse"),
                       (b'{"data": []}', "parse"), (b"", "parse")):
        with pytest.raises(FleetError) as info:
            decode_answer(body)
        assert info.value.kind == kind


def test_odd_series_are_skipped_and_labels_cleaned() -> None:
    series = [
        {"metric": {"__name__": "gpusat_card_utilization_ratio", "host": "h\x1b[31mx",
                    "vendor": "nvidia", "index": "0", "name": "\x1b]0;pwned\x07GPU"},
         "value": [1.0, "0.5"]},
        {"metric": {"__name__": "gpusat_card_power_watts", "host": "h\x1b[31mx",
                    "vendor": "nvidia", "index": "0"}, "value": [1.0, "NaN"]},
        {"metric": {"__name__": "gpusat_card_utilization_ratio", "vendor": "voodoo",
                    "index": "0", "instance": "10.0.0.9:9478"}, "value": [1.0, "0.5"]},
        {"metric": {"__name__": "gpusat_card_utilization_ratio", "vendor": "amd",
                    "index": "x"}, "value": [1.0, "0.5"]},
        {"metric": {"__name__": "gpusat_card_utilization_ratio", "vendor": "amd", "index": "2",
                    "instance": "10.0.0.9:9478"}, "value": [1.0, "+Inf"]},
        {"metric": "not a dict", "value": [1.0, "1"]},
        {"metric": {"__name__": "gpusat_card_power_watts"}, "value": "oops"},
        "garbage",
    ]
    answer = frame_from_answer({"resultType": "vector", "result": series})
    cards = list(answer.cards.values())
    assert [c.id for c in cards] == ["10.0.0.9:9478/amd:2", "hx/nvidia:0"]  # ESC[31m gone whole
    assert cards[0].util_pct is None  # +Inf is no figure
    assert cards[1].util_pct == 50.0 and cards[1].power_w is None
    assert cards[1].name is not None and "\x1b" not in cards[1].name and "\x07" not in cards[1].name
    assert any("voodoo" in n for n in answer.notes)
    assert clean_label("x" * 200).endswith("…") and len(clean_label("x" * 200)) == 64


def _exposed_as_answer(frame: Frame, assessment: Assessment) -> dict[str, Any]:
    """One exporter poll, through the real text exposition, as an instant query's answer."""
    state = ExportState(host="node-m")
    state.update(frame, assessment)
    result = [
        {"metric": {"__name__": sample.name, **sample.labels},
         "value": [frame.t, str(sample.value)]}
        for sample in exposed_samples(state)
    ]
    return {"resultType": "vector", "result": result}


def test_mig_instances_of_one_card_stay_apart_through_the_exporter() -> None:
    """Two MIG instances share their card's index: the fleet view tells them apart by the
    exporter's ``card`` label, figures and verdicts alike (they were one card before)."""
    cards = [
        CardReading(vendor="nvidia", index=0, instance="mig1", util_pct=90.0, power_w=100.0,
                    mem_used_mib=9000.0, mem_total_mib=10000.0),
        CardReading(vendor="nvidia", index=0, instance="mig2", util_pct=10.0, power_w=100.0,
                    mem_used_mib=1000.0, mem_total_mib=10000.0),
        CardReading(vendor="nvidia", index=1, util_pct=55.0),
    ]
    verdicts = {"nvidia:0/mig1": Verdict(kind="saturated"),
                "nvidia:0/mig2": Verdict(kind="starving", cause="input-bound"),
                "nvidia:1": Verdict(kind="idle")}
    answer = frame_from_answer(_exposed_as_answer(
        Frame(t=100.0, seq=1, cards=cards), Assessment(cards=verdicts, job=Verdict())
    ))
    by_id = {c.id: c for c in answer.cards.values()}
    assert sorted(by_id) == ["node-m/nvidia:0/mig1", "node-m/nvidia:0/mig2", "node-m/nvidia:1"]
    assert by_id["node-m/nvidia:0/mig1"].util_pct == pytest.approx(90.0)
    assert by_id["node-m/nvidia:0/mig2"].util_pct == pytest.approx(10.0)
    assert by_id["node-m/nvidia:0/mig2"].mem_used_mib == pytest.approx(1000.0)
    assert by_id["node-m/nvidia:0/mig1"].instance == "mig1"
    assert by_id["node-m/nvidia:1"].instance is None
    assert answer.verdicts == {
        "node-m/nvidia:0/mig1": RemoteVerdict("saturated"),
        "node-m/nvidia:0/mig2": RemoteVerdict("starving", "input-bound"),
        "node-m/nvidia:1": RemoteVerdict("idle"),
    }


def test_a_card_label_that_is_no_card_id_is_skipped_with_a_note() -> None:
    def series(card: str | None) -> dict[str, Any]:
        labels = {"__name__": "gpusat_card_utilization_ratio", "host": "h", "vendor": "nvidia",
                  "index": "0"}
        if card is not None:
            labels["card"] = card
        return {"metric": labels, "value": [1.0, "0.5"]}

    answer = frame_from_answer({"result": [
        series("nvidia:0/\x1b[31mmig"), series("nvidia:0/a/b"), series("nvidia:0/"),
    ]})
    assert answer.cards == {}
    assert len(answer.notes) == 3 and all("not vendor:index/instance" in n for n in answer.notes)
    assert "\x1b" not in " ".join(answer.notes)
    # No card label (an exporter before the label) or a whole card's: the whole card.
    for card in (None, "nvidia:0", "other/nvidia:0"):
        ids = [c.id for c in frame_from_answer({"result": [series(card)]}).cards.values()]
        assert ids == ["h/nvidia:0"], card


def test_matchers_are_parsed_and_quoted() -> None:
    assert parse_matcher("job=train") == 'job="train"'
    assert parse_matcher("host=~node-(1|2)") == 'host=~"node-(1|2)"'
    assert parse_matcher('job!=a"b') == 'job!="a\\"b"'
    for bad in ("job", "=x", "9job=x", "__name__=up", "job==x x"):
        if bad == "job==x x":
            assert parse_matcher(bad) == 'job="=x x"'  # the value is opaque, quoted whole
            continue
        with pytest.raises(ValueError):
            parse_matcher(bad)
    query = instant_query(['job="train"'])
    assert query.count('job="train"') == 6  # figures, 2 verdicts, busy, 2 job series
    with pytest.raises(GpusatError):
        build_fleet("http://prom:9090", ["nojob"])
    with pytest.raises(GpusatError):
        build_fleet("prom:9090")


# --- the source over a scripted API --------------------------------------------------------


class ScriptedAPI:
    """Answers `get` from a list: a dict is a result, an exception is raised."""

    base_url = "http://prom.test:9090"

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, dict[str, str]]] = []

    def get(self, endpoint: str, params: dict[str, str]) -> Any:
        self.calls.append((endpoint, dict(params)))
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer


class Clock:
    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def loaded(name: str) -> Any:
    return decode_answer(sample(name))


async def test_source_carries_cards_stale_when_the_server_fails_then_recovers() -> None:
    clock = Clock()
    api = ScriptedAPI(
        loaded("instant.json"),
        FleetError("cannot reach http://prom.test:9090: [Errno 111] Connection refused",
                   "unreachable"),
        FleetError("no answer within 2 s", "timeout"),
        loaded("instant.json"),
    )
    source = FleetSource("http://prom.test:9090", api=api, clock=clock, history=False)  # type: ignore[arg-type]
    first = await source.poll_once()
    assert len(first.cards) == 4 and not first.errors
    assert "2 hosts" in source.label
    clock.t += 5
    down = await source.poll_once()
    assert [c.stale_s for c in down.cards] == [5.0] * 4
    assert [(e.tool, e.kind) for e in down.errors] == [("prometheus", "unreachable")]
    assert source.label == "fleet prom.test:9090 · 2 hosts · server unreachable"
    clock.t += 2
    slow = await source.poll_once()
    assert [(e.tool, e.kind) for e in slow.errors] == [("prometheus", "timeout")]
    assert all(c.stale_s == 7.0 for c in slow.cards)
    clock.t += 1
    back = await source.poll_once()
    assert not back.errors and all(c.stale_s is None for c in back.cards)
    assert source.label == "fleet prom.test:9090 · 2 hosts"
    assert [f.seq for f in (first, down, slow, back)] == [0, 1, 2, 3]


async def test_an_unforeseen_failure_is_a_parse_error_not_a_crash() -> None:
    source = FleetSource("http://p:1", api=ScriptedAPI(RuntimeError("odd")), history=False)  # type: ignore[arg-type]
    frame = await source.poll_once()
    assert [(e.kind, e.message) for e in frame.errors] == [
        ("parse", "unreadable answer: RuntimeError: odd")
    ]


async def test_a_host_that_stops_reporting_goes_stale_then_is_dropped() -> None:
    clock = Clock()
    api = ScriptedAPI(loaded("instant.json"), loaded("instant_node_b_gone.json"))
    source = FleetSource("http://p:1", api=api, clock=clock, history=False, forget_s=60)  # type: ignore[arg-type]
    await source.poll_once()
    clock.t += 3
    frame = await source.poll_once()
    stale = {c.id: c.stale_s for c in frame.cards if c.stale_s is not None}
    assert stale == {"node-b/nvidia:0": 3.0, "node-b/nvidia:1": 3.0}
    assert [(e.tool, e.kind) for e in frame.errors] == [("node-b", "stale")]
    assert "no figures for 3 s" in frame.errors[0].message
    assert "node-b/nvidia:0" not in source.verdicts  # its verdict is gone with its series
    clock.t += 60
    frame = await source.poll_once()
    assert {c.host for c in frame.cards} == {"node-a"}
    assert any("node-b" in n and "dropped" in n for n in frame.notes)
    assert not frame.errors


async def test_empty_answer_says_what_to_check() -> None:
    api = ScriptedAPI(loaded("empty.json"))
    source = FleetSource("http://p:1", ["job=train"], api=api, history=False)  # type: ignore[arg-type]
    frame = await source.poll_once()
    assert frame.cards == [] and not frame.errors
    assert any('job="train"' in n and "gpusat-tui export" in n for n in frame.notes)
    assert 'job="train"' in api.calls[0][1]["query"]


async def test_frames_start_with_the_history_then_poll() -> None:
    # The first poll is asked first (it says which cards the list opens on), yielded after
    # the history of those cards.
    api = ScriptedAPI(loaded("instant.json"), loaded("range.json"), loaded("instant.json"))
    source = FleetSource("http://p:1", api=api, interval=0.01)  # type: ignore[arg-type]
    got: list[Frame] = []
    async for frame in source.frames():
        got.append(frame)
        if len(got) >= 8:
            break
    await source.aclose()
    assert [c[0] for c in api.calls[:2]] == ["query", "query_range"]
    history = len(history_frames(loaded("range.json")))
    assert [f.seq for f in got] == list(range(8))
    assert got[history].t > got[history - 1].t  # live polls follow the history in time
    assert len(got[history].cards) == 4
    step = api.calls[1][1]
    assert float(step["end"]) - float(step["start"]) == pytest.approx(119 * 1.0)
    # Only the hosts the list opens on: node-b starves, so it comes first; both fit.
    assert 'host=~"node\\\\-b|node\\\\-a"' in step["query"]
    assert 'instance=~"node\\\\-b|node\\\\-a"' in step["query"]


def test_the_history_asks_for_the_hosts_of_the_rows_shown_first_not_the_fleet() -> None:
    cards = [CardReading(vendor="nvidia", index=i, host=f"gpu-{h:03d}", util_pct=90.0)
             for h in range(200) for i in range(8)]
    kinds = {c.id: "saturated" for c in cards}
    for i in range(8):
        kinds[f"gpu-150/nvidia:{i}"] = "starving"
    query = history_selector(Frame(t=1.0, cards=cards), kinds, ['job="train"'], cards=16)
    # The starving host first, then the first healthy host: 2 hosts of 200.
    assert query == (
        '{__name__=~"gpusat_card_utilization_ratio|gpusat_card_memory_used_ratio|'
        'gpusat_card_power_watts|gpusat_card_power_limit_watts", job="train", '
        'host=~"gpu\\\\-150|gpu\\\\-000"} or '
        '{__name__=~"gpusat_card_utilization_ratio|gpusat_card_memory_used_ratio|'
        'gpusat_card_power_watts|gpusat_card_power_limit_watts", job="train", '
        'instance=~"gpu\\\\-150|gpu\\\\-000"}'
    )


async def test_history_failure_is_not_fatal() -> None:
    api = ScriptedAPI(loaded("instant.json"), FleetError("boom", "http"),
                      loaded("instant.json"))
    source = FleetSource("http://p:1", api=api, interval=0.01)  # type: ignore[arg-type]
    async for frame in source.frames():
        assert len(frame.cards) == 4
        assert [e.message for e in frame.errors] == [
            "start-up history: boom; the charts start empty"]
        break
    await source.aclose()


# --- the HTTP client against a misbehaving server ------------------------------------------


class Handler(BaseHTTPRequestHandler):
    mode = "ok"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        mode = type(self).mode
        if mode == "slow":
            time.sleep(1.5)
        status, body = 200, sample("instant.json")
        if mode == "bad":
            status, body = 400, sample("bad_query.json")
        elif mode == "html":
            body = b"<html>hello</html>"
        elif mode == "503":
            status, body = 503, b"Service Unavailable"
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up (timeout test)


@pytest.fixture
def server() -> Iterator[tuple[str, type[Handler]]]:
    handler = type("H", (Handler,), {"mode": "ok"})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_http_client_answers_and_errors(server: tuple[str, type[Handler]]) -> None:
    url, handler = server
    api = PrometheusAPI(url + "/", timeout=0.5)
    assert len(api.get("query", {"query": "up"})["result"]) > 0
    cases = {"bad": "query", "html": "parse", "503": "http", "slow": "timeout"}
    for mode, kind in cases.items():
        handler.mode = mode
        with pytest.raises(FleetError) as info:
            api.get("query", {"query": "up"})
        assert info.value.kind == kind, (mode, info.value)
    handler.mode = "bad"
    with pytest.raises(FleetError, match="bad_data: invalid parameter"):
        api.get("query", {"query": "sum("})


def test_http_client_nothing_listening() -> None:
    api = PrometheusAPI(f"http://127.0.0.1:{free_port()}", timeout=1.0)
    with pytest.raises(FleetError) as info:
        api.get("query", {"query": "up"})
    assert info.value.kind == "unreachable" and "cannot reach" in str(info.value)


async def test_a_slow_server_never_blocks_the_event_loop(server: tuple[str, type[Handler]]) -> None:
    url, handler = server
    handler.mode = "slow"
    source = FleetSource(url, timeout=0.3, history=False)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    frame = await source.poll_once()
    task.cancel()
    assert [(e.tool, e.kind) for e in frame.errors] == [("prometheus", "timeout")]
    assert ticks >= 10  # the loop kept running while the request waited


# --- verdicts across hosts -----------------------------------------------------------------


def fleet_card(host: str, index: int, util: float, stale: float | None = None) -> CardReading:
    return CardReading(vendor="nvidia", index=index, host=host, util_pct=util, power_w=200.0,
                       power_cap_w=400.0, mem_used_mib=1000.0, mem_total_mib=2000.0,
                       stale_s=stale)


def test_lagging_hosts() -> None:
    assert lagging_hosts({"a": 95, "b": 96, "c": 20}) == (["c"], 95.5)
    assert lagging_hosts({"a": 95, "b": 90}) is None
    assert lagging_hosts({"a": 95}) is None
    assert lagging_hosts({"a": 10, "b": 12}) is None


def test_fleet_tracker_uses_the_exporters_verdicts_and_names_the_lagging_host() -> None:
    verdicts = {f"{h}/nvidia:{i}": RemoteVerdict("saturated") for h in "ac" for i in (0, 1)}
    verdicts |= {f"b/nvidia:{i}": RemoteVerdict("starving", "input-bound") for i in (0, 1)}
    tracker = FleetTracker(lambda: verdicts, lambda: {})
    for t in range(5):
        cards = [fleet_card(h, i, 97.0 if h != "b" else 5.0 + t) for h in "abc" for i in (0, 1)]
        assessment = tracker.push(Frame(t=float(t), cards=cards))
    assert assessment.cards["b/nvidia:0"].kind == "starving"
    assert assessment.cards["b/nvidia:0"].cause == "input-bound"
    assert "exporter on b" in assessment.cards["b/nvidia:0"].why[0]
    assert assessment.job.kind == "imbalanced" and assessment.job.cause == "straggler"
    assert assessment.job.why[0].startswith("lagging host: b at 7 %")
    assert "other 2 hosts run at 97 %" in assessment.job.why[0]


def test_fleet_tracker_compares_hosts_on_the_counters_where_every_card_has_one() -> None:
    verdicts = {f"{h}/nvidia:0": RemoteVerdict("starving") for h in "ab"}
    # The gauges (one sample per scrape) alias b's bursts into "busy"; the counters do not.
    busy = {"a/nvidia:0": 0.97, "b/nvidia:0": 0.30}
    tracker = FleetTracker(lambda: verdicts, lambda: {}, busy=lambda: busy)
    frame = Frame(t=0.0, cards=[fleet_card("a", 0, 97), fleet_card("b", 0, 95)])
    job = tracker.push(frame).job
    assert job.kind == "imbalanced"
    assert job.why[0].startswith("lagging host: b at 30 %")
    assert "from the counters" in job.why[0]
    del busy["b/nvidia:0"]  # one card without a counter rate yet: the gauges decide, all of them
    assert tracker.push(frame.model_copy(update={"t": 1.0})).job.kind == "starving"


def test_fleet_tracker_even_hosts_stale_cards_and_inner_stragglers() -> None:
    verdicts = {f"{h}/nvidia:0": RemoteVerdict("saturated") for h in "ab"}
    jobs = {"a": RemoteVerdict("imbalanced", "straggler"), "b": RemoteVerdict("saturated")}
    tracker = FleetTracker(lambda: verdicts, lambda: jobs)
    assessment = tracker.push(Frame(t=0.0, cards=[fleet_card("a", 0, 95), fleet_card("b", 0, 94)]))
    assert assessment.job.kind == "imbalanced"
    assert "a card lags within a" in assessment.job.why
    jobs["a"] = RemoteVerdict("saturated")
    assessment = tracker.push(
        Frame(t=1.0, cards=[fleet_card("a", 0, 95), fleet_card("b", 0, 94, stale=12.0)])
    )
    assert assessment.job.kind == "saturated"
    assert assessment.cards["b/nvidia:0"].kind == "unknown"
    assert "no fresh figures from b for 12 s" in assessment.cards["b/nvidia:0"].why[0]
    assert "last verdict there: saturated" in assessment.cards["b/nvidia:0"].why[0]
    assert tracker.explain("a/nvidia:0") == assessment.cards["a/nvidia:0"]
    empty = tracker.push(Frame(t=2.0))
    assert empty.job.kind == "unknown"


def test_64_hosts_x_8_cards_make_one_frame_with_512_unique_cards() -> None:
    result = []
    for h in range(64):
        for i in range(8):
            labels = {"host": f"node-{h:02d}", "vendor": "nvidia", "index": str(i)}
            result.append({"metric": {"__name__": "gpusat_card_utilization_ratio", **labels},
                           "value": [1.0, "0.9"]})
            result.append({"metric": {"__name__": "gpusat_card_verdict", "kind": "saturated",
                                      "cause": "", **labels}, "value": [1.0, "1"]})
    answer = frame_from_answer(decode_answer(json.dumps(
        {"status": "success", "data": {"resultType": "vector", "result": result}}
    ).encode()))
    assert len({c.id for c in answer.cards.values()}) == 512
    assert len(answer.verdicts) == 512


def test_check_on_an_unreachable_server_reports_it_and_exits_0() -> None:
    import subprocess
    import sys

    from tests.prom.hosts import REPO

    result = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--prometheus",
         f"http://127.0.0.1:{free_port()}", "--duration", "1", "--interval", "0.5", "--json"],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["cards"] == [] and report["verdict"] == "unknown"
    assert [(e["tool"], e["kind"]) for e in report["errors"]] == [("prometheus", "unreachable")]
    assert report["errors"][0]["count"] == report["samples"] >= 1
    bad = subprocess.run(
        [sys.executable, "-m", "gpusat_tui", "check", "--prometheus", "http://p:9090",
         "--match", "nojob"], capture_output=True, text=True, timeout=60, cwd=REPO,
    )
    assert bad.returncode == 2 and "--match expects LABEL=VALUE" in bad.stderr
